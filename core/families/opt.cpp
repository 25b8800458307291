// OPT (modeling_opt.py; Zhang et al. 2022, "OPT: Open Pre-trained Transformer Language Models", arXiv
// 2205.01068) → ModelConfig + native parameter sources.
//
// A GPT-2-like decoder in nn.Linear layout: learned positions, pre-LN layers (do_layer_norm_before),
// biases on every projection (enable_bias), a ReLU MLP (fc1, fc2), a final LayerNorm and the LM head
// tied to the token embeddings. OPTLearnedPositionalEmbedding reads row position + 2 (its `offset`, a
// fairseq legacy), so the table stores max_position_embeddings + 2 rows and HeadLab's positions are
// rows 2 … max_position_embeddings + 1. OPT-350m's post-LN layers and its word_embed_proj_dim
// projections (project_in / project_out) are refused by name.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

constexpr int64_t kPositionOffset = 2;  // OPTLearnedPositionalEmbedding.offset

// modeling_opt.py's OPTDecoderLayer.
const LayerTable kOptLayer = {
    {"attn_norm", "self_attn_layer_norm", Piece::Norm, Bias::Always},
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Qkv},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Qkv},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Qkv},
    {"attn.o", "self_attn.out_proj", Piece::Linear, Bias::Out},
    {"ffn_norm", "final_layer_norm", Piece::Norm, Bias::Always},
    {"ffn.up", "fc1", Piece::Linear, Bias::Ffn},
    {"ffn.down", "fc2", Piece::Linear, Bias::Ffn},
};

}  // namespace

Layout opt_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  const int D = c.integer("hidden_size");
  if (!c.boolean("do_layer_norm_before", true))
    c.fail("do_layer_norm_before false (OPT-350m's post-LN layers) is not supported");
  if (c.integer("word_embed_proj_dim", D) != D)
    c.fail("word_embed_proj_dim " + std::to_string(c.integer("word_embed_proj_dim", D)) + " unlike hidden_size " +
           std::to_string(D) + " (OPT-350m's project_in / project_out) is not supported");
  if (!c.boolean("layer_norm_elementwise_affine", true))
    c.fail("layer_norm_elementwise_affine false (LayerNorms without weights) is not supported");

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "opt";
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = D;
  m.max_positions = c.integer("max_position_embeddings", 2048);
  if (m.max_positions < 1) c.fail("max_position_embeddings must be >= 1");
  m.positions = PositionKind::Learned;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = 1e-5f;  // nn.LayerNorm's default: OPT's config has no epsilon
  m.norm_placement = NormPlacement::Pre;
  // OPTDecoder drops its final LayerNorm only for the checkpoints converted with _remove_final_layer_norm.
  m.final_norm = !c.boolean("_remove_final_layer_norm", false);
  const bool bias = c.boolean("enable_bias", true);
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("ffn_dim"), activation_from(c, "activation_function", "relu"), bias);
  const int heads = c.integer("num_attention_heads");
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  if (stack.layers < 1) c.fail("num_hidden_layers must be >= 1");
  stack.attention = attention(heads, heads, head_dim_of(c, D, heads, "hidden_size", "num_attention_heads"), bias, bias);
  m.decoder = stack;

  Sources s(has);
  // OPTForCausalLM saves the body under "model.decoder."; OPTModel (and the released facebook/opt-*
  // files) under "decoder.".
  const std::string p = has("model.decoder.embed_tokens.weight") ? "model.decoder." : "decoder.";
  s.copy("tokens.weight", p + "embed_tokens.weight");
  s.add("positions.weight", TensorSource{p + "embed_positions.weight",
                                         {m.max_positions + kPositionOffset, D}, 0, kPositionOffset, m.max_positions,
                                         false});
  add_layers(s, "decoder", stack.layers, p + "layers.", kOptLayer, {bias, bias, bias});
  if (m.final_norm) s.norm("decoder_norm", p + "final_layer_norm", true);
  const bool tied = c.boolean("tie_word_embeddings", true);
  m.lm_head = LmHeadConfig{false, tied, false};
  if (!tied) s.copy("head_weight", "lm_head.weight");
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) { return tied && name == "lm_head.weight"; };
  return layout;
}

}  // namespace headlab::core::hf
