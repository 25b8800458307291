// Encoder families with factorised embeddings: ELECTRA (modeling_electra.py; Clark et al. 2020,
// arXiv 2003.10555) and ALBERT (modeling_albert.py; Lan et al. 2019, arXiv 1909.11942). Both are
// BERT's post-LN encoder with embeddings of width embedding_size projected to hidden_size (the
// engine's ModelConfig::embedding_size); ALBERT also runs one set of layer weights in every layer
// (StackConfig::shared_layers). The numerics tests compare the result with independent float64
// transcriptions in tests/data/hf/make_fixtures.py.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

// Keys BERT-like encoders share that would change the numbers if they were not the defaults.
void refuse_bert_variants(const HfConfig& c) {
  const std::string position_type = c.string("position_embedding_type", "absolute");
  if (position_type != "absolute")
    c.fail("position_embedding_type '" + position_type + "' is not supported (only 'absolute')");
  if (c.boolean("is_decoder", false)) c.fail("is_decoder true (a causal encoder) is not supported");
  if (c.boolean("add_cross_attention", false)) c.fail("add_cross_attention true is not supported");
}

// The post-LN encoder both families build on: absolute learned positions, token types, an
// embedding LayerNorm (at the embeddings' width), LayerNorms at layer_norm_eps.
ModelConfig bert_like_encoder(const HfConfig& c, const char* family, int default_embedding, int default_hidden,
                              int default_heads, int default_inner, const char* default_act) {
  ModelConfig m;
  m.family = family;
  m.kind = StackKind::Encoder;
  m.objective = "mlm";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("hidden_size", default_hidden);
  m.embedding_size = c.integer("embedding_size", default_embedding);
  if (m.embedding_size < 1) c.fail("embedding_size must be >= 1, got " + std::to_string(m.embedding_size));
  m.max_positions = c.integer("max_position_embeddings", 512);
  m.type_vocab_size = c.integer("type_vocab_size", 2);
  m.positions = PositionKind::Learned;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_eps", 1e-12));
  m.norm_placement = NormPlacement::Post;
  m.embedding_norm = true;
  m.final_norm = false;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("intermediate_size", default_inner), activation_from(c, "hidden_act", default_act),
                    true);
  const int heads = c.integer("num_attention_heads", default_heads);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers", 12);
  stack.attention = attention(heads, heads, head_dim_of(c, m.hidden_size, heads, "hidden_size", "num_attention_heads"),
                              true, true);
  m.encoder = stack;
  return m;
}

// Word, position and type embeddings and their LayerNorm at `p` + "embeddings.".
void add_embeddings(Sources& s, const std::string& p) {
  s.copy("tokens.weight", p + "embeddings.word_embeddings.weight");
  s.copy("positions.weight", p + "embeddings.position_embeddings.weight");
  s.copy("token_types.weight", p + "embeddings.token_type_embeddings.weight");
  s.norm("embed_norm", p + "embeddings.LayerNorm", true);
}

// A head-less file: the tied stand-in of no_mlm_head; with factorised embeddings the engine scores
// the final hidden states against the projected table E_tok·W_projᵀ, and the note says so.
void stand_in_head(Layout& layout, const std::string& what) {
  no_mlm_head(layout);
  layout.note = what + ": logits = final hidden · " +
                (layout.config.embedding_size > 0 ? "(token embeddings · embedding projectionᵀ)ᵀ" : "token embeddingsᵀ");
}

// modeling_albert.py's AlbertLayer, stored once and run in every layer.
const LayerTable kAlbertLayer = {
    {"attn.q", "attention.query", Piece::Linear, Bias::Always},
    {"attn.k", "attention.key", Piece::Linear, Bias::Always},
    {"attn.v", "attention.value", Piece::Linear, Bias::Always},
    {"attn.o", "attention.dense", Piece::Linear, Bias::Always},
    {"attn_norm", "attention.LayerNorm", Piece::Norm, Bias::Always},
    {"ffn.up", "ffn", Piece::Linear, Bias::Always},
    {"ffn.down", "ffn_output", Piece::Linear, Bias::Always},
    {"ffn_norm", "full_layer_layer_norm", Piece::Norm, Bias::Always},
};

}  // namespace

