// Layer-wise relevance propagation of one logit to heads and input tokens (analysis/LRP.md; Ali et
// al. 2022; Achtibat et al. 2024), head relevance as in Voita et al. 2019 §4, head importance as in
// Michel et al. 2019.
//
// Both analyses run their own forward pass with autograd (core::run is inference-only): the same
// embed → blocks → head sequence as core/model/run.cpp, with the controls applied exactly as run() applies
// them, capturing every attention call's head outputs O_i (and what W_O reads, O_i after the gates).
//
// Where "input" is: the token embedding rows E[id_t], before positions, token types and the
// embedding norm are added. Everything added to the residual stream that is not derived from the
// token embeddings is an additive constant ("bias"): every parameter named *bias (Linear and
// LayerNorm biases, the LM head bias), the learned position tables (the decoder's own too) and token-type tables, the sinusoid
// table, and the replacement (1 − g_i)·mean_i of a head ablated towards a given dataset mean. With
// the LRP rules (attention weights, normalisation denominators and activation ratios held constant;
// SwiGLU's product split in halves) every remaining operation is linear in (input, constants)
// jointly (gates, mixing matrices and the held weights are coefficients), so by Euler's theorem
//   f = Σ_t ⟨x_t, ∂f/∂x_t⟩ + Σ_b ⟨b, ∂f/∂b⟩
// holds exactly; the float residual measures the implementation, not the rules. Without the rules
// (plain gradient × input, gradient_x_input) the identity fails, which the tests show.
#include "analysis/lrp.h"

#include "core/memory_budget.h"
#include "core/model/device.h"

#include "core/model/model.h"
#include "core/model/transformer.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace headlab::analysis {
namespace {

namespace core = headlab::core;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One forward pass with autograd and every attention call's head outputs captured.
struct Forward {
  torch::Tensor tokens;          // encoder (or the only stack's) token embeddings, a leaf [1, T, D]
  torch::Tensor decoder_tokens;  // encoder-decoder: the decoder's token embeddings, a leaf
  std::vector<torch::Tensor> constants;  // additive constants that are not parameters (sinusoid rows), leaves
  std::map<core::Stack, std::vector<core::AttentionStages>> stages;
  torch::Tensor hidden;          // [1, T, D] the main stack's last hidden state
  core::Stack stack = core::Stack::Encoder;  // the main stack (encoder or decoder)
};

void check_ids(const core::ModelConfig& c, const std::vector<int64_t>& ids, const char* what) {
  if (ids.empty()) throw std::invalid_argument(std::string(what) + ": no input ids");
  for (int64_t id : ids)
    if (id < 0 || id >= c.vocab_size)
      throw std::invalid_argument(std::string(what) + ": token id " + std::to_string(id) +
                                  " is outside the vocabulary (size " + std::to_string(c.vocab_size) + ")");
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T > c.max_positions && c.positions != core::PositionKind::Rope && c.positions != core::PositionKind::None)
    throw std::invalid_argument(std::string(what) + ": input has " + std::to_string(T) +
                                " tokens; this model takes at most " + std::to_string(c.max_positions));
}

// TransformerImpl::embed with the token embedding rows as a separate leaf: x = s·E[ids] (the input,
// s the embedding scale) + positions + token types (type 0, as embed() without types), then the
// embedding norm (and projection); `stack` picks the decoder's own table and norm where it has them.
torch::Tensor embed(core::TransformerImpl& m, const std::vector<int64_t>& ids, bool lrp, torch::Tensor& token_leaf,
                    std::vector<torch::Tensor>& constants, core::Stack stack) {
  const int64_t T = static_cast<int64_t>(ids.size());
  auto index = torch::tensor(ids, torch::kLong).view({1, T}).to(m.tokens->weight.device());
  token_leaf = m.tokens(index).detach().requires_grad_(true);
  const auto& config = m.config();
  auto x = config.embedding_scale != 1.0f ? token_leaf * config.embedding_scale : token_leaf;
  if (auto& table = m.position_table(stack)) x = x + table(torch::arange(T, index.options())).unsqueeze(0);
  if (m.sinusoid.defined()) {
    auto rows = m.sinusoid.narrow(0, 0, T).detach().requires_grad_(true);
    constants.push_back(rows);
    x = x + rows.unsqueeze(0);
  }
  if (m.token_types) x = x + m.token_types(torch::zeros_like(index));
  if (auto& norm = m.embedding_norm(stack)) x = norm(x, lrp);
  if (m.embed_project) x = m.embed_project(x);  // factorised embeddings: E → D
  return x;
}

