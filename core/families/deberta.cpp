// DeBERTa-v2 and -v3 (modeling_deberta_v2.py): BERT's post-LN encoder with disentangled attention
// (core/config.h, Disentangled) → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace headlab::core::hf {
namespace {

// DebertaV2Layer: DisentangledSelfAttention's query_proj/key_proj/value_proj, then BERT's output and FFN.
const LayerTable kDebertaLayer = {
    {"attn.q", "attention.self.query_proj", Piece::Linear, Bias::Always},
    {"attn.k", "attention.self.key_proj", Piece::Linear, Bias::Always},
    {"attn.v", "attention.self.value_proj", Piece::Linear, Bias::Always},
    {"attn.o", "attention.output.dense", Piece::Linear, Bias::Always},
    {"attn_norm", "attention.output.LayerNorm", Piece::Norm, Bias::Always},
    {"ffn.up", "intermediate.dense", Piece::Linear, Bias::Always},
    {"ffn.down", "output.dense", Piece::Linear, Bias::Always},
    {"ffn_norm", "output.LayerNorm", Piece::Norm, Bias::Always},
};

// A "|"-separated setting ("p2c|c2p", "layer_norm"), each part lowercased and stripped of spaces, as
// DebertaV2Config and DebertaV2Encoder read them; empty parts dropped.
std::vector<std::string> setting_parts(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, '|');) {
    for (auto& ch : part) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto first = part.find_first_not_of(' '), last = part.find_last_not_of(' ');
    if (first != std::string::npos) parts.push_back(part.substr(first, last - first + 1));
  }
  return parts;
}

bool contains(const std::vector<std::string>& parts, const char* part) {
  return std::find(parts.begin(), parts.end(), part) != parts.end();
}

// pos_att_type: a list (["p2c", "c2p"]) or, in older folders, one string ("p2c|c2p").
std::vector<std::string> position_terms(const HfConfig& c) {
  std::vector<std::string> terms;
  const nlohmann::json* value = c.find("pos_att_type");
  if (!value) return terms;
  if (value->is_string()) {
    terms = setting_parts(value->get<std::string>());
  } else if (value->is_array()) {
    for (const auto& term : *value) {
      if (!term.is_string()) c.fail("pos_att_type must list strings (c2p, p2c)");
      for (auto& part : setting_parts(term.get<std::string>())) terms.push_back(part);
    }
  } else {
    c.fail("pos_att_type must be a list or a '|'-separated string of c2p and p2c");
  }
  for (const auto& term : terms)
    if (term != "c2p" && term != "p2c") c.fail("pos_att_type '" + term + "' is not a DeBERTa term (c2p, p2c)");
  return terms;
}

}  // namespace

