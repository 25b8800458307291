#include "core/train/frozen_weights.h"

#include "core/model/transformer.h"

#include <fnmatch.h>
#include <torch/torch.h>

#include <stdexcept>

namespace headlab::core::train {

HeadRef parse_head_ref(const std::string& text) {
  const auto dot = text.find('.');
  auto bad = [&] { return std::invalid_argument("'" + text + "' is not a head: write LAYER.HEAD, e.g. 3.5"); };
  if (dot == std::string::npos || dot == 0 || dot + 1 == text.size()) throw bad();
  const std::string layer = text.substr(0, dot), head = text.substr(dot + 1);
  auto digits = [](const std::string& s) { return s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos; };
  if (!digits(layer) || !digits(head)) throw bad();
  return {std::stoi(layer), std::stoi(head)};
}

std::string to_string(const HeadRef& head) { return std::to_string(head.layer) + "." + std::to_string(head.head); }

namespace {
bool matches(const std::string& glob, const std::string& name) { return fnmatch(glob.c_str(), name.c_str(), 0) == 0; }
}  // namespace

bool is_vocabulary_sized(const std::string& name) {
  return name == "tokens.weight" || name == "head_bias" || name == "head_weight";
}

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  for (const auto& glob : globs)
    if (matches(glob, name)) return true;
  return false;
}

std::vector<std::pair<std::string, torch::Tensor>> parameters_matching(TransformerImpl& model, const std::string& glob,
                                                                       const std::string& option) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model.named_parameters())
    if (matches(glob, item.key())) out.emplace_back(item.key(), item.value());
  if (out.empty())
    throw std::invalid_argument(option + ": '" + glob + "' names no parameter (names look like tokens.weight, " +
                                "encoder.0.attn.q.weight; see core/README.md, \"Model folder format\")");
  return out;
}

FrozenWeights::FrozenWeights(TransformerImpl& model, const ModelConfig& config, const std::vector<std::string>& patterns,
                             const std::vector<HeadRef>& heads, int64_t known_token_rows) {
  torch::NoGradGuard no_grad;
  for (const auto& pattern : patterns) {
    for (auto& [name, param] : parameters_matching(model, pattern, "--freeze")) {
      if (param.requires_grad()) whole_values_ += param.numel();  // two globs may match it
      param.set_requires_grad(false);  // no gradient: backward stops below it, AdamW skips it
    }
  }
  if (known_token_rows < 0 || known_token_rows > config.vocab_size)
    throw std::invalid_argument("--freeze-known-tokens: " + std::to_string(known_token_rows) + " known tokens in a " +
                                "vocabulary of " + std::to_string(config.vocab_size));
  if (known_token_rows > 0)
    for (const auto& item : model.named_parameters()) {
      const std::string& name = item.key();
      // Frozen whole by a glob already: nothing more to keep.
      if (is_vocabulary_sized(name) && item.value().requires_grad())
        slices_.push_back({item.value(), item.value().narrow(0, 0, known_token_rows).clone(), 0});
    }
  if (heads.empty()) return;
  const Stack stack = config.encoder ? Stack::Encoder : Stack::Decoder;
  const StackConfig& sc = config.encoder ? *config.encoder : *config.decoder;
  const AttentionConfig& a = sc.attention;
  if (a.collaborative)
    throw std::invalid_argument("--freeze-heads: collaborative attention shares its query/key projections across heads");
  if (a.latent)
    throw std::invalid_argument("--freeze-heads: multi-head latent attention derives every head's keys and values "
                                "from one shared latent and rotated key; no head's weights stand apart");
  if (a.kv_heads != a.heads)
    throw std::invalid_argument("--freeze-heads: " + a.variant_name() + " shares key heads between query heads; it " +
                                "needs one key head per query head (MHA)");
  for (const HeadRef& h : heads) {
    if (h.layer < 0 || h.layer >= sc.layers || h.head < 0 || h.head >= a.heads)
      throw std::invalid_argument("--freeze-heads: no head " + to_string(h) + " in the " + stack_name(stack) + " (" +
                                  std::to_string(sc.layers) + " layers × " + std::to_string(a.heads) + " heads)");
    auto attn = model.block(stack, h.layer)->attn;
    auto keep = [&](const torch::Tensor& param, int64_t rows) {
      if (!param.defined()) return;
      const int64_t begin = int64_t(h.head) * rows;
      slices_.push_back({param, param.narrow(0, begin, rows).clone(), begin});
    };
    // q, k (and disentangled attention's own position projections): [heads·d_k, D] weights and
    // [heads·d_k] biases, head-major rows.
    for (auto* linear : {&attn->q, &attn->k, &attn->pos_q, &attn->pos_k}) {
      if (!*linear) continue;
      keep((*linear)->weight, a.key_size);
      keep((*linear)->bias, a.key_size);
    }
    keep(attn->score_v, 1);  // additive scoring: v_h [1, d_k]
  }
}

int64_t FrozenWeights::frozen_values() const {
  int64_t n = whole_values_;
  for (const auto& s : slices_) n += s.saved.numel();
  return n;
}

void FrozenWeights::zero_grads() const {
  torch::NoGradGuard no_grad;
  for (const auto& s : slices_)
    if (s.param.grad().defined()) s.param.grad().narrow(0, s.begin, s.saved.size(0)).zero_();
}

void FrozenWeights::restore() const {
  torch::NoGradGuard no_grad;
  for (const auto& s : slices_) s.param.narrow(0, s.begin, s.saved.size(0)).copy_(s.saved);
}

}  // namespace headlab::core::train
