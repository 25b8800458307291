#include "analysis/circuit_weights.h"

#include "analysis/latent_reading.h"
#include "analysis/spectra.h"

#include "core/model/model.h"
#include "core/model/stacks.h"
#include "core/model/transformer.h"

#include <algorithm>
#include <stdexcept>

namespace headlab::analysis {
namespace {

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64); }

// A norm's γ folded into the rows of reading matrices W [..., D, n]; centred along D after a LayerNorm.
torch::Tensor fold(const torch::Tensor& W, const core::Norm& norm, const core::ModelConfig& c) {
  if (!norm) return W;
  auto gamma = f64(norm->weight) + double(c.norm_weight_offset);  // [D]
  auto folded = W * gamma.unsqueeze(1);
  return c.norm == core::NormKind::LayerNorm ? folded - folded.mean(-2, true) : folded;
}

// Rows [heads · width, D] of a projection's weight as per-head reading matrices [heads, D, width].
torch::Tensor per_head(const torch::Tensor& weight, int64_t heads, int64_t width) {
  return f64(weight).view({heads, width, -1}).transpose(1, 2);
}

}  // namespace

torch::Tensor Factored::frobenius() const {
  const auto GP = torch::matmul(P.transpose(1, 2), P);  // [H, a, a]
  const auto GS = torch::matmul(S.transpose(1, 2), S);  // [H, b, b]
  // tr(GP · M · GS · Mᵀ) = Σ (GP M GS) ∘ M.
  const auto inner = M.defined() ? torch::matmul(torch::matmul(GP, M), GS) * M : GP * GS;
  return inner.sum({1, 2}).clamp_min(0).sqrt();
}

torch::Tensor Factored::dense() const {
  const auto left = M.defined() ? torch::matmul(P, M) : P;
  return torch::matmul(left, S.transpose(1, 2));
}