// modeling_electra.py: BERT's encoder under "electra."; embeddings of width embedding_size, followed
// by embeddings_project (Linear embedding_size → hidden_size) when the two differ.
// ElectraForMaskedLM (the generator): generator_predictions = LayerNorm(gelu(dense(h))) of width
// embedding_size (the activation is always erf GELU, whatever hidden_act says), then
// generator_lm_head tied to the word embeddings, with a bias.
// ElectraForPreTraining (the discriminator): discriminator_predictions scores each token with one
// "replaced" logit, dense_prediction(act(dense(h))); HeadLab's logits are scores over the vocabulary,
// so that head is not run and the tied stand-in takes its place (said in the model's name).
Layout electra_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  refuse_bert_variants(c);
  Layout layout;
  ModelConfig& m = layout.config;
  m = bert_like_encoder(c, "electra", 128, 256, 4, 1024, "gelu");
  const bool projected = m.embedding_size != m.hidden_size;  // ElectraModel adds embeddings_project only then
  if (!projected) m.embedding_size = 0;

  Sources s(has);
  const std::string p = has("electra.embeddings.word_embeddings.weight") ? "electra." : "";
  add_embeddings(s, p);
  if (projected) s.linear("embed_project", p + "embeddings_project", true);
  add_layers(s, "encoder", m.encoder->layers, p + "encoder.layer.", kBertLayer);
  const bool generator = arch == "ElectraForMaskedLM" || has("generator_predictions.dense.weight");
  const bool tied = c.boolean("tie_word_embeddings", true);
  if (generator) {
    if (m.ffn.activation != Activation::Gelu)
      c.fail("hidden_act '" + c.string("hidden_act", "gelu") + "' is not supported for " + arch +
             ": the generator head always uses erf GELU, and HeadLab's MLM head shares the layers' activation");
    add_mlm_head(layout, s, tied, "generator_predictions.dense", "generator_predictions.LayerNorm",
                 "generator_lm_head.bias", "generator_lm_head.weight");
  } else if (arch == "ElectraForPreTraining" || has("discriminator_predictions.dense.weight")) {
    stand_in_head(layout, "ELECTRA discriminator: its replaced-token head is not run");
  } else {
    stand_in_head(layout, "no MLM head in the file");
  }
  layout.sources = s.take();
  layout.ignorable = [generator, tied](const std::string& name) {
    return ends_with(name, "position_ids") || ends_with(name, "token_type_ids") ||
           starts_with(name, "discriminator_predictions.") || (generator && tied && name == "generator_lm_head.weight");
  };
  return layout;
}

// modeling_albert.py: BERT's post-LN layer (attention.{query,key,value,dense,LayerNorm}, ffn,
// ffn_output, full_layer_layer_norm) stored once under albert_layer_groups.0.albert_layers.0 and run
// num_hidden_layers times; embeddings of width embedding_size always pass through
// encoder.embedding_hidden_mapping_in (Linear embedding_size → hidden_size). The MLM head
// `predictions` is decoder(LayerNorm(act(dense(h)))) of width embedding_size with act = hidden_act,
// decoder tied to the word embeddings, and predictions.bias (the same tensor as predictions.decoder.bias).
Layout albert_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  refuse_bert_variants(c);
  // HeadLab shares one set of weights across all layers; ALBERT's groups would need several.
  const int groups = c.integer("num_hidden_groups", 1);
  if (groups != 1)
    c.fail("num_hidden_groups " + std::to_string(groups) +
           " is not supported (HeadLab shares one layer's weights across all layers: only 1)");
  const int inner = c.integer("inner_group_num", 1);
  if (inner != 1)
    c.fail("inner_group_num " + std::to_string(inner) + " is not supported (one layer per group: only 1)");

  Layout layout;
  ModelConfig& m = layout.config;
  m = bert_like_encoder(c, "albert", 128, 4096, 64, 16384, "gelu_new");
  m.encoder->shared_layers = true;

  Sources s(has);
  const std::string p = has("albert.embeddings.word_embeddings.weight") ? "albert." : "";
  add_embeddings(s, p);
  s.linear("embed_project", p + "encoder.embedding_hidden_mapping_in", true);
  add_layers(s, "encoder", 1, p + "encoder.albert_layer_groups.0.albert_layers.", kAlbertLayer);
  const bool mlm = arch == "AlbertForMaskedLM" || arch == "AlbertForPreTraining" || has("predictions.dense.weight");
  const bool tied = c.boolean("tie_word_embeddings", true);
  std::string bias;
  if (mlm) {
    bias = s.first_present({"predictions.bias", "predictions.decoder.bias"});
    add_mlm_head(layout, s, tied, "predictions.dense", "predictions.LayerNorm", bias, "predictions.decoder.weight");
  } else {
    stand_in_head(layout, "no MLM head in the file");
  }
  layout.sources = s.take();
  layout.ignorable = [p, mlm, tied, bias](const std::string& name) {
    // The pooler and the sentence-order head act on the first token only; the duplicate of a tied
    // tensor is the same values under a second name.
    return ends_with(name, "position_ids") || ends_with(name, "token_type_ids") || starts_with(name, p + "pooler.") ||
           starts_with(name, "sop_classifier.") ||
           (mlm && (name == "predictions.bias" || name == "predictions.decoder.bias") && name != bias) ||
           (mlm && tied && name == "predictions.decoder.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
