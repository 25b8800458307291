// BERT and RoBERTa (modeling_bert.py, modeling_roberta.py) and DistilBERT (modeling_distilbert.py):
// post-LN encoders → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"

namespace headlab::core::hf {
namespace {

// modeling_distilbert.py's TransformerBlock.
const LayerTable kDistilBertLayer = {
    {"attn.q", "attention.q_lin", Piece::Linear, Bias::Always},
    {"attn.k", "attention.k_lin", Piece::Linear, Bias::Always},
    {"attn.v", "attention.v_lin", Piece::Linear, Bias::Always},
    {"attn.o", "attention.out_lin", Piece::Linear, Bias::Always},
    {"attn_norm", "sa_layer_norm", Piece::Norm, Bias::Always},
    {"ffn.up", "ffn.lin1", Piece::Linear, Bias::Always},
    {"ffn.down", "ffn.lin2", Piece::Linear, Bias::Always},
    {"ffn_norm", "output_layer_norm", Piece::Norm, Bias::Always},
};

}  // namespace

// modeling_bert.py: post-LN encoder; embeddings = LayerNorm(word + position + token_type).
// modeling_roberta.py: the same encoder under "roberta."; positions count from padding_idx + 1 (an
// input without padding reads rows pad+1, pad+2, …: the importer keeps the table from that row, so
// position t reads row t); the LM head is lm_head.{dense, layer_norm, decoder (tied), bias}.
Layout bert_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  const bool roberta = in.family == "roberta";
  const std::string position_type = c.string("position_embedding_type", "absolute");
  if (position_type != "absolute")
    c.fail("position_embedding_type '" + position_type + "' is not supported (only 'absolute')");
  if (c.boolean("is_decoder", false)) c.fail("is_decoder true (a causal BERT) is not supported");
  if (c.boolean("add_cross_attention", false)) c.fail("add_cross_attention true is not supported");

  Layout layout;
  ModelConfig& m = layout.config;
  m.family = roberta ? "roberta" : "bert";
  m.kind = StackKind::Encoder;
  m.objective = "mlm";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("hidden_size");
  const int position_rows = c.integer("max_position_embeddings", roberta ? 514 : 512);
  const int position_offset = roberta ? c.integer("pad_token_id", 1) + 1 : 0;
  if (position_offset < 0 || position_offset >= position_rows)
    c.fail("pad_token_id " + std::to_string(position_offset - 1) + " leaves no position rows of " +
           std::to_string(position_rows));
  m.max_positions = position_rows - position_offset;
  m.type_vocab_size = c.integer("type_vocab_size", roberta ? 1 : 2);
  m.positions = PositionKind::Learned;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_eps", 1e-12));
  m.norm_placement = NormPlacement::Post;
  m.embedding_norm = true;
  m.final_norm = false;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("intermediate_size"), activation_from(c, "hidden_act", "gelu"), true);
  const int heads = c.integer("num_attention_heads");
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  const int head_dim = head_dim_of(c, m.hidden_size, heads, "hidden_size", "num_attention_heads");
  stack.attention = attention(heads, heads, head_dim, true, true);
  m.encoder = stack;

  Sources s(has);
  // BertForMaskedLM/BertForPreTraining prefix the encoder with "bert." (Roberta: "roberta."); a bare
  // BertModel/RobertaModel does not.
  const std::string prefix = roberta ? "roberta." : "bert.";
  const std::string p = has(prefix + "embeddings.word_embeddings.weight") ? prefix : "";
  s.copy("tokens.weight", p + "embeddings.word_embeddings.weight");
  if (position_offset == 0) {
    s.copy("positions.weight", p + "embeddings.position_embeddings.weight");
  } else {
    TensorSource positions{p + "embeddings.position_embeddings.weight", {position_rows, m.hidden_size}, 0,
                           position_offset, m.max_positions, false};
    s.add("positions.weight", positions);
  }
  if (m.type_vocab_size > 0) s.copy("token_types.weight", p + "embeddings.token_type_embeddings.weight");
  s.norm("embed_norm", p + "embeddings.LayerNorm", true);
  add_layers(s, "encoder", stack.layers, p + "encoder.layer.", kBertLayer);
  // BertLMPredictionHead: decoder(LayerNorm(act(dense(h)))) with the decoder tied to the word
  // embeddings and its own bias.
  const bool mlm = arch == "BertForMaskedLM" || arch == "BertForPreTraining" || arch == "RobertaForMaskedLM" ||
                   has("cls.predictions.transform.dense.weight") || has("lm_head.dense.weight");
  const bool tied = c.boolean("tie_word_embeddings", true);
  if (mlm && roberta) {
    add_mlm_head(layout, s, tied, "lm_head.dense", "lm_head.layer_norm",
                 s.first_present({"lm_head.bias", "lm_head.decoder.bias"}), "lm_head.decoder.weight");
  } else if (mlm) {
    add_mlm_head(layout, s, tied, "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                 s.first_present({"cls.predictions.bias", "cls.predictions.decoder.bias"}),
                 "cls.predictions.decoder.weight");
  } else {
    no_mlm_head(layout);
  }
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    // The pooler and the next-sentence head feed no logits; decoder.bias aliases predictions.bias
    // (RoBERTa: lm_head.decoder.bias aliases lm_head.bias).
    return starts_with(name, "bert.pooler.") || starts_with(name, "roberta.pooler.") || starts_with(name, "pooler.") ||
           ends_with(name, "position_ids") || starts_with(name, "cls.seq_relationship.") ||
           name == "cls.predictions.decoder.bias" || name == "lm_head.decoder.bias" ||
           (tied && (name == "cls.predictions.decoder.weight" || name == "lm_head.decoder.weight"));
  };
  return layout;
}