CircuitWeights circuit_weights(core::Model& model) {
  const auto& c = model.config;
  auto& m = *model.module;
  CircuitWeights out;
  out.stack = c.decoder ? core::Stack::Decoder : core::Stack::Encoder;
  if (c.kind == core::StackKind::EncoderDecoder)
    out.notes.push_back("an encoder-decoder's encoder and cross-attention heads reach the LM head only "
                        "through other heads; the decoder's self-attention heads are scored");
  const bool pre = c.norm_placement == core::NormPlacement::Pre;
  // W_U: the decoder matrix (tied: the token embeddings; without a transform through the projection).
  const torch::Tensor decoder = c.lm_head.tied ? m.tokens->weight : m.head_weight;  // [V, E or D], as stored
  const bool projected_unembed = c.lm_head.tied && !c.lm_head.transform && m.embed_project;
  const int64_t unembed_width = projected_unembed ? m.embed_project->weight.size(0) : decoder.size(1);
  if (unembed_width != c.hidden_size) {
    out.notes.push_back("the LM head reads a " + std::to_string(unembed_width) +
                        "-wide embedding space through its transform, not the model's " +
                        std::to_string(c.hidden_size) + "-wide stream: no head's output reaches W_U directly");
  } else {
    if (c.lm_head.transform)
      out.notes.push_back("W_U is the LM head's decoder matrix; its transform (dense, activation, norm) "
                          "is left out, as TransformerLens leaves it out");
    const auto& final_norm = out.stack == core::Stack::Encoder ? m.encoder_final_norm : m.decoder_final_norm;
    const torch::Tensor project = m.embed_project ? f64(m.embed_project->weight).t() : torch::Tensor();  // [E, D]
    // G = Σ over blocks of 4,096 tokens of W_U[:, block] W_E[block, :]; each block's rows read from the
    // weights as stored (folding acts on each column of W_U alone).
    const int64_t V = decoder.size(0), step = 4096;
    torch::Tensor G = torch::zeros({c.hidden_size, c.hidden_size}, torch::kFloat64);
    for (int64_t r = 0; r < V; r += step) {
      const int64_t n = std::min(step, V - r);
      torch::Tensor WE = f64(m.tokens->weight.narrow(0, r, n));  // [n, E]
      if (project.defined()) WE = torch::matmul(WE, project);     // [n, D]
      torch::Tensor WU = f64(decoder.narrow(0, r, n));             // [n, E or D]
      if (projected_unembed) WU = torch::matmul(WU, project);
      WU = WU.t();  // [D, n]
      if (pre) WU = fold(WU, final_norm, c);
      G.addmm_(WU, WE);
    }
    out.unembed_embed = G;
  }
  if (!pre)
    out.notes.push_back("post-LN norms sit after the residual sums, not before the heads: nothing is "
                        "folded");
  if (c.sublayer_output_norm)
    out.notes.push_back("the norm after each attention output scales W_O by its γ; its RMS denominator "
                        "depends on the input and is left out");
  const auto& s = core::layers_config(c, out.stack);
  if (s.attention.scoring == core::Scoring::Additive)
    out.qk_notes.push_back("additive scoring (v_iᵀ tanh(q + k)) is not bilinear in the residual: heads have "
                        "no QK circuit, so no Q- or K-composition");
  if (s.attention.latent) out.qk_notes.push_back(kLatentNote);
  if (s.attention.disentangled) out.qk_notes.push_back(kDisentangledNote);
  if (s.attention.qk_norm)
    out.qk_notes.push_back("the per-head query and key norms scale W_Q and W_K by their weights; their RMS "
                        "denominators depend on the input and are left out");
  for (int l = 0; l < s.layers; ++l) {
    auto block = m.block(out.stack, l);
    auto& attn = *block->attn;
    const auto& a = attn.config();
    LayerCircuits layer;
    auto reading = [&](const torch::Tensor& W) { return pre ? fold(W, block->attn_norm, c) : W; };
    // OV: W_V of each output head's (shared) value head, W_O's rows of that head.
    const int64_t dv = a.value_size, Ho = a.output_heads(), stored = a.value_heads_stored();
    const LatentReading latent = latent_reading(attn);  // undefined without a latent
    auto V = reading(latent.value.defined() ? latent.value.t().contiguous().view({stored, dv, -1}).transpose(1, 2)
                                            : per_head(attn.v->weight, stored, dv));  // [stored, D, d_v]
    if (stored != Ho) V = V.repeat_interleave(Ho / stored, 0);
    auto O = f64(attn.o->weight).t().reshape({Ho, dv, -1});  // [Ho, d_v, D]
    if (c.sublayer_output_norm && block->attn_out_norm)
      O = O * (f64(block->attn_out_norm->weight) + double(c.norm_weight_offset));
    layer.ov = Factored{V, {}, O.transpose(1, 2).contiguous()};
    if (a.scoring == core::Scoring::Dot) {
      const int64_t dk = a.key_size, H = a.softmax_heads();
      if (latent.query.defined()) {
        // Each head's non-rotated query and key parts through the latent [h, D, d_k − d_R].
        const int64_t dN = dk - a.latent->rope_size;
        auto Q = reading(latent.query.t().contiguous().view({H, dN, -1}).transpose(1, 2));
        auto K = reading(latent.key.t().contiguous().view({H, dN, -1}).transpose(1, 2));
        layer.qk = Factored{Q.contiguous(), {}, K.contiguous()};
      } else if (a.collaborative) {
        // W̃_Q diag(m_h) W̃_Kᵀ: one shared pair of reading matrices, a diagonal per head.
        const int64_t shared = a.collaborative->shared_key_size;
        const auto Q = reading(per_head(attn.q->weight, 1, shared)).expand({H, -1, -1});
        const auto K = reading(per_head(attn.k->weight, 1, shared)).expand({H, -1, -1});
        layer.qk = Factored{Q.contiguous(), torch::diag_embed(f64(attn.mix)), K.contiguous()};
      } else {
        const int64_t hk = a.logit_heads();
        auto Q = reading(per_head(attn.q->weight, hk, dk));             // [h_k, D, d_k]
        auto K = reading(per_head(attn.k->weight, a.kv_heads, dk));     // [kv, D, d_k]
        if (a.qk_norm) {  // the norms' weights: per head [d_k], or each head's slice of the whole projection's
          const auto wq = f64(attn.q_norm) + double(a.qk_norm_weight_offset);
          const auto wk = f64(attn.k_norm) + double(a.qk_norm_weight_offset);
          Q = Q * (a.qk_norm_whole ? wq.view({hk, 1, dk}) : wq);
          K = K * (a.qk_norm_whole ? wk.view({a.kv_heads, 1, dk}) : wk);
        }
        if (a.kv_heads != hk) K = K.repeat_interleave(hk / a.kv_heads, 0);
        if (!a.talking_heads) {
          layer.qk = Factored{Q, {}, K};
        } else {
          // Softmax head j's logits Σ_i P_l[i, j] J_i: every key head's W_Q side by side [D, h_k·d_k],
          // a block-diagonal middle of P_l[i, j] · I_{d_k}, every W_K side by side.
          const auto Qall = Q.permute({1, 0, 2}).reshape({1, Q.size(1), hk * dk}).expand({H, -1, -1});
          const auto Kall = K.permute({1, 0, 2}).reshape({1, K.size(1), hk * dk}).expand({H, -1, -1});
          const auto P = f64(attn.pre_mix);  // [h_k, h]
          auto middle = torch::zeros({H, hk * dk, hk * dk}, torch::kFloat64);
          const auto eye = torch::eye(dk, torch::kFloat64);
          for (int64_t j = 0; j < H; ++j)
            for (int64_t i = 0; i < hk; ++i) middle[j].narrow(0, i * dk, dk).narrow(1, i * dk, dk).copy_(eye * P[i][j]);
          layer.qk = Factored{Qall.contiguous(), middle, Kall.contiguous()};
        }
      }
    }
    out.layers.push_back(std::move(layer));
  }
  return out;
}

}  // namespace headlab::analysis
