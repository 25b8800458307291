// Internal to the families: the pieces every family's layout is built from (typed activations,
// attention configs, the source collector, layer tables and the shared MLM-head mappings), defined
// in core/families/families.cpp and used by each file of core/families/.
#pragma once

#include "core/families/families.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace headlab::core::hf {

bool ends_with(const std::string& text, const std::string& suffix);
bool starts_with(const std::string& text, const std::string& prefix);

// `hidden_act` / `activation_function` → HeadLab's activations (names from transformers' ACT2FN);
// an unknown name fails naming the key.
Activation activation_from(const HfConfig& c, const char* key, const std::string& fallback);

// An FFN of `kind` with `inner` units, `act` and biases or not (not a mixture of experts).
inline FfnConfig ffn_config(FfnKind kind, int inner, Activation act, bool bias) {
  FfnConfig f;
  f.kind = kind, f.inner_size = inner, f.activation = act, f.bias = bias;
  return f;
}

// One attention config: `heads` query heads, `kv_heads` key/value heads of `head_dim`.
AttentionConfig attention(int heads, int kv_heads, int head_dim, bool qkv_bias, bool out_bias);

// hidden / heads, or config.json's head_dim where the family reads one (Llama, Qwen2).
int head_dim_of(const HfConfig& c, int hidden, int heads, const char* hidden_key, const char* heads_key,
                bool explicit_allowed = false);

// The config every RoPE decoder family starts from (Llama, Qwen2/3, Mistral, Gemma): a causal
// decoder of vocab_size × hidden_size, RoPE with base `theta`, pre-norm RMSNorm with rms_norm_eps,
// max_position_embeddings (else `default_positions`). The family sets the rest.
Layout rope_decoder_layout(const HfConfig& c, const std::string& family, int default_positions, double theta);

// Collects native name → source entries.
class Sources {
 public:
  explicit Sources(const HasTensor& has) : has_(has) {}

  void copy(const std::string& native, const std::string& name) {
    TensorSource s;
    s.name = name;
    map_[native] = s;
  }
  void transposed(const std::string& native, const std::string& name) {
    TensorSource s;
    s.name = name;
    s.transpose = true;
    map_[native] = s;
  }
  // A Linear: native.weight ← name.weight (+ native.bias ← name.bias).
  void linear(const std::string& native, const std::string& name, bool bias) {
    copy(native + ".weight", name + ".weight");
    if (bias) copy(native + ".bias", name + ".bias");
  }
  // A LayerNorm (weight/bias, or the gamma/beta of checkpoints converted from TensorFlow) or an
  // RMSNorm (weight only).
  void norm(const std::string& native, const std::string& name, bool bias) {
    copy(native + ".weight", first_present({name + ".weight", name + ".gamma"}));
    if (bias) copy(native + ".bias", first_present({name + ".bias", name + ".beta"}));
  }
  void add(const std::string& native, TensorSource source) { map_[native] = std::move(source); }
  // A parameter the file does not store: the constant `value` (`what` says why, for messages).
  void constant(const std::string& native, float value, const std::string& what) {
    TensorSource s;
    s.name = what;
    s.fill = value;
    map_[native] = s;
  }
  // The first name the checkpoint holds; the first one (for the error message) when none is.
  std::string first_present(std::initializer_list<std::string> names) const {
    for (const auto& n : names)
      if (has_(n)) return n;
    return *names.begin();
  }
  std::map<std::string, TensorSource> take() { return std::move(map_); }

 private:
  const HasTensor& has_;
  std::map<std::string, TensorSource> map_;
};

// ---- layer tables -------------------------------------------------------------------------------
// A family's layers as data: one row per piece of a layer, from HeadLab's native name to the
// checkpoint's, the way llama.cpp's TensorNameMap lists them.

// How the checkpoint stores a piece: a Linear (HF.weight [out, in], + HF.bias when its bias is on);
// GPT-2's Conv1D (the same, the weight stored transposed [in, out]); a norm (HF.weight or the
// TensorFlow-converted HF.gamma, + HF.bias / HF.beta when on); or one tensor copied under its name.
enum class Piece { Linear, Conv1D, Norm, Tensor };
// Which of the folder's switches (LayerBiases) puts a bias on a piece.
enum class Bias { None, Always, Qkv, Out, Ffn };

struct LayerTensor {
  const char* native;  // under {stack}.{l}. — e.g. "attn.q", "ffn_norm"
  const char* hf;      // under the checkpoint's layer prefix — e.g. "self_attn.q_proj"
  Piece piece;
  Bias bias = Bias::None;
};
using LayerTable = std::vector<LayerTensor>;

// The folder's bias switches, read from config.json by the family.
struct LayerBiases {
  bool qkv = false, out = false, ffn = false;
};

// Maps `layers` layers: native `stack`.{l}.NATIVE ← `prefix`{l}.`infix`HF for every row of `table`
// (the infix names a sub-layer where the family numbers them, as T5's "layer.1.").
void add_layers(Sources& s, const std::string& stack, int layers, const std::string& prefix, const LayerTable& table,
                const LayerBiases& biases = {}, const std::string& infix = "");

// A fused query_key_value laid out per head (GPT-NeoX, BLOOM): [heads · 3 · head_dim(, D)] whose rows
// of head h are that head's q, k, v in that order. Maps every layer's `stack`.{l}.attn.{q,k,v}.weight
// (+ .bias) ← `prefix`{l}.`infix`.weight / .bias with grouped slices.
void add_per_head_qkv(Sources& s, const std::string& stack, int layers, const std::string& prefix,
                      const std::string& infix, int heads, int head_dim, int hidden, bool bias);

// BERT's post-LN encoder layer (BERT, RoBERTa, ELECTRA): every piece with a bias.
extern const LayerTable kBertLayer;
// Llama's pre-norm decoder layer (input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
// mlp.{gate,up,down}_proj), which Qwen2/3, Mistral, SmolLM3, OLMo and Gemma share.
extern const LayerTable kLlamaLayer;
// The per-head RMSNorm of queries and keys before RoPE (Qwen3, Gemma 3): self_attn.{q,k}_norm.weight.
extern const LayerTable kQkNormLayer;

// Maps a BERT-style MLM head — decoder(LayerNorm(act(dense(h)))) + bias, the decoder tied to the word
// embeddings unless `tied` is false — from its Hugging Face names.
void add_mlm_head(Layout& layout, Sources& s, bool tied, const std::string& dense, const std::string& norm,
                  const std::string& bias, const std::string& decoder_weight);

// The LM head of a causal decoder from `head` ("lm_head", GPT-NeoX's "embed_out"): its own weight
// (and `head`.bias when `bias`) unless tie_word_embeddings (default `tied_default`) ties it to the
// token embeddings; a bare *Model file without the head is scored against the embeddings, and the
// model's note says so. Returns whether the head is tied.
bool add_decoder_head(Layout& layout, Sources& s, const FamilyInput& in, bool tied_default,
                      const std::string& head = "lm_head", bool bias = false);

// A bare encoder file has no MLM head: the logits are the final hidden states scored against the
// (tied) token embeddings with no transform and no bias, and the model's note says so.
void no_mlm_head(Layout& layout);

}  // namespace headlab::core::hf
