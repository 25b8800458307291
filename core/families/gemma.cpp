// Gemma, Gemma 2 and Gemma 3 (text) → ModelConfig + native parameter sources, transcribed from
// transformers' modeling_gemma.py, modeling_gemma2.py and modeling_gemma3.py (Gemma3ForCausalLM, config
// model_type "gemma3_text").
//
// Gemma (Gemma Team 2024, "Gemma: Open Models Based on Gemini Research and Technology", arXiv
// 2403.08295): Llama's pre-RMSNorm block with RMSNorm weights stored as offsets from 1, embeddings
// multiplied by √hidden, a GeGLU MLP (gelu_pytorch_tanh), head_dim 256, MHA (7B) or MQA (2B), tied
// embeddings, logit scale head_dim^-½. Its MLP reads `hidden_activation`; the first releases' config.json
// also carries the legacy "hidden_act": "gelu", which transformers 4.38–4.47 ignored for
// gelu_pytorch_tanh (the activation Gemma was trained with) and later versions read. HeadLab reads
// hidden_activation and, without it, takes gelu_pytorch_tanh as 4.38–4.47 did.
//
// Gemma 2 (Gemma Team 2024, "Gemma 2: Improving Open Language Models at a Practical Size", arXiv
// 2408.00118): a pre-RMSNorm decoder whose layers alternate a sliding window of `sliding_window` keys
// (even layers) with global attention; attention logits and final logits soft-capped
// (cap · tanh(x / cap)); four norms per layer (input, post-attention, pre- and post-feedforward); RMSNorm
// weights stored as offsets from 1 (output · (1 + w)); embeddings multiplied by √hidden; logit scale
// query_pre_attn_scalar^-½; a GeGLU MLP (gelu_pytorch_tanh); GQA; tied embeddings.
// Gemma 3 (Gemma Team 2025, "Gemma 3 Technical Report", arXiv 2503.19786): the same block with q/k
// RMSNorm instead of attention soft-capping, five local layers to each global one, and RoPE base
// rope_local_base_freq (10⁴) in local layers, rope_theta (10⁶) in global ones.
//
// The numerics tests compare the result with an independent float64 transcription in
// tests/data/hf/make_fixtures.py.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::core::hf {
namespace {

using nlohmann::json;

constexpr const char* kSliding = "sliding_attention";
constexpr const char* kFull = "full_attention";

// sqrt(hidden) as transformers multiplies it: a float32 value cast to the embeddings' dtype, so for
// BF16 or F16 weights the factor itself is rounded to 8 or 11 significant bits (round half to even).
double embedding_scale(int hidden, const std::string& dtype) {
  const double scale = static_cast<float>(std::sqrt(static_cast<double>(hidden)));
  const int bits = dtype == "BF16" ? 8 : dtype == "F16" ? 11 : dtype == "F32" ? 24 : 0;
  if (bits == 0) return scale;
  int exponent = 0;
  const double mantissa = std::frexp(scale, &exponent);  // scale = mantissa · 2^exponent, mantissa in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, bits)), exponent - bits);
}

// Each layer's type, from `layer_types` (transformers ≥ 4.53 and 5) or, without it, the pattern it
// replaced: layer l is global when (l + 1) is a multiple of sliding_window_pattern (Gemma 2: 2, so even
// layers slide; Gemma 3: 6). As in transformers, a written `layer_types` decides and the pattern keys
// beside it are not read (transformers 5 writes its private `_sliding_window_pattern` default, 6, into
// every Gemma 3 config, whatever its layer_types say).
std::vector<bool> sliding_layers(const HfConfig& c, int layers, bool gemma3) {
  const json* types = c.find("layer_types");
  if (types) {
    if (!types->is_array() || static_cast<int>(types->size()) != layers)
      c.fail("'layer_types' must be a list of num_hidden_layers (" + std::to_string(layers) + ") names, got " +
             types->dump());
    std::vector<bool> sliding(layers);
    for (int l = 0; l < layers; ++l) {
      const json& t = (*types)[l];
      if (!t.is_string() || (t != kSliding && t != kFull))
        c.fail("layer_types[" + std::to_string(l) + "] " + t.dump() + " is not supported ('" + kSliding + "' or '" +
               kFull + "')");
      sliding[l] = t == kSliding;
    }
    return sliding;
  }
  std::optional<int> pattern;
  for (const char* key : {"sliding_window_pattern", "_sliding_window_pattern"})
    if (c.find(key)) {
      const int p = c.integer(key);
      if (p < 1) c.fail(std::string(key) + " must be >= 1, got " + std::to_string(p));
      if (pattern && *pattern != p) c.fail("sliding_window_pattern and _sliding_window_pattern disagree");
      pattern = p;
    }
  std::vector<bool> sliding(layers);
  const int every = pattern.value_or(gemma3 ? 6 : 2);
  for (int l = 0; l < layers; ++l) sliding[l] = (l + 1) % every != 0;
  return sliding;
}

struct GemmaRope {
  double global_theta = 10000.0;  // full_attention layers
  double local_theta = 10000.0;   // sliding_attention layers
  RopeScaling global_scaling;     // Gemma 3's global layers (4B and larger: linear × 8); local layers stay plain
};

// One RoPE object of a Gemma config (core/families/rope_parameters.h): its θ, when given, goes to
// `theta`; a scaled rope type is taken for Gemma 3's global layers only (transformers scales those
// alone) and refused anywhere else; partial rotation is refused.
void read_gemma_rope_object(const HfConfig& c, const json& object, const std::string& key, int max_positions,
                            bool scalable, std::optional<double>& theta, RopeScaling& scaling) {
  const RopeObject read = read_rope_object(c, object, key, max_positions);
  if (read.rotary_fraction && *read.rotary_fraction != 1.0)
    c.fail("'" + key + ".partial_rotary_factor' " + json(*read.rotary_fraction).dump() + " is not supported");
  if (read.scaling.kind != RopeScalingKind::None) {
    if (!scalable)
      c.fail(key + " type \"" + to_string(read.scaling.kind) + "\" is not supported here (HeadLab scales the RoPE of "
             "Gemma's layers and Gemma 3's global layers, not Gemma 2's or Gemma 3's local ones; " + key + " " +
             object.dump() + ")");
    scaling = read.scaling;
  }
  theta = read.theta;
}

// transformers 4.x: rope_theta for every layer (Gemma, Gemma 2) or for global layers with
// rope_local_base_freq for local ones (Gemma 3), and rope_scaling (every layer in Gemma, global layers
// only in Gemma 3, none in Gemma 2). transformers 5: rope_parameters, one object for every layer or one
// per layer type. Values given twice must agree.
GemmaRope read_gemma_rope(const HfConfig& c, bool gemma3, bool gemma1, int max_positions) {
  GemmaRope rope;
  rope.global_theta = c.number("rope_theta", gemma3 ? 1000000.0 : 10000.0);
  rope.local_theta = gemma3 ? c.number("rope_local_base_freq", 10000.0) : rope.global_theta;
  if (c.number("partial_rotary_factor", 1.0) != 1.0) c.fail("partial_rotary_factor is not supported");
  auto agree = [&](const std::optional<double>& read, double& target, const char* top_key, bool top_given,
                   const std::string& where) {
    if (!read) return;
    if (top_given && *read != target)
      c.fail(std::string(top_key) + " " + json(target).dump() + " and '" + where + ".rope_theta' " + json(*read).dump() +
             " disagree");
    target = *read;
  };
  const bool top_global = c.find("rope_theta") != nullptr;
  const bool top_local = gemma3 ? c.find("rope_local_base_freq") != nullptr : top_global;
  if (const json* scaling = c.find("rope_scaling")) {
    std::optional<double> theta;
    read_gemma_rope_object(c, *scaling, "rope_scaling", max_positions, gemma3 || gemma1, theta, rope.global_scaling);
    agree(theta, rope.global_theta, "rope_theta", top_global, "rope_scaling");
    if (!gemma3) agree(theta, rope.local_theta, "rope_theta", top_local, "rope_scaling");
  }
  if (const json* parameters = c.find("rope_parameters")) {
    if (!parameters->is_object()) c.fail("'rope_parameters' must be an object, got " + parameters->dump());
    const bool per_type = parameters->contains(kSliding) || parameters->contains(kFull);
    if (per_type) {
      for (const auto& [type, object] : parameters->items()) {
        if (type != kSliding && type != kFull)
          c.fail("'rope_parameters." + type + "' is not supported (layer types: " + kSliding + ", " + kFull + ")");
        std::optional<double> theta;
        read_gemma_rope_object(c, object, "rope_parameters." + type, max_positions, (gemma3 || gemma1) && type == kFull,
                               theta, rope.global_scaling);
        if (type == kFull)
          agree(theta, rope.global_theta, "rope_theta", top_global, "rope_parameters." + type);
        else
          agree(theta, rope.local_theta, gemma3 ? "rope_local_base_freq" : "rope_theta", top_local,
                "rope_parameters." + type);
      }
    } else {
      // One object: every layer's RoPE in Gemma 2; in Gemma 3 the global layers' (local layers keep
      // rope_local_base_freq, as 4.x's rope_scaling applies to global layers only).
      std::optional<double> theta;
      read_gemma_rope_object(c, *parameters, "rope_parameters", max_positions, gemma3 || gemma1, theta,
                             rope.global_scaling);
      agree(theta, rope.global_theta, "rope_theta", top_global, "rope_parameters");
      if (!gemma3) agree(theta, rope.local_theta, "rope_theta", top_global, "rope_parameters");
    }
  }
  for (double theta : {rope.global_theta, rope.local_theta})
    if (!(theta > 0) || !std::isfinite(theta)) c.fail("RoPE bases must be positive numbers");
  return rope;
}

// A soft-capping value: the family default when the key is absent, none when it is null (Gemma 3
// writes attn_logit_softcapping null), else a positive number.
float softcap(const HfConfig& c, const char* key, float fallback) {
  if (!c.contains(key)) return fallback;
  if (!c.find(key)) return 0.0f;
  const double cap = c.number(key, 0.0);
  if (!(cap > 0) || !std::isfinite(cap)) c.fail(std::string("'") + key + "' must be a positive number or null");
  return static_cast<float>(cap);
}

// modeling_gemma2.py's Gemma2DecoderLayer (Gemma 3's adds kQkNormLayer): four norms per layer.
const LayerTable kGemmaLayer = {
    {"attn_norm", "input_layernorm", Piece::Norm},
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Qkv},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Qkv},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Qkv},
    {"attn.o", "self_attn.o_proj", Piece::Linear, Bias::Out},
    {"attn_out_norm", "post_attention_layernorm", Piece::Norm},
    {"ffn_norm", "pre_feedforward_layernorm", Piece::Norm},
    {"ffn_out_norm", "post_feedforward_layernorm", Piece::Norm},
    {"ffn.gate", "mlp.gate_proj", Piece::Linear},
    {"ffn.up", "mlp.up_proj", Piece::Linear},
    {"ffn.down", "mlp.down_proj", Piece::Linear},
};

}  // namespace