// modeling_distilbert.py: BERT's post-LN encoder with other names, no token types, every LayerNorm at
// eps 1e-12; queries scaled by 1/√d before the product (the same logits). The MLM head is
// vocab_projector(vocab_layer_norm(act(vocab_transform(h)))), the projector tied to the word embeddings.
Layout distilbert_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "distilbert";
  m.kind = StackKind::Encoder;
  m.objective = "mlm";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("dim", 768);
  m.max_positions = c.integer("max_position_embeddings", 512);
  m.type_vocab_size = 0;
  m.positions = PositionKind::Learned;  // sinusoidal_pos_embds: the fixed table is in the file all the same
  m.norm = NormKind::LayerNorm;
  m.norm_eps = 1e-12f;
  m.norm_placement = NormPlacement::Post;
  m.embedding_norm = true;
  m.final_norm = false;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("hidden_dim", 3072), activation_from(c, "activation", "gelu"), true);
  const int heads = c.integer("n_heads", 12);
  StackConfig stack;
  stack.layers = c.integer("n_layers", 6);
  stack.attention = attention(heads, heads, head_dim_of(c, m.hidden_size, heads, "dim", "n_heads"), true, true);
  m.encoder = stack;

  Sources s(has);
  const std::string p = has("distilbert.embeddings.word_embeddings.weight") ? "distilbert." : "";
  s.copy("tokens.weight", p + "embeddings.word_embeddings.weight");
  s.copy("positions.weight", p + "embeddings.position_embeddings.weight");
  s.norm("embed_norm", p + "embeddings.LayerNorm", true);
  add_layers(s, "encoder", stack.layers, p + "transformer.layer.", kDistilBertLayer);
  const bool mlm = arch == "DistilBertForMaskedLM" || has("vocab_transform.weight");
  const bool tied = c.boolean("tie_word_embeddings", true);
  if (mlm)
    add_mlm_head(layout, s, tied, "vocab_transform", "vocab_layer_norm", "vocab_projector.bias", "vocab_projector.weight");
  else
    no_mlm_head(layout);
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "position_ids") || (tied && name == "vocab_projector.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
