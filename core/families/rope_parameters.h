// Internal to the families: one RoPE parameter object of a Hugging Face config (4.x `rope_scaling`,
// 5.x `rope_parameters` or one of its per-layer-type entries), read as transformers'
// modeling_rope_utils.py reads it. Llama, Qwen2/3, Mistral, Gemma, Mixtral and gpt-oss read their RoPE through it.
#pragma once

#include "core/families/families.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace headlab::core::hf {

struct RopeObject {
  std::optional<double> theta;            // rope_theta, when the object gives it
  std::optional<double> rotary_fraction;  // partial_rotary_factor, when given
  RopeScaling scaling;                    // the rope type and its keys (kind None: "default")
};

// The rope types default, linear, dynamic, llama3 and yarn with each one's keys; any other type or
// key fails naming it, and a key a type needs fails when absent. `max_positions` is the folder's
// max_position_embeddings (yarn's defaults). YaRN is read as the current transformers reads it:
// original_max_position_embeddings defaults to max_position_embeddings, an absent factor is their
// ratio, and the attention factor is attention_factor, else DeepSeek's mscale/mscale_all_dim ratio,
// else 0.1·ln(factor) + 1.
RopeObject read_rope_object(const HfConfig& c, const nlohmann::json& object, const std::string& key, int max_positions);

// RoPE settings as transformers writes them: 4.x puts `rope_theta` (and `rope_scaling`, `partial_rotary_factor`)
// at the top level; 5.x puts everything into `rope_parameters` ({"rope_type", "rope_theta", …}), or one
// such object per layer type, which must then agree. Every key that changes the rotation is read or
// refused, never ignored: a folder whose θ or scaling went unread would run with plain RoPE and give
// wrong maps without a word. `default_theta`: the base when no key gives one (SmolLM3's 2·10⁶, else 10⁴);
// `default_fraction`: the rotated fraction of each head when no partial_rotary_factor is given (Phi's 0.5).
struct RopeSettings {
  double theta = 10000.0;
  double rotary_fraction = 1.0;
  RopeScaling scaling;
};
RopeSettings read_rope(const HfConfig& c, int max_positions, double default_theta, double default_fraction = 1.0);

// YaRN's magnitude scale for a context `factor` (modeling_rope_utils.py's get_mscale, DeepSeek's
// yarn_get_mscale): 0.1·m·ln(factor) + 1, or 1 where factor ≤ 1.
double yarn_mscale(double factor, double m);

}  // namespace headlab::core::hf