Layout gemma_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const std::string& arch = in.architecture;
  const HasTensor& has = in.has;
  const TensorDType& dtype_of = in.dtype_of;
  const std::string& family = in.family;
  const bool gemma3 = family == "gemma3", gemma1 = family == "gemma";
  if (arch == "Gemma3ForConditionalGeneration" || c.find("text_config") || c.find("vision_config"))
    c.fail(arch + " (Gemma 3 with its vision tower) is not supported: HeadLab imports the text-only "
           "Gemma3ForCausalLM (config model_type 'gemma3_text')");
  if (c.boolean("use_bidirectional_attention", false))
    c.fail("use_bidirectional_attention true is not supported (HeadLab runs Gemma as a causal decoder)");
  const std::string act = c.string("hidden_activation", "gelu_pytorch_tanh");
  if (act != "gelu_pytorch_tanh" && act != "gelu_new" && act != "gelu_fast")
    c.fail("hidden_activation '" + act + "' is not supported (Gemma's GeGLU uses gelu_pytorch_tanh)");
  const int default_positions = gemma3 ? 131072 : 8192;  // the configs' defaults
  const GemmaRope rope = read_gemma_rope(c, gemma3, gemma1, c.integer("max_position_embeddings", default_positions));

  Layout layout = rope_decoder_layout(c, family, default_positions, rope.global_theta);
  ModelConfig& m = layout.config;
  m.rope_scaling = rope.global_scaling;
  const int D = m.hidden_size;
  m.norm_weight_offset = 1.0f;      // Gemma2RMSNorm / Gemma3RMSNorm: x̂ · (1 + w)
  m.sublayer_output_norm = !gemma1;  // Gemma 2/3: post_attention_layernorm, post_feedforward_layernorm
  m.final_norm = true;
  const std::string p = has("model.embed_tokens.weight") ? "model." : "";  // *ForCausalLM vs *Model
  m.embedding_scale = static_cast<float>(embedding_scale(D, dtype_of(p + "embed_tokens.weight")));
  m.ffn = ffn_config(FfnKind::SwiGLU, c.integer("intermediate_size"), Activation::GeluTanh, false);

  const int heads = c.integer("num_attention_heads");
  const int kv_heads = c.integer("num_key_value_heads");
  const int head_dim = c.integer("head_dim", 256);
  const bool bias = c.boolean("attention_bias", false);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  if (stack.layers < 1) c.fail("num_hidden_layers must be >= 1");
  AttentionConfig& a = stack.attention;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.key_size = a.value_size = head_dim;
  a.qkv_bias = a.out_bias = bias;
  if (!gemma1) {  // Gemma: head_dim^-½, no soft-capping
    const double query_scalar = c.number("query_pre_attn_scalar", 256.0);
    if (!(query_scalar > 0)) c.fail("query_pre_attn_scalar must be > 0");
    a.scale = static_cast<float>(std::pow(query_scalar, -0.5));
    a.logit_softcap = softcap(c, "attn_logit_softcapping", gemma3 ? 0.0f : 50.0f);
  }
  if (gemma3) {
    a.qk_norm = true;  // Gemma3RMSNorm(head_dim, eps=rms_norm_eps), offsets from 1 like every Gemma norm
    a.qk_norm_eps = m.norm_eps;
    a.qk_norm_weight_offset = 1.0f;
  }

  // Local layers: query i sees keys j with i − sliding_window < j ≤ i (sliding_window keys counting
  // itself); HeadLab's causal pattern.window w sees w predecessors and itself, so w = sliding_window − 1.
  // Gemma has no sliding layers (GemmaConfig has no sliding_window or layer_types).
  const std::vector<bool> sliding = gemma1 ? std::vector<bool>(stack.layers) : sliding_layers(c, stack.layers, gemma3);
  LocalLayers local;
  for (int l = 0; l < stack.layers; ++l)
    if (sliding[l]) local.layers.push_back(l);
  if (!local.layers.empty()) {
    if (c.contains("sliding_window") && !c.find("sliding_window"))
      c.fail("'sliding_window' is null, but layer " + std::to_string(local.layers[0]) + " is a sliding-window layer");
    const int window = c.integer("sliding_window", 4096);
    if (window < 2) c.fail("sliding_window must be >= 2, got " + std::to_string(window));
    local.pattern.window = window - 1;
    // Local layers read a table of their own when their base differs or the global one is scaled.
    if (rope.local_theta != rope.global_theta || rope.global_scaling.kind != RopeScalingKind::None)
      local.rope_theta = static_cast<float>(rope.local_theta);
    stack.local = local;
  }
  m.decoder = stack;

  Sources s(has);
  s.copy("tokens.weight", p + "embed_tokens.weight");
  add_layers(s, "decoder", stack.layers, p + "layers.", gemma1 ? kLlamaLayer : kGemmaLayer, {bias, bias, false});
  if (gemma3) add_layers(s, "decoder", stack.layers, p + "layers.", kQkNormLayer);
  s.norm("decoder_norm", p + "norm", false);
  bool tied = c.boolean("tie_word_embeddings", true);
  if (!tied && p.empty() && !has("lm_head.weight")) {
    tied = true;  // Gemma2Model / Gemma3TextModel files carry no head
    layout.note = "no lm_head in the file: logits = final hidden · token embeddingsᵀ";
  }
  m.lm_head = LmHeadConfig{false, tied, false};
  m.lm_head.softcap = gemma1 ? 0.0f : softcap(c, "final_logit_softcapping", gemma3 ? 0.0f : 30.0f);
  if (!tied) s.copy("head_weight", "lm_head.weight");
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return (tied && name == "lm_head.weight") ||
           (name.size() >= 19 && name.compare(name.size() - 19, 19, "rotary_emb.inv_freq") == 0);
  };
  return layout;
}

}  // namespace headlab::core::hf
