#include "core/convert.h"

#include <torch/torch.h>

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
    // Self-attention key and value projections of a stack: "<stack>.<l>.attn.{k,v}.{weight,bias}".
    const bool pooled = name.find(".attn.k.") != std::string::npos || name.find(".attn.v.") != std::string::npos;
    if (!pooled) {
      item.value().copy_(from);
      continue;
    }
    const bool encoder = name.rfind("encoder.", 0) == 0;
    const auto& a = (encoder ? before.encoder : before.decoder)->attention;
    const bool key = name.find(".attn.k.") != std::string::npos;
    item.value().copy_(pool_heads(from, a.kv_heads, groups, key ? a.key_size : a.value_size));
  }
  out->module->eval();
  return out;
}

}  // namespace headlab::core
