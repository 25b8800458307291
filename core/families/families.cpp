// The family table and the pieces every family's layout is built from. Each family's layout lives in
// its own file under core/families/ and transcribes the config fields and weight names of one
// `transformers` modeling file; the numerics tests compare each with an independent float64
// transcription in tests/data/hf/make_fixtures.py (and fixtures_seq2seq.py).
#include "core/families/families.h"
#include "core/families/family_parts.h"

#include <stdexcept>

namespace headlab::core::hf {

using nlohmann::json;

// ---- the family table ----------------------------------------------------------------------------

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      {"bert", "modeling_bert.py", {"BertModel", "BertForMaskedLM", "BertForPreTraining"}, bert_layout},
      {"roberta", "modeling_roberta.py", {"RobertaModel", "RobertaForMaskedLM"}, bert_layout},
      {"distilbert", "modeling_distilbert.py", {"DistilBertModel", "DistilBertForMaskedLM"}, distilbert_layout},
      {"gpt2", "modeling_gpt2.py", {"GPT2Model", "GPT2LMHeadModel"}, gpt2_layout},
      {"llama", "modeling_llama.py", {"LlamaModel", "LlamaForCausalLM"}, llama_layout},
      {"qwen2", "modeling_qwen2.py", {"Qwen2Model", "Qwen2ForCausalLM"}, llama_layout},
      {"mistral", "modeling_mistral.py", {"MistralModel", "MistralForCausalLM"}, llama_layout},
      {"qwen3", "modeling_qwen3.py", {"Qwen3Model", "Qwen3ForCausalLM"}, llama_layout},
      {"phi3", "modeling_phi3.py", {"Phi3Model", "Phi3ForCausalLM"}, llama_layout},
      {"smollm3", "modeling_smollm3.py", {"SmolLM3Model", "SmolLM3ForCausalLM"}, llama_layout},
      {"olmo", "modeling_olmo.py", {"OlmoModel", "OlmoForCausalLM"}, llama_layout},
      {"olmo2", "modeling_olmo2.py", {"Olmo2Model", "Olmo2ForCausalLM"}, llama_layout},
      {"phi", "modeling_phi.py", {"PhiModel", "PhiForCausalLM"}, phi_layout},
      {"falcon", "modeling_falcon.py", {"FalconModel", "FalconForCausalLM"}, falcon_layout},
      {"opt", "modeling_opt.py", {"OPTModel", "OPTForCausalLM"}, opt_layout},
      {"gpt_neox", "modeling_gpt_neox.py", {"GPTNeoXModel", "GPTNeoXForCausalLM"}, gpt_neox_layout},
      {"gptj", "modeling_gptj.py", {"GPTJModel", "GPTJForCausalLM"}, gptj_layout},
      {"bloom", "modeling_bloom.py", {"BloomModel", "BloomForCausalLM"}, bloom_layout},
      {"mixtral", "modeling_mixtral.py", {"MixtralModel", "MixtralForCausalLM"}, mixtral_layout},
      {"gpt_oss", "modeling_gpt_oss.py", {"GptOssModel", "GptOssForCausalLM"}, gpt_oss_layout},
      {"deepseek_v2", "modeling_deepseek_v2.py", {"DeepseekV2Model", "DeepseekV2ForCausalLM"}, deepseek_layout},
      {"deepseek_v3", "modeling_deepseek_v3.py", {"DeepseekV3Model", "DeepseekV3ForCausalLM"}, deepseek_layout},
      {"electra", "modeling_electra.py", {"ElectraForMaskedLM", "ElectraForPreTraining", "ElectraModel"}, electra_layout},
      {"modernbert", "modeling_modernbert.py", {"ModernBertModel", "ModernBertForMaskedLM"}, modernbert_layout},
      {"deberta_v2", "modeling_deberta_v2.py", {"DebertaV2ForMaskedLM", "DebertaV2Model"}, deberta_layout},
      {"albert", "modeling_albert.py", {"AlbertForMaskedLM", "AlbertForPreTraining", "AlbertModel"}, albert_layout},
      {"gemma", "modeling_gemma.py", {"GemmaModel", "GemmaForCausalLM"}, gemma_layout},
      {"gemma2", "modeling_gemma2.py", {"Gemma2Model", "Gemma2ForCausalLM"}, gemma_layout},
      {"gemma3", "modeling_gemma3.py", {"Gemma3TextModel", "Gemma3ForCausalLM"}, gemma_layout,
       {"Gemma3ForConditionalGeneration"}},
      {"bart", "modeling_bart.py", {"BartForConditionalGeneration", "BartModel"}, bart_layout},
      {"marian", "modeling_marian.py", {"MarianMTModel", "MarianModel"}, bart_layout},
      {"mbart", "modeling_mbart.py", {"MBartForConditionalGeneration", "MBartModel"}, bart_layout},
      {"t5", "modeling_t5.py", {"T5ForConditionalGeneration", "T5Model"}, t5_layout},
  };
  return table;
}

const Family* family_of(const std::string& architecture) {
  for (const Family& family : families()) {
    for (const char* name : family.architectures)
      if (architecture == name) return &family;
    for (const char* name : family.refused)
      if (architecture == name) return &family;
  }
  return nullptr;
}

