// Phi-1, Phi-1.5 and Phi-2 (modeling_phi.py) → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <string>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

// modeling_phi.py's PhiDecoderLayer: one LayerNorm whose output feeds attention and MLP side by side
// (imported as both of HeadLab's norms), q/k/v/dense and fc1/fc2 with biases.
const LayerTable kPhiLayer = {
    {"attn_norm", "input_layernorm", Piece::Norm, Bias::Always},
    {"ffn_norm", "input_layernorm", Piece::Norm, Bias::Always},
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Always},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Always},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Always},
    {"attn.o", "self_attn.dense", Piece::Linear, Bias::Always},
    {"ffn.up", "mlp.fc1", Piece::Linear, Bias::Always},
    {"ffn.down", "mlp.fc2", Piece::Linear, Bias::Always},
};

}  // namespace

// modeling_phi.py (PhiForCausalLM): a pre-LN decoder whose attention and MLP read the same
// input_layernorm output and add to the stream together (the engine's parallel_residual); RoPE on the
// first int(head_dim · partial_rotary_factor) dims of each head, rotate-half (Phi-2: 0.4 of 80 = 32);
// gelu_new MLP; final_layernorm; an untied lm_head with a bias. qk_layernorm (a LayerNorm of each head's
// queries and keys) is refused by name.
Layout phi_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const int max_positions = c.integer("max_position_embeddings", 2048);
  const RopeSettings rope = read_rope(c, max_positions, 10000.0, /*default_fraction=*/0.5);
  if (c.boolean("qk_layernorm", false))
    c.fail("qk_layernorm true is not supported (a LayerNorm with bias over each head's queries and keys)");
  Layout layout = rope_decoder_layout(c, in.family, 2048, rope.theta);
  ModelConfig& m = layout.config;
  m.rope_scaling = rope.scaling;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_eps", 1e-5));
  m.final_norm = true;
  m.parallel_residual = true;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("intermediate_size"), activation_from(c, "hidden_act", "gelu_new"), true);
  const int heads = c.integer("num_attention_heads");
  const int kv_heads = c.integer("num_key_value_heads", heads);
  const int head_dim = head_dim_of(c, m.hidden_size, heads, "hidden_size", "num_attention_heads");
  const double fraction = rope.rotary_fraction;  // given at the top level or in rope_parameters, else Phi's 0.5
  if (!(fraction > 0 && fraction <= 1)) c.fail("partial_rotary_factor must be in (0, 1], got " + json(fraction).dump());
  const int rot = static_cast<int>(head_dim * fraction);  // int(head_dim · factor), as transformers
  if (rot < 2 || rot % 2 != 0)
    c.fail("partial_rotary_factor " + json(fraction).dump() + " rotates " + std::to_string(rot) + " of " +
           std::to_string(head_dim) + " dims per head; RoPE needs an even number >= 2");
  m.rope_dim = rot == head_dim ? 0 : rot;
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, kv_heads, head_dim, true, true);
  m.decoder = stack;

  Sources s(in.has);
  const std::string p = in.has("model.embed_tokens.weight") ? "model." : "";
  s.copy("tokens.weight", p + "embed_tokens.weight");
  add_layers(s, "decoder", stack.layers, p + "layers.", kPhiLayer);
  s.norm("decoder_norm", p + "final_layernorm", true);
  const bool tied = add_decoder_head(layout, s, in, false, "lm_head", /*bias=*/true);  // with a bias
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
