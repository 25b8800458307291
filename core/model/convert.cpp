#include "core/model/convert.h"

#include "core/memory_budget.h"
#include "core/model/device.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <torch/torch.h>

#include <string>

#include <stdexcept>

namespace headlab::core {
namespace {

// [kv · d, …] → [groups · d, …]: the mean over each group's r = kv / groups consecutive heads.
torch::Tensor pool_heads(const torch::Tensor& w, int64_t kv, int64_t groups, int64_t d) {
  auto shape = w.sizes().vec();
  std::vector<int64_t> grouped = {groups, kv / groups, d};
  grouped.insert(grouped.end(), shape.begin() + 1, shape.end());
  auto pooled = w.reshape(grouped).mean(1);  // [groups, d, …]
  shape[0] = groups * d;
  return pooled.reshape(shape);
}

}  // namespace

std::shared_ptr<Model> convert_to_gqa(const Model& model, int groups) {
  ModelConfig config = model.config;
  for (auto* stack : {&config.encoder, &config.decoder}) {
    if (!*stack) continue;
    const auto& a = (*stack)->attention;
    if (a.latent)
      throw std::invalid_argument("GQA conversion pools per-head key and value projections; " + config.name +
                                  " uses multi-head latent attention, whose heads already share one latent (its KV "
                                  "cache holds the latent, not per-head keys and values)");
    if (a.disentangled)
      throw std::invalid_argument("GQA conversion pools per-head keys; " + config.name +
                                  " uses disentangled attention, whose position-to-content term reads every query "
                                  "head's own keys");
    if (a.collaborative || a.talking_heads)
      throw std::invalid_argument("GQA conversion pools per-head keys and values; " + config.name +
                                  " uses " + (a.collaborative ? "collaborative attention" : "talking heads"));
    if (groups < 1 || a.kv_heads % groups != 0)
      throw std::invalid_argument("--groups " + std::to_string(groups) + " must divide the " +
                                  std::to_string(a.kv_heads) + " key/value heads");
    if (a.heads % groups != 0) throw std::invalid_argument("--groups must divide the query heads");
  }
  const ModelConfig before = config;
  if (config.encoder) config.encoder->attention.kv_heads = groups;
  if (config.decoder) config.decoder->attention.kv_heads = groups;
  config.validate();

  auto out = std::make_shared<Model>();
  out->config = config;
  out->module = Transformer(config);
  out->tokenizer = model.tokenizer;
  out->weights_dtype = model.weights_dtype;
  torch::NoGradGuard no_grad;
  const auto source = model.module->named_parameters();
  for (auto& item : out->module->named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& from = source[name];
    // Self-attention key and value projections of a stack: "<stack>.<l>.attn.{k,v}.{weight,bias}", and
    // a key norm over the whole key projection (OLMo 2's k_norm, [kv_heads · d_k]), whose weights are
    // per key coordinate: pooled with the keys, group by group (its RMS then runs over the pooled keys).
    const bool key = name.find(".attn.k.") != std::string::npos;
    const bool key_norm = name.size() >= 12 && name.compare(name.size() - 12, 12, ".attn.k_norm") == 0;
    if (!key && !key_norm && name.find(".attn.v.") == std::string::npos) {
      item.value().copy_(from);
      continue;
    }
    const bool encoder = name.rfind("encoder.", 0) == 0;
    const auto& a = (encoder ? before.encoder : before.decoder)->attention;
    if (key_norm && !a.qk_norm_whole) {  // a per-head norm [d_k] is shared by every head as it is
      item.value().copy_(from);
      continue;
    }
    item.value().copy_(pool_heads(as_float(from), a.kv_heads, groups, key || key_norm ? a.key_size : a.value_size));
  }
  out->module->eval();
  return out;
}

CollaborativeConversion convert_to_collaborative(const Model& model, int shared_key_size, const CpOptions& options,
                                                 const CollaborativeProgress& progress) {
  ModelConfig config = model.config;
  if (shared_key_size < 1) throw std::invalid_argument("--key-dim must be ≥ 1");
  if (config.positions == PositionKind::Rope || config.positions == PositionKind::RopeLearned)
    throw std::invalid_argument(config.name + " uses rotary positions: each head's rotation acts on its own query and key, "
                                "so its key-query product does not factor through shared projections (collaborative "
                                "conversion needs absolute, learned or no positions)");
  for (auto* stack : {&config.encoder, &config.decoder}) {
    if (!*stack) continue;
    auto& a = (*stack)->attention;
    if (a.collaborative) throw std::invalid_argument(config.name + " already uses collaborative attention");
    if (a.talking_heads) throw std::invalid_argument("collaborative conversion needs per-head logits; " + config.name +
                                                     " uses talking heads");
    if (a.scoring != Scoring::Dot) throw std::invalid_argument("collaborative conversion needs dot-product scoring");
    if (a.qk_norm) throw std::invalid_argument("collaborative conversion: per-head q/k norms do not factor");
    if (a.latent)
      throw std::invalid_argument("collaborative conversion: " + config.name + " uses multi-head latent attention, "
                                  "whose keys pass through a normalised latent and do not factor");
    if (a.disentangled)
      throw std::invalid_argument("collaborative conversion: " + config.name + " uses disentangled attention, whose "
                                  "position terms read each head's own queries and keys");
    const float scale = a.logit_scale();  // kept: the products are taken unscaled
    a.scale = scale;
    a.collaborative = Collaborative{shared_key_size};
  }
  const ModelConfig before = model.config;
  config.validate();
  // A layer's sweeps hold T = [W_Q^i W_K^iᵀ] [h, D, D] in float64, its reconstruction and their
  // difference at once: refused before any work where that cannot fit (8B: ~13 GB a layer).
  int64_t sweep_bytes = 0;
  for (const auto* sc : {&before.encoder, &before.decoder})
    if (*sc) sweep_bytes = std::max<int64_t>(sweep_bytes, 3 * int64_t((*sc)->attention.heads) * config.hidden_size *
                                                              config.hidden_size * int64_t(sizeof(double)));
  const bool card = options.device.is_cuda();
  const int64_t room = memory_room(options.device);
  if (room > 0 && sweep_bytes > room)
    throw MemoryLimitError("collaborative conversion needs about " + format_bytes(sweep_bytes) +
                           " a layer for its CP-ALS sweeps (float64), more than the " + format_bytes(room) +
                           (card ? " free on " + device_name(options.device) + "; run it on the CPU or free the card"
                                 : " this process may use (--memory-limit); raise the limit or run it on a card"));

  CollaborativeConversion out;
  out.model = std::make_shared<Model>();
  out.model->config = config;
  out.model->module = Transformer(config);
  out.model->tokenizer = model.tokenizer;
  out.model->weights_dtype = model.weights_dtype;
  torch::NoGradGuard no_grad;
  const auto source = model.module->named_parameters();
  auto target = out.model->module->named_parameters();
  // Everything but the self-attention query/key projections is copied as it is.
  for (auto& item : target) {
    const std::string& name = item.key();
    if (source.contains(name) && source[name].sizes() == item.value().sizes()) item.value().copy_(source[name]);
  }
  for (const Stack stack : {Stack::Encoder, Stack::Decoder}) {
    const auto& sc = stack == Stack::Encoder ? before.encoder : before.decoder;
    if (!sc) continue;
    const auto& a = sc->attention;
    const int64_t h = a.heads, d = a.key_size, R = shared_key_size, group = a.heads / a.kv_heads;
    for (int l = 0; l < sc->layers; ++l) {
      const std::string p = std::string(stack_name(stack)) + "." + std::to_string(l) + ".attn.";
      // On the CP sweeps' device (options.device), in float64.
      const torch::Tensor wq = source[p + "q.weight"].to(options.device, torch::kFloat64).view({h, d, -1});  // [h, d, D]
      const torch::Tensor wk = source[p + "k.weight"].to(options.device, torch::kFloat64).view({a.kv_heads, d, -1})  // [kv, d, D]
                                   .repeat_interleave(group, 0);                                      // [h, d, D]
      const int64_t D = wq.size(2);
      // T_i = W_Q^i W_K^iᵀ in the x-space: score_i(t, s) = x_tᵀ T_i x_s (before the scale).
      const torch::Tensor t = torch::matmul(wq.transpose(1, 2), wk);  // [h, D, D]
      CpOptions o = options;
      if (progress) {
        const int index = static_cast<int>(out.layers.size());
        const int layers = (before.encoder ? before.encoder->layers : 0) + (before.decoder ? before.decoder->layers : 0);
        o.on_iteration = [&, index, layers](int sweep, double error) {
          progress(index, layers, sweep, error);
          return !options.on_iteration || options.on_iteration(sweep, error);
        };
      }
      if (R >= h * d && !o.init_a.defined()) {
        // The exact block solution, padded with zero columns: W̃_Q = [W_Q^1 … W_Q^h], m_i = 1 on block i.
        o.init_a = torch::zeros({D, R}, torch::kFloat64);
        o.init_b = torch::zeros({D, R}, torch::kFloat64);
        o.init_c = torch::zeros({h, R}, torch::kFloat64);
        o.init_a.narrow(1, 0, h * d).copy_(wq.reshape({h * d, D}).t());
        o.init_b.narrow(1, 0, h * d).copy_(wk.reshape({h * d, D}).t());
        for (int64_t i = 0; i < h; ++i) o.init_c[i].narrow(0, i * d, d).fill_(1.0);
      }
      const CpResult cp = cp_als(t, R, o);
      target[p + "q.weight"].copy_(cp.a.t());  // W̃_Q as a Linear weight [R, D]
      target[p + "k.weight"].copy_(cp.b.t());  // W̃_K [R, D]
      target[p + "mix"].copy_(cp.c);           // m [h, R]
      if (a.qkv_bias) {
        // r_i = W_K^i b_Q^i: the part of (x_t W_Q^i + b_Q^i)·(x_s W_K^i + b_K^i) that varies with the key
        // besides x_tᵀ T_i x_s.
        const torch::Tensor bq = source[p + "q.bias"].to(options.device, torch::kFloat64).view({h, d});  // [h, d]
        target[p + "content_bias"].copy_(torch::einsum("hd,hdD->hD", {bq, wk}));                      // [h, D]
      }
      out.layers.push_back({stack, l, cp.relative_error, cp.iterations});
    }
  }
  out.model->module->eval();
  return out;
}

void save_converted_model(Model& converted, const Model& source, const std::string& source_folder,
                          const std::string& folder, const std::string& what) {
  converted.config.name += " (" + what + ")";
  // The source folder's tokenizer files, whatever their format (vocab.txt, vocab.json + merges.txt …).
  save_model(converted, folder, source.weights_dtype == "F64" ? "F32" : source.weights_dtype, source_folder);
}

std::string conversion_label(const std::string& to, int groups, int shared_key_size) {
  if (to == "collaborative") return "collaborative, shared key size " + std::to_string(shared_key_size);
  return to == "mqa" || groups == 1 ? "MQA" : "GQA " + std::to_string(groups);
}

std::string layer_errors_text(const CollaborativeConversion& conversion) {
  std::string text;
  char part[48];
  for (const auto& l : conversion.layers) {
    std::snprintf(part, sizeof part, " %s%d %.4f", l.stack == Stack::Encoder ? "E" : "D", l.layer, l.relative_error);
    text += part;
  }
  return text;
}

CpOptions conversion_cp_options(int iterations) {
  CpOptions cp;
  cp.max_iterations = iterations;
  cp.tolerance = 1e-7;
  return cp;
}

}  // namespace headlab::core
