// GPT-NeoX (modeling_gpt_neox.py; Black et al. 2022, arXiv 2204.06745) → ModelConfig + native parameter
// sources: the Pythia suite (Biderman et al. 2023, arXiv 2304.01373), whose public training checkpoints
// make it the most studied family in interpretability.
//
// A pre-LN decoder with LayerNorms, biases everywhere, an erf-GELU MLP, an untied head (embed_out) and
// rotary embeddings on the first int(head_size · rotary_pct) dims of each head (rotate-half; Pythia
// 0.25); with use_parallel_residual (the default) attention and MLP read the same input,
// x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x)) — the engine's parallel_residual.
// The fused query_key_value holds each head's q, k and v side by side ([heads, 3 · head_size] along its
// outputs), split at import with grouped slices.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <cmath>

namespace headlab::core::hf {
namespace {

using nlohmann::json;

// modeling_gpt_neox.py's GPTNeoXLayer; query_key_value is split in gpt_neox_layout.
const LayerTable kGptNeoXLayer = {
    {"attn_norm", "input_layernorm", Piece::Norm, Bias::Always},
    {"attn.o", "attention.dense", Piece::Linear, Bias::Out},
    {"ffn_norm", "post_attention_layernorm", Piece::Norm, Bias::Always},
    {"ffn.up", "mlp.dense_h_to_4h", Piece::Linear, Bias::Always},
    {"ffn.down", "mlp.dense_4h_to_h", Piece::Linear, Bias::Always},
};

}  // namespace

Layout gpt_neox_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  const int max_positions = c.integer("max_position_embeddings", 2048);
  // RoPE: transformers 4.x writes rotary_emb_base (older: rope_theta) and rotary_pct at the top level,
  // 5.x rope_parameters {rope_theta, partial_rotary_factor}; rope_scaling as the other RoPE families.
  // Left out, the fraction is GPTNeoXConfig's default, 0.25 (Pythia's).
  double theta = c.number("rotary_emb_base", c.number("rope_theta", 10000.0));
  double fraction = c.number("rotary_pct", c.number("partial_rotary_factor", 0.25));
  RopeScaling scaling;
  for (const char* key : {"rope_scaling", "rope_parameters"})
    if (const json* object = c.find(key)) {
      const RopeObject read = read_rope_object(c, *object, key, max_positions);
      if (read.theta) theta = *read.theta;
      if (read.rotary_fraction) fraction = *read.rotary_fraction;
      if (read.scaling.kind != RopeScalingKind::None) scaling = read.scaling;
    }
  if (!(theta > 0) || !std::isfinite(theta)) c.fail("the rotary base must be a positive number");
  if (!(fraction > 0 && fraction <= 1)) c.fail("rotary_pct must be in (0, 1], got " + json(fraction).dump());

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "gpt_neox";
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size");
  const int D = c.integer("hidden_size");
  m.hidden_size = D;
  m.max_positions = max_positions;
  m.positions = PositionKind::Rope;
  m.rope_theta = static_cast<float>(theta);
  m.rope_scaling = scaling;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_eps", 1e-5));
  m.norm_placement = NormPlacement::Pre;
  m.final_norm = true;
  m.parallel_residual = c.boolean("use_parallel_residual", true);
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("intermediate_size"), activation_from(c, "hidden_act", "gelu"), true);
  const int heads = c.integer("num_attention_heads");
  const int head_dim = head_dim_of(c, D, heads, "hidden_size", "num_attention_heads");
  const bool bias = c.boolean("attention_bias", true);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  if (stack.layers < 1) c.fail("num_hidden_layers must be >= 1");
  stack.attention = attention(heads, heads, head_dim, bias, bias);
  const int rot = static_cast<int>(head_dim * fraction);  // transformers: int(head_size · rotary_pct)
  if (rot < 2 || rot % 2 != 0)
    c.fail("rotary_pct " + json(fraction).dump() + " rotates " + std::to_string(rot) + " of " +
           std::to_string(head_dim) + " dims per head; RoPE needs an even number >= 2");
  if (rot != head_dim) m.rope_dim = rot;
  m.decoder = stack;

  Sources s(has);
  const std::string p = has("gpt_neox.embed_in.weight") ? "gpt_neox." : "";  // ForCausalLM vs GPTNeoXModel
  s.copy("tokens.weight", p + "embed_in.weight");
  add_layers(s, "decoder", stack.layers, p + "layers.", kGptNeoXLayer, {bias, bias, true});
  add_per_head_qkv(s, "decoder", stack.layers, p + "layers.", "attention.query_key_value", heads, head_dim, D, bias);
  s.norm("decoder_norm", p + "final_layer_norm", true);
  const bool tied = add_decoder_head(layout, s, in, false, "embed_out");
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    // attention.bias / masked_bias / rotary_emb.inv_freq: buffers older checkpoints saved.
    return ends_with(name, ".attention.bias") || ends_with(name, ".attention.masked_bias") ||
           ends_with(name, "rotary_emb.inv_freq") || (tied && name == "embed_out.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
