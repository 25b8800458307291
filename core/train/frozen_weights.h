// Weights that keep their starting values while the rest of a model trains (`train --freeze`,
// `train --freeze-heads`), typically in a second phase started with --init:
//   - parameters by name pattern (fnmatch globs over the native weight names, e.g. "tokens.*",
//     "encoder.[0-2].*"): they stop requiring a gradient, so backward stops below them and AdamW
//     (which skips parameters without one) neither steps nor decays them;
//   - heads of the main stack (the encoder, or the decoder of a decoder-only model): the rows of
//     their query and key projections (and biases; additive scoring's v_h). A head's attention
//     pattern comes from those rows and its input, so it is kept only as far as the input stays
//     alike (assets/README.md, "How the recipe was found": two positional heads stayed at 92–93% while the rest of
//     the model retrained, but fell to 62–89% in a re-initialised model). Needs one key head per
//     query head and per-head projections (MHA, talking-heads' logit heads, additive); not MQA/GQA
//     or collaborative attention, whose projections are shared across heads. These rows share a
//     tensor with trained rows, so they are zeroed in the gradient before clipping and written back
//     after every optimizer step (undoing AdamW's step and decay);
//   - the first rows of the vocabulary-sized tensors (token embeddings, output bias, untied output
//     weights): the tokens a grown vocabulary kept (`train --freeze-known-tokens`), restored the same way.
#pragma once

#include "core/config.h"

#include <torch/types.h>

#include <string>
#include <utility>
#include <vector>

namespace headlab::core {
class TransformerImpl;
}

namespace headlab::core::train {

struct HeadRef {
  int layer = 0, head = 0;
  bool operator==(const HeadRef& o) const { return layer == o.layer && head == o.head; }
};

// "2.5" → {2, 5}; throws std::invalid_argument naming the text otherwise.
HeadRef parse_head_ref(const std::string& text);
std::string to_string(const HeadRef& head);

// Whether the native parameter `name` has one row per vocabulary entry: the token embeddings, the
// output bias, an untied output projection.
bool is_vocabulary_sized(const std::string& name);

// Whether `name` matches one of the fnmatch globs.
bool matches_any(const std::vector<std::string>& globs, const std::string& name);

// The parameters whose native names match `glob` (fnmatch), in module order. Throws
// std::invalid_argument naming `option` and the glob when none does (a typo never passes silently).
std::vector<std::pair<std::string, torch::Tensor>> parameters_matching(TransformerImpl& model, const std::string& glob,
                                                                       const std::string& option);

class FrozenWeights {
 public:
  FrozenWeights() = default;
  // Captures the current values. Throws std::invalid_argument for a head outside the model, an
  // attention kind without per-head query/key rows, a pattern that names no parameter, or more known
  // token rows than the vocabulary has.
  FrozenWeights(TransformerImpl& model, const ModelConfig& config, const std::vector<std::string>& patterns,
                const std::vector<HeadRef>& heads, int64_t known_token_rows = 0);

  bool empty() const { return frozen_values() == 0; }
  int64_t frozen_values() const;  // how many numbers stay fixed
  // Before clipping: the frozen head rows contribute nothing to the gradient norm.
  void zero_grads() const;
  // After the optimizer step: puts the captured head rows back.
  void restore() const;

 private:
  struct Slice {
    torch::Tensor param;  // a q/k weight [H·d, D] or bias [H·d], score_v [H, d], or vocabulary-sized [V, …]
    torch::Tensor saved;  // one head's rows of it: [d, D] / [d] / [1, d]; the known tokens' [V_known, …]
    int64_t begin = 0;
  };
  std::vector<Slice> slices_;     // head rows, known token rows
  int64_t whole_values_ = 0;      // numbers in parameters frozen whole (no gradient)
};

}  // namespace headlab::core::train