// Layers of one stack as core/model/run.cpp's run_stack runs them.
torch::Tensor run_stack(core::Model& model, core::Stack stack, torch::Tensor h, const torch::Tensor& memory,
                        const core::ModelControls& controls, bool lrp, Forward& out) {
  auto& module = model.module;
  const int layers = module->layer_count(stack);
  core::BlockCall call;
  call.causal = stack == core::Stack::Decoder;
  call.memory = memory;
  call.capture = core::kCaptureHeadOutputs;
  call.rope = module->rope_tables(h.size(1), stack);
  call.lrp = lrp;
  auto& self = out.stages[stack];
  self.resize(layers);
  std::vector<core::AttentionStages>* cross = nullptr;
  if (memory.defined()) {
    cross = &out.stages[core::Stack::Cross];
    cross->resize(layers);
  }
  for (int l = 0; l < layers; ++l) {
    call.self_controls = &controls.get(stack, l);
    call.cross_controls = &controls.get(core::Stack::Cross, l);
    core::AttentionStages cross_stages;
    h = module->block(stack, l)->forward(h, call, &self[l], &cross_stages);
    if (cross) (*cross)[l] = cross_stages;
  }
  return h;
}

Forward forward(core::Model& model, const std::vector<int64_t>& ids, const std::vector<int64_t>& decoder_ids,
                const core::ModelControls& controls, bool lrp) {
  auto& m = *model.module;
  const auto& config = model.config;
  const bool enc_dec = config.kind == core::StackKind::EncoderDecoder;
  Forward out;
  if (m.layer_count(core::Stack::Encoder) > 0) {
    auto memory = run_stack(model, core::Stack::Encoder, embed(m, ids, lrp, out.tokens, out.constants, core::Stack::Encoder), {}, controls, lrp, out);
    if (!enc_dec) {
      out.hidden = memory;
      out.stack = core::Stack::Encoder;
      return out;
    }
    // As run(): the decoder attends to the encoder output after the encoder's final norm.
    if (m.encoder_final_norm) memory = m.encoder_final_norm(memory, lrp);
    out.hidden = run_stack(model, core::Stack::Decoder, embed(m, decoder_ids, lrp, out.decoder_tokens, out.constants, core::Stack::Decoder), memory,
                           controls, lrp, out);
  } else {
    out.hidden = run_stack(model, core::Stack::Decoder, embed(m, ids, lrp, out.tokens, out.constants, core::Stack::Decoder), {}, controls, lrp, out);
  }
  out.stack = core::Stack::Decoder;
  return out;
}

void check_inputs(const core::Model& model, const std::vector<int64_t>& ids, const std::vector<int64_t>& decoder_ids,
                  const char* what) {
  check_ids(model.config, ids, what);
  if (model.config.kind == core::StackKind::EncoderDecoder) {
    if (decoder_ids.empty()) throw std::invalid_argument(std::string(what) + ": an encoder-decoder needs decoder ids");
    check_ids(model.config, decoder_ids, what);
  } else if (!decoder_ids.empty()) {
    throw std::invalid_argument(std::string(what) + ": decoder ids given for a model without a decoder stack");
  }
  // A backward pass keeps every layer's scores and activations: refuse what would not fit.
  core::check_run_memory(core::estimate_run_memory(model.config, static_cast<int64_t>(ids.size()),
                                                   static_cast<int64_t>(decoder_ids.size()), core::kCaptureHeadOutputs, 0,
                                                   /*with_backward=*/true),
                         model, std::string("the ") + what + " pass",
                         static_cast<int64_t>(std::max(ids.size(), decoder_ids.size())));
}

// Per-value-head gates of one layer (missing = 1).
std::vector<double> gates_of(const core::HeadControls& c, int64_t heads) {
  std::vector<double> g(heads, 1.0);
  for (size_t i = 0; i < c.gates.size() && static_cast<int64_t>(i) < heads; ++i) g[i] = c.gates[i];
  return g;
}