// modeling_deberta_v2.py's DebertaV2ForMaskedLM / DebertaV2Model. Embeddings: LayerNorm(word (+ absolute
// position when position_biased_input) (+ token type)); each layer BERT's post-LN layer around
// DisentangledSelfAttention, whose logits (q·k + c2p + p2c) / sqrt(d · (1 + terms)) read the encoder's
// relative-position table (rel_embeddings, LayerNorm'd when norm_rel_ebd has "layer_norm"). The MLM
// head is the legacy cls.predictions.* (transformers' default, legacy true) or lm_predictions.lm_head.*
// (legacy false; the spelling of the microsoft/deberta-v3-* checkpoints).
Layout deberta_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  if (c.integer("conv_kernel_size", 0) > 0)
    c.fail("conv_kernel_size " + std::to_string(c.integer("conv_kernel_size", 0)) +
           ": DeBERTa-v2's convolution beside the first layer is not supported");
  Layout layout;
  ModelConfig& m = layout.config;
  m.family = "deberta_v2";
  m.kind = StackKind::Encoder;
  m.objective = "mlm";
  m.vocab_size = c.integer("vocab_size", 128100);
  m.hidden_size = c.integer("hidden_size", 1536);
  if (c.integer("embedding_size", m.hidden_size) != m.hidden_size)
    c.fail("embedding_size " + std::to_string(c.integer("embedding_size", m.hidden_size)) + " differs from hidden_size " +
           std::to_string(m.hidden_size) + ": DeBERTa's embed_proj is not supported");
  m.max_positions = c.integer("max_position_embeddings", 512);
  m.type_vocab_size = c.integer("type_vocab_size", 0);
  const bool absolute = c.boolean("position_biased_input", true);
  m.positions = absolute ? PositionKind::Learned : PositionKind::None;
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("layer_norm_eps", 1e-7));
  m.norm_placement = NormPlacement::Post;
  m.embedding_norm = true;
  m.final_norm = false;
  m.ffn = ffn_config(FfnKind::Mlp, c.integer("intermediate_size", 6144), activation_from(c, "hidden_act", "gelu"), true);
  const int heads = c.integer("num_attention_heads", 24);
  if (heads < 1 || m.hidden_size % heads != 0)
    c.fail("hidden_size " + std::to_string(m.hidden_size) + " is not a multiple of num_attention_heads " + std::to_string(heads));
  const int head_dim = c.integer("attention_head_size", m.hidden_size / heads);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers", 24);
  stack.attention = attention(heads, heads, head_dim, true, true);
  const auto terms = position_terms(c);
  const bool c2p = contains(terms, "c2p"), p2c = contains(terms, "p2c");
  // The scale counts the position terms named (each once), even where relative_attention leaves them out.
  const float factor = 1.0f + (c2p ? 1.0f : 0.0f) + (p2c ? 1.0f : 0.0f);
  stack.attention.scale = 1.0f / std::sqrt(static_cast<float>(head_dim) * factor);
  const bool table_norm = contains(setting_parts(c.string("norm_rel_ebd", "none")), "layer_norm");
  // relative_attention with no term named runs plain attention (transformers adds a score of 0).
  const bool relative = c.boolean("relative_attention", false) && (c2p || p2c);
  if (relative) {
    Disentangled d;
    d.max_distance = c.integer("max_relative_positions", -1);
    if (d.max_distance < 1) d.max_distance = m.max_positions;
    d.buckets = std::max(0, c.integer("position_buckets", -1));
    d.c2p = c2p;
    d.p2c = p2c;
    d.shared_keys = c.boolean("share_att_key", false);
    d.table_norm = table_norm;
    d.table_norm_eps = m.norm_eps;
    stack.attention.disentangled = d;
  }
  m.encoder = stack;

  Sources s(has);
  const std::string p = has("deberta.embeddings.word_embeddings.weight") ? "deberta." : "";
  s.copy("tokens.weight", p + "embeddings.word_embeddings.weight");
  if (absolute) s.copy("positions.weight", p + "embeddings.position_embeddings.weight");
  if (m.type_vocab_size > 0) s.copy("token_types.weight", p + "embeddings.token_type_embeddings.weight");
  s.norm("embed_norm", p + "embeddings.LayerNorm", true);
  add_layers(s, "encoder", stack.layers, p + "encoder.layer.", kDebertaLayer);
  if (const auto& d = stack.attention.disentangled) {
    s.copy("encoder.0.attn.rel_embeddings", p + "encoder.rel_embeddings.weight");
    if (d->table_norm) s.norm("encoder.0.attn.rel_norm", p + "encoder.LayerNorm", true);
    if (!d->shared_keys)
      for (int l = 0; l < stack.layers; ++l) {
        const std::string native = "encoder." + std::to_string(l) + ".attn.", hf = p + "encoder.layer." + std::to_string(l) + ".attention.self.";
        if (d->c2p) s.linear(native + "pos_k", hf + "pos_key_proj", true);
        if (d->p2c) s.linear(native + "pos_q", hf + "pos_query_proj", true);
      }
  }
  // The MLM head: the one config.json's `legacy` names; a file holding only the other spelling is read
  // as stored (transformers would start that head from random weights), and the model's note says so.
  const bool legacy = c.boolean("legacy", true);
  const bool has_legacy = has("cls.predictions.transform.dense.weight");
  const bool has_new = has("lm_predictions.lm_head.dense.weight");
  const bool use_new = has_new && (!legacy || !has_legacy);
  if (use_new) {
    add_mlm_head(layout, s, true, "lm_predictions.lm_head.dense", "lm_predictions.lm_head.LayerNorm",
                 "lm_predictions.lm_head.bias", "");
    if (legacy) layout.note = "MLM head read from lm_predictions.lm_head.* (transformers reads it only with legacy false)";
  } else if (has_legacy) {
    add_mlm_head(layout, s, true, "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                 s.first_present({"cls.predictions.bias", "cls.predictions.decoder.bias"}), "");
    if (!legacy) layout.note = "MLM head read from cls.predictions.* (transformers reads it only with legacy true)";
  } else {
    no_mlm_head(layout);
  }
  layout.sources = s.take();
  layout.ignorable = [absolute, relative](const std::string& name) {
    // The pooler, the replaced-token-detection head of the v3 checkpoints (mask_predictions), and the
    // tied decoder (its weight is the word embeddings, its bias predictions.bias) feed no MLM logits;
    // nor, as in transformers, an absolute table without position_biased_input, or the relative tables,
    // their norm and the position projections when relative attention is off.
    if (!absolute && ends_with(name, "embeddings.position_embeddings.weight")) return true;
    if (!relative && (ends_with(name, "encoder.rel_embeddings.weight") || ends_with(name, "encoder.LayerNorm.weight") ||
                      ends_with(name, "encoder.LayerNorm.bias") || name.find(".attention.self.pos_key_proj.") != std::string::npos ||
                      name.find(".attention.self.pos_query_proj.") != std::string::npos))
      return true;
    return starts_with(name, "pooler.") || starts_with(name, "deberta.pooler.") || ends_with(name, "position_ids") ||
           starts_with(name, "mask_predictions.") || name == "cls.predictions.decoder.weight" ||
           name == "cls.predictions.decoder.bias" || name == "lm_predictions.lm_head.decoder.weight";
  };
  return layout;
}

}  // namespace headlab::core::hf