std::string supported_architectures() {
  std::string text;
  for (const Family& family : families())
    for (const char* name : family.architectures) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

// ---- shared pieces -------------------------------------------------------------------------------

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

// Each row of `table`, for every layer: `stack`.{l}.NATIVE ← `prefix`{l}.HF.
void add_layers(Sources& s, const std::string& stack, int layers, const std::string& prefix, const LayerTable& table,
                const LayerBiases& biases, const std::string& infix) {
  for (int l = 0; l < layers; ++l) {
    const std::string n = stack + "." + std::to_string(l) + ".";
    const std::string h = prefix + std::to_string(l) + "." + infix;
    for (const LayerTensor& row : table) {
      const bool bias = row.bias == Bias::Always || (row.bias == Bias::Qkv && biases.qkv) ||
                        (row.bias == Bias::Out && biases.out) || (row.bias == Bias::Ffn && biases.ffn);
      switch (row.piece) {
        case Piece::Linear: s.linear(n + row.native, h + row.hf, bias); break;
        case Piece::Conv1D:
          s.transposed(n + row.native + ".weight", h + row.hf + ".weight");
          if (bias) s.copy(n + row.native + ".bias", h + row.hf + ".bias");
          break;
        case Piece::Norm: s.norm(n + row.native, h + row.hf, bias); break;
        case Piece::Tensor: s.copy(n + row.native, h + row.hf); break;
      }
    }
  }
}

void add_per_head_qkv(Sources& s, const std::string& stack, int layers, const std::string& prefix,
                      const std::string& infix, int heads, int head_dim, int hidden, bool bias) {
  const int64_t rows = 3 * int64_t(heads) * head_dim;
  const char* parts[] = {"q", "k", "v"};
  for (int l = 0; l < layers; ++l) {
    const std::string n = stack + "." + std::to_string(l) + ".attn.";
    const std::string h = prefix + std::to_string(l) + "." + infix;
    for (int i = 0; i < 3; ++i) {
      for (const bool is_bias : {false, true}) {
        if (is_bias && !bias) continue;
        TensorSource t;
        t.name = h + (is_bias ? ".bias" : ".weight");
        t.stored_shape = is_bias ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, hidden};
        t.slice_dim = 0;
        t.slice_begin = int64_t(i) * head_dim;
        t.slice_count = head_dim;
        t.slice_groups = heads;
        s.add(n + parts[i] + (is_bias ? ".bias" : ".weight"), t);
      }
    }
  }
}

// modeling_bert.py's BertLayer; RoBERTa and ELECTRA name their layers the same.
const LayerTable kBertLayer = {
    {"attn.q", "attention.self.query", Piece::Linear, Bias::Always},
    {"attn.k", "attention.self.key", Piece::Linear, Bias::Always},
    {"attn.v", "attention.self.value", Piece::Linear, Bias::Always},
    {"attn.o", "attention.output.dense", Piece::Linear, Bias::Always},
    {"attn_norm", "attention.output.LayerNorm", Piece::Norm, Bias::Always},
    {"ffn.up", "intermediate.dense", Piece::Linear, Bias::Always},
    {"ffn.down", "output.dense", Piece::Linear, Bias::Always},
    {"ffn_norm", "output.LayerNorm", Piece::Norm, Bias::Always},
};

// modeling_llama.py's LlamaDecoderLayer; Qwen2, Qwen3, Mistral, SmolLM3, OLMo and Gemma name their layers the same.
const LayerTable kLlamaLayer = {
    {"attn_norm", "input_layernorm", Piece::Norm},
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Qkv},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Qkv},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Qkv},
    {"attn.o", "self_attn.o_proj", Piece::Linear, Bias::Out},
    {"ffn_norm", "post_attention_layernorm", Piece::Norm},
    {"ffn.gate", "mlp.gate_proj", Piece::Linear, Bias::Ffn},
    {"ffn.up", "mlp.up_proj", Piece::Linear, Bias::Ffn},
    {"ffn.down", "mlp.down_proj", Piece::Linear, Bias::Ffn},
};

const LayerTable kQkNormLayer = {
    {"attn.q_norm", "self_attn.q_norm.weight", Piece::Tensor},
    {"attn.k_norm", "self_attn.k_norm.weight", Piece::Tensor},
};

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

bool add_decoder_head(Layout& layout, Sources& s, const FamilyInput& in, bool tied_default, const std::string& head,
                      bool bias) {
  bool tied = in.config.boolean("tie_word_embeddings", tied_default);
  if (!tied && ends_with(in.architecture, "Model") && !in.has(head + ".weight")) {
    tied = true;  // LlamaModel, GPTNeoXModel, … files carry no head
    layout.note = "no " + head + " in the file: logits = final hidden · token embeddingsᵀ";
  }
  layout.config.lm_head = LmHeadConfig{false, tied, bias && !tied};
  if (!tied) {
    s.copy("head_weight", head + ".weight");
    if (bias) s.copy("head_bias", head + ".bias");
  }
  return tied;
}

// A bare encoder file has no MLM head. Rather than inventing one, the logits are the final hidden
// states scored against the (tied) token embeddings with no transform and no bias: h · Eᵀ, which ranks
// tokens by embedding similarity but is not a trained MLM prediction.
void no_mlm_head(Layout& layout) {
  layout.config.lm_head = LmHeadConfig{false, true, false};
  layout.config.objective = "none";
  layout.note = "no MLM head in the file: logits = final hidden · token embeddingsᵀ";
}

// The start of every RoPE decoder (llama.cpp, gemma.cpp): see family_parts.h.
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

}  // namespace headlab::core::hf