// What a closing gate moves head outputs towards: 0 (zero ablation) or the mean output, as
// core/model/attention.cpp computes it; [1, h_v, 1, d_v] (or an undefined tensor for zero ablation).
torch::Tensor ablation_target(const core::HeadControls& c, const torch::Tensor& O) {
  if (c.ablation == core::Ablation::Zero) return {};
  if (!c.mean_outputs.empty())
    return torch::tensor(c.mean_outputs, torch::kFloat32).to(O.options()).view({1, O.size(1), 1, O.size(3)});
  return O.mean(2, /*keepdim=*/true);
}

LrpResult relevance(core::Model& model, const std::vector<int64_t>& ids, const LrpTarget& target,
                    const core::ModelControls& controls, const std::vector<int64_t>& decoder_ids, bool rules) {
  c10::InferenceMode no_inference(false);
  torch::AutoGradMode grad_mode(true);
  check_inputs(model, ids, decoder_ids, "lrp");
  const auto& config = model.config;
  const bool enc_dec = config.kind == core::StackKind::EncoderDecoder;
  const auto& out_ids = enc_dec ? decoder_ids : ids;
  const int64_t T_out = static_cast<int64_t>(out_ids.size());

  LrpResult result;
  // Target position (analysis/LRP.md "Target").
  if (target.position >= 0) {
    if (target.position >= T_out)
      throw std::invalid_argument("lrp: target position " + std::to_string(target.position) + " is outside 0.." +
                                  std::to_string(T_out - 1));
    result.position = target.position;
  } else {
    result.position = T_out - 1;
    if (config.kind == core::StackKind::Encoder && model.tokenizer) {
      if (auto mask = model.tokenizer->mask_id()) {
        for (int64_t t = 0; t < T_out; ++t)
          if (out_ids[t] == *mask) {
            result.position = t;
            break;
          }
      }
    }
  }
  if (target.token >= config.vocab_size)
    throw std::invalid_argument("lrp: target token " + std::to_string(target.token) +
                                " is outside the vocabulary (size " + std::to_string(config.vocab_size) + ")");

  Forward fw = forward(model, ids, decoder_ids, controls, rules);
  auto logits = model.module->head(fw.hidden.narrow(1, result.position, 1), fw.stack, rules).view({-1});  // [V]
  result.token = target.token >= 0 ? target.token : logits.argmax().item<int64_t>();
  auto f = logits[result.token];
  result.target = f.item<double>();

  // Everything differentiated in one backward pass: inputs, head outputs, gated outputs (for the
  // dataset-mean ablation constants), additive constants and bias parameters.
  std::vector<torch::Tensor> wrt;
  wrt.push_back(fw.tokens);
  if (fw.decoder_tokens.defined()) wrt.push_back(fw.decoder_tokens);
  struct HeadSlot {
    core::Stack key;
    int layer;
    size_t output, gated;  // indices into wrt (gated: SIZE_MAX when not needed)
  };
  std::vector<HeadSlot> slots;
  for (const core::Stack key : core::kStacks) {
    auto it = fw.stages.find(key);
    if (it == fw.stages.end()) continue;
    for (size_t l = 0; l < it->second.size(); ++l) {
      const auto& s = it->second[l];
      HeadSlot slot{key, static_cast<int>(l), wrt.size(), SIZE_MAX};
      wrt.push_back(s.head_outputs);
      const auto& c = controls.get(key, static_cast<int>(l));
      if (!c.gates.empty() && c.ablation == core::Ablation::Mean && !c.mean_outputs.empty()) {
        slot.gated = wrt.size();
        wrt.push_back(s.gated_outputs);
      }
      slots.push_back(slot);
    }
  }
  const size_t first_constant = wrt.size();
  for (const auto& c : fw.constants) wrt.push_back(c);
  for (const auto& item : model.module->named_parameters()) {
    const std::string& name = item.key();
    // (relative_bias ends in "bias" too: it enters only the logits, whose softmax is constant under
    // LRP, so its term is 0.)
    // positions.weight and decoder_positions.weight: the learned position tables.
    const bool additive = ends_with(name, "bias") || ends_with(name, "positions.weight") || name == "token_types.weight";
    if (additive && item.value().requires_grad()) wrt.push_back(item.value());
  }
  auto grads = torch::autograd::grad({f}, wrt, /*grad_outputs=*/{}, /*retain_graph=*/false, /*create_graph=*/false,
                                     /*allow_unused=*/true);
  auto dot = [&](const torch::Tensor& x, size_t i) {
    return grads[i].defined() ? (x.detach().to(torch::kFloat64) * grads[i].to(torch::kFloat64)).sum().item<double>() : 0.0;
  };
  auto per_position = [&](const torch::Tensor& x, size_t i) {
    const int64_t T = x.size(1);
    std::vector<double> r(T, 0.0);
    if (!grads[i].defined()) return r;
    auto v = (x.detach().to(torch::kFloat64) * grads[i].to(torch::kFloat64)).sum(-1).view({-1}).to(torch::kCPU).contiguous();  // one copy from a card
    for (int64_t t = 0; t < T; ++t) r[t] = v.data_ptr<double>()[t];
    return r;
  };
  result.input = per_position(fw.tokens, 0);
  if (fw.decoder_tokens.defined()) result.decoder_input = per_position(fw.decoder_tokens, 1);

  double bias = 0;
  for (const auto& slot : slots) {
    const auto& s = fw.stages[slot.key][slot.layer];
    const auto& O = s.head_outputs;  // [1, h_v, T, d_v]
    std::vector<double> r(O.size(1), 0.0);
    if (grads[slot.output].defined()) {
      auto per_head = (O.detach().to(torch::kFloat64) * grads[slot.output].to(torch::kFloat64)).sum({0, 2, 3}).to(torch::kCPU).contiguous();
      for (int64_t i = 0; i < O.size(1); ++i) r[i] = per_head.data_ptr<double>()[i];
    }
    auto& layers = result.heads[slot.key];
    layers.resize(fw.stages[slot.key].size());
    layers[slot.layer] = r;
    if (slot.gated != SIZE_MAX && grads[slot.gated].defined()) {
      // Ablation towards a dataset mean adds the constant (1 − g_i)·mean_i after the gate. (The
      // per-input mean is linear in O_i and stays in the graph: no constant.)
      const auto& c = controls.get(slot.key, slot.layer);
      auto g = torch::tensor(gates_of(c, O.size(1)), torch::kFloat64).to(O.device()).view({1, -1, 1, 1});
      auto constant = ablation_target(c, O).to(torch::kFloat64) * (1 - g);
      bias += (constant * grads[slot.gated].to(torch::kFloat64)).sum().item<double>();
    }
  }
  for (size_t i = first_constant; i < wrt.size(); ++i) bias += dot(wrt[i], i);
  result.bias = bias;
  double total = bias;
  for (double v : result.input) total += v;
  for (double v : result.decoder_input) total += v;
  result.residual = std::abs(total - result.target);
  return result;
}

}  // namespace

