// GPT-J (modeling_gptj.py; Wang & Komatsuzaki 2021, "GPT-J-6B") → ModelConfig + native parameter
// sources.
//
// A pre-LN decoder whose one LayerNorm (ln_1) feeds attention and MLP side by side,
// x + attn(ln_1(x)) + mlp(ln_1(x)) — the engine's parallel_residual with ln_1 imported as both norms;
// rotary embeddings on the first rotary_dim dims of each head in the interleaved layout
// (rotate_every_two: pairs (x₀, x₁), (x₂, x₃), … — the engine's rope_interleaved); q, k, v and out
// projections without biases; a gelu_new MLP (fc_in, fc_out) with biases; an untied LM head with a bias.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

const LayerTable kGptJLayer = {
    {"attn_norm", "ln_1", Piece::Norm, Bias::Always},
    {"ffn_norm", "ln_1", Piece::Norm, Bias::Always},  // the same LayerNorm feeds the MLP
    {"attn.q", "attn.q_proj", Piece::Linear},
    {"attn.k", "attn.k_proj", Piece::Linear},
    {"attn.v", "attn.v_proj", Piece::Linear},
    {"attn.o", "attn.out_proj", Piece::Linear},
    {"ffn.up", "mlp.fc_in", Piece::Linear, Bias::Always},
    {"ffn.down", "mlp.fc_out", Piece::Linear, Bias::Always},
};

}  // namespace

Layout gptj_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  if (c.find("rope_scaling") || c.find("rope_parameters"))
    c.fail("rope_scaling / rope_parameters are not read by modeling_gptj.py; a GPT-J folder with them is not supported");

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "gptj";
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size", 50400);
  const int D = c.integer("n_embd", 4096);
  m.hidden_size = D;
  m.max_positions = c.integer("n_positions", 2048);
  m.positions = PositionKind::Rope;
  m.rope_theta = 10000.0f;  // create_sinusoidal_positions' fixed base
  m.rope_interleaved = true;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_epsilon", 1e-5));
  m.norm_placement = NormPlacement::Pre;
  m.final_norm = true;
  m.parallel_residual = true;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("n_inner", 4 * D), activation_from(c, "activation_function", "gelu_new"),
                    true);
  const int heads = c.integer("n_head", 16);
  const int head_dim = head_dim_of(c, D, heads, "n_embd", "n_head");
  StackConfig stack;
  stack.layers = c.integer("n_layer", 28);
  if (stack.layers < 1) c.fail("n_layer must be >= 1");
  stack.attention = attention(heads, heads, head_dim, false, false);
  m.decoder = stack;
  // rotary_dim null rotates the whole head.
  const int rot = c.integer("rotary_dim", head_dim);
  if (rot < 2 || rot % 2 != 0 || rot > head_dim)
    c.fail("rotary_dim " + std::to_string(rot) + " must be even, >= 2 and at most the head size " +
           std::to_string(head_dim));
  if (rot != head_dim) m.rope_dim = rot;

  Sources s(has);
  const std::string p = has("transformer.wte.weight") ? "transformer." : "";  // GPTJForCausalLM vs GPTJModel
  s.copy("tokens.weight", p + "wte.weight");
  add_layers(s, "decoder", stack.layers, p + "h.", kGptJLayer);
  s.norm("decoder_norm", p + "ln_f", true);
  add_decoder_head(layout, s, in, false, "lm_head", /*bias=*/true);  // GPTJForCausalLM's lm_head has a bias
  layout.sources = s.take();
  layout.ignorable = [](const std::string& name) {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");  // mask buffers
  };
  return layout;
}

}  // namespace headlab::core::hf
