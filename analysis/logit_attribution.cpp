#include "analysis/logit_attribution.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/transformer.h"

#include <torch/torch.h>

#include <stdexcept>

namespace headlab::analysis {
namespace {

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64); }

}  // namespace

LogitAttribution logit_attribution(core::Model& model, const core::Trace& trace, int64_t position, int64_t answer,
                                   int64_t wrong, int top) {
  const auto& c = model.config;
  auto& m = *model.module;
  auto refuse = [](const std::string& why) { throw std::invalid_argument("direct logit attribution: " + why); };
  if (c.kind == core::StackKind::EncoderDecoder) refuse("runs a decoder-only or encoder-only model, not an encoder-decoder");
  if (c.norm_placement == core::NormPlacement::Post)
    refuse("this model is post-LN: a norm after every layer makes the final stream no sum of the components");
  if (c.sublayer_output_norm) refuse("this model normalises each sublayer's output: its terms are not linear in it");
  if (c.lm_head.transform) refuse("the LM head's transform (dense, activation, norm) is not linear");
  const auto& stack = trace.main_stack();
  const int64_t T = stack.hidden.empty() ? 0 : stack.hidden[0].size(0);
  if (stack.hidden.empty() || stack.layers.empty() || !stack.layers[0].self.gated_outputs.defined())
    throw std::logic_error("logit_attribution: the run did not capture the residual stream and head outputs");
  if (position < 0 || position >= T)
    refuse("position " + std::to_string(position) + " is outside the input (0.." + std::to_string(T - 1) + ")");
  for (int64_t id : {answer, wrong})
    if (id >= c.vocab_size || id < (id == answer ? 0 : -1))
      refuse("token " + std::to_string(id) + " is outside the vocabulary (size " + std::to_string(c.vocab_size) + ")");
  const core::Stack s = trace.decoder.empty() ? core::Stack::Encoder : core::Stack::Decoder;
  LogitAttribution out;
  out.position = position;
  out.answer = answer;
  out.wrong = wrong;
  // The direction u [D] the logit difference reads from the normalised stream.
  // Only the answer's and the wrong token's rows leave the (possibly mapped or card) table.
  const auto& table = c.lm_head.tied ? m.tokens->weight : m.head_weight;  // [V, E or D]
  auto W = f64(table.narrow(0, answer, 1));                                // [1, E or D]
  if (wrong >= 0) W = torch::cat({W, f64(table.narrow(0, wrong, 1))});     // [2, E or D]
  if (c.lm_head.tied && m.embed_project) W = torch::matmul(W, f64(m.embed_project->weight).t());
  auto u = W[0].clone();
  if (wrong >= 0) u = u - W[1];
  u = u * double(c.lm_head.input_scale);
  // The final norm as apply_ln_to_stack applies it to one term x: (x − mean x) / σ · γ (LayerNorm),
  // x / rms · γ (RMSNorm), with σ or rms from the whole stream of this run.
  const auto final_stream = f64(stack.hidden.back()[position]);  // [D]
  core::Norm& norm = s == core::Stack::Encoder ? m.encoder_final_norm : m.decoder_final_norm;
  torch::Tensor gamma = torch::ones({c.hidden_size}, torch::kFloat64);
  const bool layer_norm = norm && c.norm == core::NormKind::LayerNorm;
  if (norm) {
    gamma = f64(norm->weight) + double(c.norm_weight_offset);
    const double eps = c.norm_eps;
    out.scale = layer_norm ? std::sqrt((final_stream - final_stream.mean()).pow(2).mean().item<double>() + eps)
                           : std::sqrt(final_stream.pow(2).mean().item<double>() + eps);
  }
  auto share = [&](const torch::Tensor& x) {  // x [..., D] → [...]
    auto centred = layer_norm ? x - x.mean(-1, true) : x;
    return torch::matmul(centred / out.scale * gamma, u);
  };
  out.embed = share(f64(stack.hidden[0][position])).item<double>();
  double sum = out.embed;
  for (size_t l = 0; l < stack.layers.size(); ++l) {
    auto block = m.block(s, static_cast<int>(l));
    const auto& a = block->attn->config();
    const int64_t hv = a.output_heads(), dv = a.value_size;
    const auto O = f64(stack.layers[l].self.gated_outputs.select(1, position));  // [h_v, d_v]
    const auto WO = f64(block->attn->o->weight).t().reshape({hv, dv, -1});      // [h_v, d_v, D]
    const auto terms = torch::matmul(O.unsqueeze(1), WO).squeeze(1);             // [h_v, D]
    const auto heads = share(terms).contiguous();
    out.heads.emplace_back(heads.data_ptr<double>(), heads.data_ptr<double>() + hv);
    sum += heads.sum().item<double>();
    if (block->attn->o->bias.defined()) out.biases += share(f64(block->attn->o->bias)).item<double>();
    if (block->has_ffn()) {
      const auto& mlp = stack.layers[l].mlp_out;
      if (!mlp.defined()) throw std::logic_error("logit_attribution: the run did not capture the FFN outputs");
      out.mlps.push_back(share(f64(mlp[position])).item<double>());
      sum += out.mlps.back();
    }
  }
  sum += out.biases;
  // The run's own value: the logits at the position, as the LM head computed them.
  const auto logits = f64(trace.logit_positions.empty() ? trace.logits[position] : m.head(stack.hidden.back()[position].view({1, 1, -1}), s).reshape({-1}));
  out.value = logits[answer].item<double>() - (wrong >= 0 ? logits[wrong].item<double>() : 0.0);
  out.rest = out.value - sum;
  if (c.lm_head.softcap > 0)
    out.notes.push_back("the LM head soft-caps its logits; the shares add up to the logit difference before the cap");
  if (wrong < 0)
    out.notes.push_back("without a wrong token the shares are of the answer's logit, which every token's shares "
                        "shift alike; a difference of two logits is what DLA is meant for");
  // The logit lens: the stream after each layer through the final norm and the LM head.
  {
    c10::InferenceMode inference;
    for (size_t l = 0; l < stack.hidden.size(); ++l) {
      const auto row = f64(m.head(stack.hidden[l][position].view({1, 1, -1}), s).reshape({-1}));
      LensRow lens;
      lens.layer = static_cast<int>(l);
      lens.value = row[answer].item<double>() - (wrong >= 0 ? row[wrong].item<double>() : 0.0);
      const auto probs = torch::softmax(row, 0);
      const auto best = probs.topk(std::min<int64_t>(top, probs.size(0)));
      for (int64_t k = 0; k < std::get<0>(best).size(0); ++k)
        lens.top.emplace_back(std::get<1>(best)[k].item<int64_t>(), std::get<0>(best)[k].item<double>());
      out.lens.push_back(std::move(lens));
    }
  }
  return out;
}

}  // namespace headlab::analysis