double LrpResult::relative_residual() const { return target == 0 ? residual : residual / std::abs(target); }

LrpResult lrp_relevance(core::Model& model, const std::vector<int64_t>& ids, const LrpTarget& target,
                        const core::ModelControls& controls, const std::vector<int64_t>& decoder_ids) {
  return relevance(model, ids, target, controls, decoder_ids, /*rules=*/true);
}

LrpResult gradient_x_input(core::Model& model, const std::vector<int64_t>& ids, const LrpTarget& target,
                           const core::ModelControls& controls, const std::vector<int64_t>& decoder_ids) {
  return relevance(model, ids, target, controls, decoder_ids, /*rules=*/false);
}

HeadValues normalize_per_layer(const HeadValues& raw) {
  HeadValues out;
  for (const auto& [stack, layers] : raw) {
    auto& dst = out[stack];
    for (const auto& layer : layers) {
      double total = 0;
      for (double v : layer) total += std::abs(v);
      std::vector<double> row(layer.size(), 0.0);
      if (total > 0)
        for (size_t i = 0; i < layer.size(); ++i) row[i] = layer[i] / total;
      dst.push_back(row);
    }
  }
  return out;
}

ImportanceResult head_importance(core::Model& model, const std::vector<int64_t>& ids,
                                 const core::ModelControls& controls, const std::vector<int64_t>& mask_positions,
                                 const std::vector<int64_t>& decoder_ids) {
  c10::InferenceMode no_inference(false);
  torch::AutoGradMode grad_mode(true);
  check_inputs(model, ids, decoder_ids, "head importance");
  const auto& config = model.config;
  const bool masked_lm = config.kind == core::StackKind::Encoder;

  // The loss's input, target positions and target tokens.
  std::vector<int64_t> input = ids, positions, targets;
  if (masked_lm) {
    const auto mask = model.tokenizer ? model.tokenizer->mask_id() : std::nullopt;
    if (!mask) throw std::invalid_argument("head importance: a masked-LM loss needs the tokenizer's mask token");
    positions = mask_positions;
    if (positions.empty()) {
      int64_t k = 0;  // index among the non-special positions
      for (int64_t t = 0; t < static_cast<int64_t>(ids.size()); ++t) {
        if (model.tokenizer->is_special(ids[t])) continue;
        if (k >= 2 && (k - 2) % 7 == 0) positions.push_back(t);
        ++k;
      }
      if (positions.empty())
        throw std::invalid_argument("head importance: the input has fewer than 3 non-special tokens to mask");
    }
    for (int64_t p : positions) {
      if (p < 0 || p >= static_cast<int64_t>(ids.size()))
        throw std::invalid_argument("head importance: mask position " + std::to_string(p) + " is outside 0.." +
                                    std::to_string(ids.size() - 1));
      targets.push_back(ids[p]);
      input[p] = *mask;
    }
  } else {
    const auto& seq = config.kind == core::StackKind::EncoderDecoder ? decoder_ids : ids;
    if (seq.size() < 2) throw std::invalid_argument("head importance: next-token loss needs at least 2 tokens");
    for (size_t t = 0; t + 1 < seq.size(); ++t) {
      positions.push_back(static_cast<int64_t>(t));
      targets.push_back(seq[t + 1]);
    }
  }

  Forward fw = forward(model, input, decoder_ids, controls, /*lrp=*/false);
  auto logits = model.module->head(fw.hidden, fw.stack, false).squeeze(0);  // [T, V]
  auto picked = logits.index_select(0, torch::tensor(positions, torch::kLong).to(logits.device()));
  auto loss = torch::nn::functional::cross_entropy(picked, torch::tensor(targets, torch::kLong).to(logits.device()));

  // ∂L/∂g_i = Σ_{t,d} (O_i − a_i)[t, d] · ∂L/∂gated_i[t, d], from gated_i = g_i·O_i + (1 − g_i)·a_i
  // (a_i = 0 for zero ablation, the mean output for mean ablation), taken at the controls' gates.
  std::vector<torch::Tensor> wrt;
  std::vector<std::pair<core::Stack, int>> where;
  for (const core::Stack key : core::kStacks) {
    auto it = fw.stages.find(key);
    if (it == fw.stages.end()) continue;
    for (size_t l = 0; l < it->second.size(); ++l) {
      wrt.push_back(it->second[l].gated_outputs);
      where.emplace_back(key, static_cast<int>(l));
    }
  }
  auto grads = torch::autograd::grad({loss}, wrt, {}, false, false, /*allow_unused=*/true);
  ImportanceResult result;
  result.loss = loss.item<double>();
  result.targets = static_cast<int64_t>(positions.size());
  for (size_t k = 0; k < wrt.size(); ++k) {
    const auto& [key, l] = where[k];
    const auto& O = fw.stages[key][l].head_outputs;
    std::vector<double> row(O.size(1), 0.0);
    if (grads[k].defined()) {
      auto direction = O.detach().to(torch::kFloat64);
      auto a = ablation_target(controls.get(key, l), O);
      if (a.defined()) direction = direction - a.detach().to(torch::kFloat64);
      auto per_head = (direction * grads[k].to(torch::kFloat64)).sum({0, 2, 3}).to(torch::kCPU).contiguous();
      for (int64_t i = 0; i < O.size(1); ++i) row[i] = std::abs(per_head.data_ptr<double>()[i]);
    }
    auto& layers = result.heads[key];
    layers.resize(fw.stages[key].size());
    layers[l] = row;
  }
  return result;
}

}  // namespace headlab::analysis
