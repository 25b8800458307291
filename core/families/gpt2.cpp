// GPT-2 (modeling_gpt2.py) → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

// modeling_gpt2.py's GPT2Block, its Conv1D weights stored [in, out]; c_attn is split in gpt2_layout.
const LayerTable kGpt2Layer = {
    {"attn_norm", "ln_1", Piece::Norm, Bias::Always},
    {"attn.o", "attn.c_proj", Piece::Conv1D, Bias::Always},
    {"ffn_norm", "ln_2", Piece::Norm, Bias::Always},
    {"ffn.up", "mlp.c_fc", Piece::Conv1D, Bias::Always},
    {"ffn.down", "mlp.c_proj", Piece::Conv1D, Bias::Always},
};

}  // namespace

// modeling_gpt2.py: pre-LN decoder, Conv1D weights stored [in, out], fused c_attn = [q | k | v].
Layout gpt2_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  if (c.boolean("scale_attn_by_inverse_layer_idx", false))
    c.fail("scale_attn_by_inverse_layer_idx true is not supported (a per-layer attention scale)");
  if (c.boolean("add_cross_attention", false)) c.fail("add_cross_attention true is not supported");

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "gpt2";
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size", 50257);
  const int D = c.integer("n_embd", 768);
  m.hidden_size = D;
  m.max_positions = c.integer("n_positions", 1024);
  m.positions = PositionKind::Learned;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_epsilon", 1e-5));
  m.norm_placement = NormPlacement::Pre;
  m.final_norm = true;
  const int inner = c.integer("n_inner", 4 * D);  // null → 4·n_embd
  m.ffn = ffn_config(FfnKind::Mlp, inner, activation_from(c, "activation_function", "gelu_new"), true);
  const int heads = c.integer("n_head", 12);
  StackConfig stack;
  stack.layers = c.integer("n_layer", 12);
  stack.attention = attention(heads, heads, head_dim_of(c, D, heads, "n_embd", "n_head"), true, true);
  if (!c.boolean("scale_attn_weights", true)) stack.attention.scale = 1.0f;
  m.decoder = stack;

  Sources s(has);
  // GPT2LMHeadModel saves the body under "transformer."; GPT2Model (and the original gpt2
  // checkpoint) without a prefix.
  const std::string p = has("transformer.wte.weight") ? "transformer." : "";
  s.copy("tokens.weight", p + "wte.weight");
  s.copy("positions.weight", p + "wpe.weight");
  add_layers(s, "decoder", stack.layers, p + "h.", kGpt2Layer);
  // The fused c_attn = [q | k | v] along its output columns: what a table row cannot say.
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".";
    const std::string h = p + "h." + std::to_string(l) + ".";
    const char* parts[] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      TensorSource w{h + "attn.c_attn.weight", {D, 3 * D}, 1, int64_t(i) * D, D, true};
      s.add(n + "attn." + parts[i] + ".weight", w);
      TensorSource b{h + "attn.c_attn.bias", {3 * D}, 0, int64_t(i) * D, D, false};
      s.add(n + "attn." + parts[i] + ".bias", b);
    }
  }
  s.norm("decoder_norm", p + "ln_f", true);
  bool tied = c.boolean("tie_word_embeddings", true);
  if (!tied && arch == "GPT2Model" && !has("lm_head.weight")) {
    tied = true;  // no head in the file: score against the token embeddings, as the tied model would
    layout.note = "no lm_head in the file: logits = final hidden · token embeddingsᵀ";
  }
  m.lm_head = LmHeadConfig{false, tied, false};
  if (!tied) s.copy("head_weight", "lm_head.weight");
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    // attn.bias / attn.masked_bias are the causal-mask buffers older checkpoints saved.
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
