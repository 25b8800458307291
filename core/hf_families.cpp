// Hugging Face families → ModelConfig + native parameter sources. Each function transcribes the
// config fields and weight names of one `transformers` modeling file (modeling_bert.py,
// modeling_gpt2.py, modeling_llama.py, modeling_qwen2.py; ELECTRA and ALBERT in
// hf_families_encoders.cpp); the numerics tests compare the result with an independent transcription
// in tests/data/hf/make_fixtures.py.
#include "core/hf_families.h"
#include "core/hf_family_parts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

namespace headlab::core::hf {

using nlohmann::json;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// `hidden_act` / `activation_function` → HeadLab's activations (names from transformers' ACT2FN).
Activation activation_from(const HfConfig& c, const char* key, const std::string& fallback) {
  const std::string name = c.string(key, fallback);
  if (name == "gelu") return Activation::Gelu;  // erf form
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::GeluTanh;
  if (name == "relu") return Activation::Relu;
  if (name == "silu" || name == "swish") return Activation::Silu;
  c.fail(std::string(key) + " '" + name + "' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu)");
}

AttentionConfig attention(int heads, int kv_heads, int head_dim, bool qkv_bias, bool out_bias) {
  AttentionConfig a;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.key_size = head_dim;
  a.value_size = head_dim;
  a.qkv_bias = qkv_bias;
  a.out_bias = out_bias;
  return a;
}

// hidden / heads, or config.json's head_dim where the family reads one (Llama, Qwen2).
int head_dim_of(const HfConfig& c, int hidden, int heads, const char* hidden_key, const char* heads_key,
                bool explicit_allowed) {
  if (heads < 1) c.fail(std::string(heads_key) + " must be >= 1");
  if (explicit_allowed && c.find("head_dim")) return c.integer("head_dim");
  if (hidden % heads != 0)
    c.fail(std::string(hidden_key) + " (" + std::to_string(hidden) + ") is not a multiple of " + heads_key + " (" +
           std::to_string(heads) + ")");
  return hidden / heads;
}

// Maps `layers` encoder layers, each at `prefix` + l + ".", onto encoder.{l}.*.
void add_encoder_layers(Sources& s, int layers, const std::string& prefix, const EncoderLayerNames& names) {
  for (int l = 0; l < layers; ++l) {
    const std::string n = "encoder." + std::to_string(l) + ".";
    const std::string h = prefix + std::to_string(l) + ".";
    s.linear(n + "attn.q", h + names.q, true);
    s.linear(n + "attn.k", h + names.k, true);
    s.linear(n + "attn.v", h + names.v, true);
    s.linear(n + "attn.o", h + names.o, true);
    s.norm(n + "attn_norm", h + names.attn_norm, true);
    s.linear(n + "ffn.up", h + names.up, true);
    s.linear(n + "ffn.down", h + names.down, true);
    s.norm(n + "ffn_norm", h + names.ffn_norm, true);
  }
}

// Maps a BERT-style MLM head — decoder(LayerNorm(act(dense(h)))) + bias, the decoder tied to the word
// embeddings unless `tied` is false — from its Hugging Face names.
void add_mlm_head(Layout& layout, Sources& s, bool tied, const std::string& dense, const std::string& norm,
                  const std::string& bias, const std::string& decoder_weight) {
  layout.config.lm_head = LmHeadConfig{true, tied, true};
  s.linear("head_transform", dense, true);
  s.norm("head_norm", norm, true);
  s.copy("head_bias", bias);
  if (!tied) s.copy("head_weight", decoder_weight);
}

// A bare encoder file has no MLM head. Rather than inventing one, the logits are the final hidden
// states scored against the (tied) token embeddings with no transform and no bias: h · Eᵀ, which ranks
// tokens by embedding similarity but is not a trained MLM prediction.
void no_mlm_head(Layout& layout) {
  layout.config.lm_head = LmHeadConfig{false, true, false};
  layout.config.objective = "none";
  layout.note = "no MLM head in the file: logits = final hidden · token embeddingsᵀ";
}

// ---- HfConfig ----------------------------------------------------------------------------------

const json* HfConfig::find(const char* key) const {
  auto it = json_.find(key);
  if (it == json_.end() || it->is_null()) return nullptr;
  return &*it;
}

void HfConfig::fail(const std::string& text) const { throw std::runtime_error(where_ + ": " + text); }

int HfConfig::integer(const char* key) const {
  const json* value = find(key);
  if (!value) fail(std::string("'") + key + "' is missing");
  if (!value->is_number_integer()) fail(std::string("'") + key + "' must be an integer, got " + value->dump());
  const int64_t v = value->get<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail(std::string("'") + key + "' is out of range: " + value->dump());
  return static_cast<int>(v);
}

int HfConfig::integer(const char* key, int fallback) const { return find(key) ? integer(key) : fallback; }

double HfConfig::number(const char* key, double fallback) const {
  const json* value = find(key);
  if (!value) return fallback;
  if (!value->is_number()) fail(std::string("'") + key + "' must be a number, got " + value->dump());
  return value->get<double>();
}

bool HfConfig::boolean(const char* key, bool fallback) const {
  const json* value = find(key);
  if (!value) return fallback;
  if (!value->is_boolean()) fail(std::string("'") + key + "' must be true or false, got " + value->dump());
  return value->get<bool>();
}

std::string HfConfig::string(const char* key, const std::string& fallback) const {
  const json* value = find(key);
  if (!value) return fallback;
  if (!value->is_string()) fail(std::string("'") + key + "' must be a string, got " + value->dump());
  return value->get<std::string>();
}

// ---- families ----------------------------------------------------------------------------------

std::string family_of(const std::string& arch) {
  if (arch == "BertModel" || arch == "BertForMaskedLM" || arch == "BertForPreTraining") return "bert";
  if (arch == "RobertaModel" || arch == "RobertaForMaskedLM") return "roberta";
  if (arch == "DistilBertModel" || arch == "DistilBertForMaskedLM") return "distilbert";
  if (arch == "GPT2Model" || arch == "GPT2LMHeadModel") return "gpt2";
  if (arch == "LlamaModel" || arch == "LlamaForCausalLM") return "llama";
  if (arch == "Qwen2Model" || arch == "Qwen2ForCausalLM") return "qwen2";
  if (arch == "MistralModel" || arch == "MistralForCausalLM") return "mistral";
  if (arch == "Qwen3Model" || arch == "Qwen3ForCausalLM") return "qwen3";
  if (arch == "ElectraForMaskedLM" || arch == "ElectraForPreTraining" || arch == "ElectraModel") return "electra";
  if (arch == "AlbertForMaskedLM" || arch == "AlbertForPreTraining" || arch == "AlbertModel") return "albert";
  if (auto seq2seq = seq2seq_family_of(arch); !seq2seq.empty()) return seq2seq;
  return gemma_family_of(arch);
}

std::string supported_architectures() {
  return "BertModel, BertForMaskedLM, BertForPreTraining, RobertaModel, RobertaForMaskedLM, DistilBertModel, DistilBertForMaskedLM, GPT2Model, GPT2LMHeadModel, LlamaModel, LlamaForCausalLM, "
         "Qwen2Model, Qwen2ForCausalLM, MistralModel, MistralForCausalLM, Qwen3Model, Qwen3ForCausalLM, "
         "ElectraForMaskedLM, ElectraForPreTraining, ElectraModel, AlbertForMaskedLM, AlbertForPreTraining, AlbertModel, " +
         gemma_architectures() + ", " + seq2seq_architectures();
}

// modeling_bert.py: post-LN encoder; embeddings = LayerNorm(word + position + token_type).
// modeling_roberta.py: the same encoder under "roberta."; positions count from padding_idx + 1 (an
// input without padding reads rows pad+1, pad+2, …: the importer keeps the table from that row, so
// position t reads row t); the LM head is lm_head.{dense, layer_norm, decoder (tied), bias}.
Layout bert_layout(const HfConfig& c, const std::string& arch, const HasTensor& has) {
  const bool roberta = family_of(arch) == "roberta";
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
  m.ffn = FfnConfig{FfnKind::Mlp, c.integer("intermediate_size"), activation_from(c, "hidden_act", "gelu"), true};
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
  add_encoder_layers(s, stack.layers, p + "encoder.layer.",
                     {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                      "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"});
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
Layout distilbert_layout(const HfConfig& c, const std::string& arch, const HasTensor& has) {
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
  m.ffn = FfnConfig{FfnKind::Mlp, c.integer("hidden_dim", 3072), activation_from(c, "activation", "gelu"), true};
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
  add_encoder_layers(s, stack.layers, p + "transformer.layer.",
                     {"attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
                      "ffn.lin1", "ffn.lin2", "output_layer_norm"});
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

// modeling_gpt2.py: pre-LN decoder, Conv1D weights stored [in, out], fused c_attn = [q | k | v].
Layout gpt2_layout(const HfConfig& c, const std::string& arch, const HasTensor& has) {
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
  m.ffn = FfnConfig{FfnKind::Mlp, inner, activation_from(c, "activation_function", "gelu_new"), true};
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
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".";
    const std::string h = p + "h." + std::to_string(l) + ".";
    s.norm(n + "attn_norm", h + "ln_1", true);
    const char* parts[] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      TensorSource w{h + "attn.c_attn.weight", {D, 3 * D}, 1, int64_t(i) * D, D, true};
      s.add(n + "attn." + parts[i] + ".weight", w);
      TensorSource b{h + "attn.c_attn.bias", {3 * D}, 0, int64_t(i) * D, D, false};
      s.add(n + "attn." + parts[i] + ".bias", b);
    }
    s.transposed(n + "attn.o.weight", h + "attn.c_proj.weight");
    s.copy(n + "attn.o.bias", h + "attn.c_proj.bias");
    s.norm(n + "ffn_norm", h + "ln_2", true);
    s.transposed(n + "ffn.up.weight", h + "mlp.c_fc.weight");
    s.copy(n + "ffn.up.bias", h + "mlp.c_fc.bias");
    s.transposed(n + "ffn.down.weight", h + "mlp.c_proj.weight");
    s.copy(n + "ffn.down.bias", h + "mlp.c_proj.bias");
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

// modeling_llama.py / modeling_qwen2.py: pre-RMSNorm decoder, RoPE in the rotate-half layout
// (HeadLab's own, so no permutation), GQA, SwiGLU. Qwen2 adds q/k/v biases.
// RoPE settings as transformers writes them: 4.x puts `rope_theta` (and `rope_scaling`, `partial_rotary_factor`)
// at the top level; 5.x puts everything into `rope_parameters` ({"rope_type", "rope_theta", …}), or one
// such object per layer type. Every key that changes the rotation is read or refused, never ignored: a
// folder whose θ went unread would run with θ = 10⁴ and give wrong maps without a word.
struct RopeSettings {
  double theta = 10000.0;
  double rotary_fraction = 1.0;
};

// One rope_parameters / rope_scaling object: its type must be plain RoPE and every key known.
void read_rope_object(const HfConfig& c, const json& object, const std::string& key, RopeSettings& out,
                      bool& theta_seen) {
  if (!object.is_object()) c.fail("'" + key + "' must be an object, got " + object.dump());
  std::string type = "default";
  for (const char* type_key : {"rope_type", "type"}) {
    if (!object.contains(type_key)) continue;
    if (!object[type_key].is_string()) c.fail("'" + key + "." + type_key + "' must be a string, got " + object[type_key].dump());
    type = object[type_key].get<std::string>();
  }
  if (type != "default")
    c.fail(key + " type '" + type + "' is not supported (HeadLab implements plain RoPE; " + key + " " + object.dump() + ")");
  for (const auto& [name, value] : object.items()) {
    if (name == "rope_type" || name == "type") continue;
    if (name == "rope_theta") {
      if (!value.is_number()) c.fail("'" + key + ".rope_theta' must be a number, got " + value.dump());
      out.theta = value.get<double>();
      theta_seen = true;
    } else if (name == "partial_rotary_factor") {
      if (!value.is_number()) c.fail("'" + key + ".partial_rotary_factor' must be a number, got " + value.dump());
      out.rotary_fraction = value.get<double>();
    } else {
      c.fail("'" + key + "." + name + "' is not supported (plain RoPE reads only rope_type, rope_theta and "
             "partial_rotary_factor; " + key + " " + object.dump() + ")");
    }
  }
}

RopeSettings read_rope(const HfConfig& c) {
  RopeSettings rope;
  rope.theta = c.number("rope_theta", 10000.0);
  rope.rotary_fraction = c.number("partial_rotary_factor", 1.0);
  const bool top_level_theta = c.find("rope_theta") != nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const json* value = c.find(key);
    if (!value) continue;
    if (!value->is_object()) c.fail(std::string("'") + key + "' must be an object, got " + value->dump());
    // transformers 5 keys the parameters by layer type when layers differ ({"full_attention": {…},
    // "sliding_attention": {…}}); one plain-RoPE model has one set, so every entry must agree.
    const bool per_layer_type = !value->empty() && std::all_of(value->begin(), value->end(),
                                                               [](const json& v) { return v.is_object(); });
    std::vector<std::pair<std::string, json>> objects;
    if (per_layer_type) {
      for (const auto& [type, object] : value->items()) objects.emplace_back(std::string(key) + "." + type, object);
    } else {
      objects.emplace_back(key, *value);
    }
    std::optional<double> first_theta;
    for (const auto& [where, object] : objects) {
      RopeSettings one = rope;
      bool theta_seen = false;
      read_rope_object(c, object, where, one, theta_seen);
      if (theta_seen && top_level_theta && one.theta != c.number("rope_theta", 0.0))
        c.fail("rope_theta " + json(c.number("rope_theta", 0.0)).dump() + " and '" + where + ".rope_theta' " +
               json(one.theta).dump() + " disagree");
      if (first_theta && (*first_theta != one.theta || rope.rotary_fraction != one.rotary_fraction))
        c.fail("'" + std::string(key) + "' gives different rope_theta or partial_rotary_factor per layer type (" +
               value->dump() + "); HeadLab runs one RoPE for every layer");
      first_theta = one.theta;
      rope = one;
    }
  }
  if (!(rope.theta > 0) || !std::isfinite(rope.theta)) c.fail("rope_theta must be a positive number, got " + json(rope.theta).dump());
  return rope;
}

// transformers 5 lists every layer's attention type; HeadLab runs one attention pattern in every
// layer, so a layer of another type is refused rather than run with the wrong mask.
void require_layer_types(const HfConfig& c, const std::string& allowed) {
  const json* types = c.find("layer_types");
  if (!types) return;
  if (!types->is_array()) c.fail("'layer_types' must be a list, got " + types->dump());
  for (size_t l = 0; l < types->size(); ++l) {
    const json& t = (*types)[l];
    if (!t.is_string()) c.fail("'layer_types[" + std::to_string(l) + "]' must be a string, got " + t.dump());
    if (t.get<std::string>() != allowed)
      c.fail("layer_types[" + std::to_string(l) + "] '" + t.get<std::string>() +
             "' is not supported (HeadLab runs every layer of this folder as " + allowed + ")");
  }
}

// modeling_llama.py / modeling_qwen2.py / modeling_mistral.py: pre-RMSNorm decoder, RoPE in the
// rotate-half layout (HeadLab's own, so no permutation), GQA, SwiGLU. Qwen2 adds q/k/v biases;
// Mistral a sliding window over the keys; Qwen3 (modeling_qwen3.py) a per-head RMSNorm of queries
// and keys before RoPE.
Layout rope_decoder_layout(const HfConfig& c, const std::string& family, int default_positions, double theta) {
  Layout layout;
  ModelConfig& m = layout.config;
  m.family = family;
  m.kind = StackKind::Decoder;
  m.objective = "causal";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("hidden_size");
  m.max_positions = c.integer("max_position_embeddings", default_positions);
  m.positions = PositionKind::Rope;
  m.rope_theta = static_cast<float>(theta);
  m.rope_dim = 0;  // the whole head
  m.norm = NormKind::RMSNorm;
  m.norm_eps = static_cast<float>(c.number("rms_norm_eps", 1e-6));
  m.norm_placement = NormPlacement::Pre;
  return layout;
}

Layout llama_layout(const HfConfig& c, const std::string& arch, const HasTensor& has, const std::string& family) {
  const bool qwen2 = family == "qwen2", mistral = family == "mistral", qwen3 = family == "qwen3";
  const RopeSettings rope = read_rope(c);
  // Mistral's sliding_window (null = none): query i sees keys j with i − sliding_window < j ≤ i, i.e.
  // sliding_window keys counting itself; HeadLab's pattern.window w lets a causal query see its w
  // predecessors and itself, so w = sliding_window − 1.
  int sliding_window = 0;
  if (mistral && c.find("sliding_window")) {
    sliding_window = c.integer("sliding_window");
    if (sliding_window < 1) c.fail("sliding_window must be >= 1 (or null), got " + std::to_string(sliding_window));
  }
  require_layer_types(c, sliding_window > 0 ? "sliding_attention" : "full_attention");
  const double rotary_fraction = rope.rotary_fraction;
  if (rotary_fraction != 1.0) c.fail("partial_rotary_factor " + std::to_string(rotary_fraction) + " is not supported");
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu" && act != "swish") c.fail("hidden_act '" + act + "' is not supported (the SwiGLU MLP needs silu)");
  if ((qwen2 || qwen3) && c.boolean("use_sliding_window", false))
    c.fail("use_sliding_window true is not supported (a per-layer sliding window)");

  Layout layout = rope_decoder_layout(c, family, qwen2 ? 32768 : 2048, rope.theta);
  ModelConfig& m = layout.config;
  const int D = m.hidden_size;
  m.final_norm = true;
  const bool mlp_bias = c.boolean("mlp_bias", false);
  m.ffn = FfnConfig{FfnKind::SwiGLU, c.integer("intermediate_size"), Activation::Silu, mlp_bias};
  const int heads = c.integer("num_attention_heads");
  const int kv_heads = c.integer("num_key_value_heads", heads);
  const int head_dim = head_dim_of(c, D, heads, "hidden_size", "num_attention_heads", true);
  // Llama: attention_bias puts a bias on q, k, v and o; Qwen2: always on q, k, v and never on o.
  const bool attention_bias = qwen2 ? false : c.boolean("attention_bias", false);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, kv_heads, head_dim, qwen2 || attention_bias, attention_bias);
  if (sliding_window > 0) stack.attention.pattern.window = sliding_window - 1;
  if (qwen3) {
    stack.attention.qk_norm = true;
    stack.attention.qk_norm_eps = m.norm_eps;  // Qwen3RMSNorm(head_dim, eps=rms_norm_eps)
  }
  m.decoder = stack;

  Sources s(has);
  const std::string p = has("model.embed_tokens.weight") ? "model." : "";  // *ForCausalLM vs *Model
  s.copy("tokens.weight", p + "embed_tokens.weight");
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".";
    const std::string h = p + "layers." + std::to_string(l) + ".";
    s.norm(n + "attn_norm", h + "input_layernorm", false);
    s.linear(n + "attn.q", h + "self_attn.q_proj", stack.attention.qkv_bias);
    s.linear(n + "attn.k", h + "self_attn.k_proj", stack.attention.qkv_bias);
    s.linear(n + "attn.v", h + "self_attn.v_proj", stack.attention.qkv_bias);
    s.linear(n + "attn.o", h + "self_attn.o_proj", stack.attention.out_bias);
    if (qwen3) {
      s.copy(n + "attn.q_norm", h + "self_attn.q_norm.weight");
      s.copy(n + "attn.k_norm", h + "self_attn.k_norm.weight");
    }
    s.norm(n + "ffn_norm", h + "post_attention_layernorm", false);
    s.linear(n + "ffn.gate", h + "mlp.gate_proj", mlp_bias);
    s.linear(n + "ffn.up", h + "mlp.up_proj", mlp_bias);
    s.linear(n + "ffn.down", h + "mlp.down_proj", mlp_bias);
  }
  s.norm("decoder_norm", p + "norm", false);
  bool tied = c.boolean("tie_word_embeddings", false);
  if (!tied && arch.size() > 5 && ends_with(arch, "Model") && !has("lm_head.weight")) {
    tied = true;  // LlamaModel / Qwen2Model files carry no head
    layout.note = "no lm_head in the file: logits = final hidden · token embeddingsᵀ";
  }
  m.lm_head = LmHeadConfig{false, tied, false};
  if (!tied) s.copy("head_weight", "lm_head.weight");
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
