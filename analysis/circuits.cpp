#include "analysis/circuits.h"

#include "core/model/model.h"
#include "core/model/stacks.h"
#include "core/model/transformer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace headlab::analysis {
namespace {

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64); }

// A norm's γ folded into the rows of a reading matrix W [D, n]; centred along D after a LayerNorm.
torch::Tensor fold(const torch::Tensor& W, const core::Norm& norm, const core::ModelConfig& c) {
  if (!norm) return W;
  auto gamma = f64(norm->weight) + double(c.norm_weight_offset);  // [D]
  auto folded = W * gamma.unsqueeze(1);
  return c.norm == core::NormKind::LayerNorm ? folded - folded.mean(0, true) : folded;
}

}  // namespace

OvCircuits ov_circuits(core::Model& model) {
  const auto& c = model.config;
  auto& m = *model.module;
  OvCircuits out;
  const core::Stack stack = c.decoder ? core::Stack::Decoder : core::Stack::Encoder;
  if (c.kind == core::StackKind::EncoderDecoder)
    out.notes.push_back("OV circuits: an encoder-decoder's encoder and cross-attention heads reach the LM head only "
                        "through other heads; the decoder's self-attention heads are scored");
  // W_E [V, D]: the token embeddings as stored, through the projection of factorised embeddings.
  auto WE = f64(m.tokens->weight);
  if (m.embed_project) WE = torch::matmul(WE, f64(m.embed_project->weight).t());
  // W_U [D, V]: the decoder matrix (tied: the token embeddings; without a transform through the projection).
  torch::Tensor WU = c.lm_head.tied ? f64(m.tokens->weight) : f64(m.head_weight);  // [V, E or D]
  if (c.lm_head.tied && !c.lm_head.transform && m.embed_project) WU = torch::matmul(WU, f64(m.embed_project->weight).t());
  if (WU.size(1) != c.hidden_size) {
    out.notes.push_back("OV circuits: the LM head reads a " + std::to_string(WU.size(1)) +
                        "-wide embedding space through its transform, not the model's " +
                        std::to_string(c.hidden_size) + "-wide stream: no head's output reaches W_U directly");
    return out;
  }
  WU = WU.t();
  if (c.lm_head.transform)
    out.notes.push_back("OV circuits: W_U is the LM head's decoder matrix; its transform (dense, activation, norm) is "
                        "left out, as TransformerLens leaves it out");
  const bool pre = c.norm_placement == core::NormPlacement::Pre;
  if (pre) WU = fold(WU, stack == core::Stack::Encoder ? m.encoder_final_norm : m.decoder_final_norm, c);
  else
    out.notes.push_back("OV circuits: post-LN norms sit after the residual sums, not before the heads: nothing is "
                        "folded");
  if (c.sublayer_output_norm)
    out.notes.push_back("OV circuits: the norm after each attention output scales W_O by its γ; its RMS "
                        "denominator depends on the input and is left out");
  const auto G = torch::matmul(WU, WE);  // [D, D]: W_U W_E, shared by every head
  const auto& s = core::layers_config(c, stack);
  for (int l = 0; l < s.layers; ++l) {
    auto block = m.block(stack, l);
    const auto& a = block->attn->config();
    const int64_t dv = a.value_size, Ho = a.output_heads(), stored = a.value_heads_stored();
    const auto V = f64(block->attn->v->weight).t();  // [D, stored · d_v]
    const auto O = f64(block->attn->o->weight).t();  // [Ho · d_v, D]
    for (int64_t h = 0; h < Ho; ++h) {
      const int64_t kv = h / (Ho / stored);  // GQA/MQA: the query head's shared value head
      auto WV = V.narrow(1, kv * dv, dv);    // [D, d_v]
      if (pre) WV = fold(WV, block->attn_norm, c);
      auto WO = O.narrow(0, h * dv, dv);  // [d_v, D]
      if (c.sublayer_output_norm && block->attn_out_norm)
        WO = WO * (f64(block->attn_out_norm->weight) + double(c.norm_weight_offset));
      // The cyclic product W_O W_U W_E W_V [d_v, d_v] has the nonzero eigenvalues of W_E W_V W_O W_U.
      const auto cyclic = torch::matmul(torch::matmul(WO, G), WV);
      const auto eig = torch::linalg::eigvals(cyclic).contiguous();  // complex128 [d_v]
      OvCircuit circuit;
      circuit.stack = stack;
      circuit.layer = l;
      circuit.head = static_cast<int>(h);
      const auto* z = eig.data_ptr<c10::complex<double>>();
      double re = 0, magnitude = 0;
      for (int64_t i = 0; i < eig.size(0); ++i) {
        circuit.eigenvalues.emplace_back(z[i].real(), z[i].imag());
        re += z[i].real();
        magnitude += std::abs(circuit.eigenvalues.back());
      }
      std::sort(circuit.eigenvalues.begin(), circuit.eigenvalues.end(),
                [](const auto& x, const auto& y) { return std::abs(x) > std::abs(y); });
      if (magnitude > 0) circuit.copying = re / magnitude;
      out.heads.push_back(std::move(circuit));
    }
  }
  return out;
}

}  // namespace headlab::analysis
