// Converting a trained model into another attention variant, as the papers behind the variants do.
// Grouped-query attention (Ainslie et al. 2023, §2.1): the key and value heads of each group are
// mean-pooled into one; MQA is one group. The result is an ordinary model (save_model writes it).
#pragma once

#include "core/model.h"

#include <memory>

namespace headlab::core {

// `model` with every self-attention layer of its stacks turned into GQA with `groups` key/value
// heads: kv head g is the mean of the model's kv heads g·r … g·r + r − 1 (r = kv_heads / groups),
// weights and biases alike. groups = kv_heads changes nothing. Throws std::invalid_argument when
// groups does not divide the kv heads, or for talking heads and collaborative attention (their keys
// are not per head). Cross-attention is left as it is.
std::shared_ptr<Model> convert_to_gqa(const Model& model, int groups);

}  // namespace headlab::core
