// BLOOM (modeling_bloom.py; BigScience 2022, arXiv 2211.05100) → ModelConfig + native parameter sources.
//
// A pre-LN decoder without position embeddings: ALiBi (Press et al. 2022) adds slope_h · (key position)
// to each head's scaled logits — within a query's row the same as −slope_h · (i − j), the engine's alibi
// option with build_alibi_tensor's slopes; a LayerNorm after the word embeddings; the fused
// query_key_value laid out [heads, 3, head_dim] along its outputs (split at import with grouped slices);
// biases everywhere; bloom_gelu (the tanh approximation); the head tied to the word embeddings.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

const LayerTable kBloomLayer = {
    {"attn_norm", "input_layernorm", Piece::Norm, Bias::Always},
    {"attn.o", "self_attention.dense", Piece::Linear, Bias::Always},
    {"ffn_norm", "post_attention_layernorm", Piece::Norm, Bias::Always},
    {"ffn.up", "mlp.dense_h_to_4h", Piece::Linear, Bias::Always},
    {"ffn.down", "mlp.dense_4h_to_h", Piece::Linear, Bias::Always},
};

}  // namespace

Layout bloom_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  if (c.boolean("apply_residual_connection_post_layernorm", false))
    c.fail("apply_residual_connection_post_layernorm true is not supported (the residual taken after the norm)");
  if (c.boolean("slow_but_exact", false) && c.integer("pretraining_tp", 1) > 1)
    c.fail("slow_but_exact with pretraining_tp > 1 is not supported (tensor-parallel sums in another order)");

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "bloom";
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size", 250880);
  // BloomConfig: n_embed (the released configs' key) else hidden_size; n_layer / num_hidden_layers and
  // n_head / num_attention_heads are the same settings.
  const int D = c.integer("n_embed", c.integer("hidden_size", 64));
  m.hidden_size = D;
  m.max_positions = 2048;  // BLOOM's training length; ALiBi itself has no table and no limit
  m.positions = PositionKind::None;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_epsilon", 1e-5));
  m.norm_placement = NormPlacement::Pre;
  m.embedding_norm = true;  // word_embeddings_layernorm
  m.final_norm = true;
  m.ffn = ffn_config(FfnKind::Mlp, 4 * D, Activation::GeluTanh, true);
  const int heads = c.integer("n_head", c.integer("num_attention_heads", 8));
  const int head_dim = head_dim_of(c, D, heads, "hidden_size", "n_head");
  StackConfig stack;
  stack.layers = c.integer("n_layer", c.integer("num_hidden_layers", 2));
  if (stack.layers < 1) c.fail("n_layer must be >= 1");
  stack.attention = attention(heads, heads, head_dim, true, true);
  stack.attention.alibi = true;
  m.decoder = stack;

  Sources s(has);
  const std::string p = has("transformer.word_embeddings.weight") ? "transformer." : "";  // ForCausalLM vs BloomModel
  s.copy("tokens.weight", p + "word_embeddings.weight");
  s.norm("embed_norm", p + "word_embeddings_layernorm", true);
  add_layers(s, "decoder", stack.layers, p + "h.", kBloomLayer);
  add_per_head_qkv(s, "decoder", stack.layers, p + "h.", "self_attention.query_key_value", heads, head_dim, D, true);
  s.norm("decoder_norm", p + "ln_f", true);
  m.lm_head = LmHeadConfig{false, true, false};  // BloomForCausalLM ties lm_head to word_embeddings
  layout.sources = s.take();
  layout.ignorable = [](const std::string& name) { return name == "lm_head.weight"; };
  return layout;
}

}  // namespace headlab::core::hf
