// Llama (modeling_llama.py), Qwen2 (modeling_qwen2.py), Qwen3 (modeling_qwen3.py), Mistral
// (modeling_mistral.py), Phi-3 (modeling_phi3.py), SmolLM3 (modeling_smollm3.py) and OLMo
// (modeling_olmo.py) and OLMo 2 (modeling_olmo2.py): RoPE decoders → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

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

// SmolLM3's NoPE layers: `no_rope_layers` holds one entry per layer (at least), 1 where the layer
// rotates and 0 where it does not; without it, every no_rope_layer_interval-th layer (4) is NoPE.
std::vector<int> smollm3_nope_layers(const HfConfig& c, int layers) {
  std::vector<int> nope;
  const json* list = c.find("no_rope_layers");
  if (!list) {
    const int every = c.integer("no_rope_layer_interval", 4);
    if (every < 1) c.fail("no_rope_layer_interval must be >= 1, got " + std::to_string(every));
    for (int l = 0; l < layers; ++l)
      if ((l + 1) % every == 0) nope.push_back(l);
    return nope;
  }
  if (!list->is_array() || static_cast<int>(list->size()) < layers)
    c.fail("'no_rope_layers' must list at least num_hidden_layers (" + std::to_string(layers) + ") entries, got " +
           list->dump());
  for (int l = 0; l < layers; ++l) {
    const json& v = (*list)[l];
    if (!v.is_number_integer() || (v != 0 && v != 1))
      c.fail("no_rope_layers[" + std::to_string(l) + "] must be 0 (no RoPE) or 1 (RoPE), got " + v.dump());
    if (v == 0) nope.push_back(l);
  }
  return nope;
}

// modeling_phi3.py's Phi3DecoderLayer: Llama's norms and output projections; its fused qkv_proj and
// gate_up_proj are split in llama_layout.
const LayerTable kPhi3Layer = {
    {"attn_norm", "input_layernorm", Piece::Norm},
    {"attn.o", "self_attn.o_proj", Piece::Linear},
    {"ffn_norm", "post_attention_layernorm", Piece::Norm},
    {"ffn.down", "mlp.down_proj", Piece::Linear},
};


// modeling_olmo2.py's Olmo2DecoderLayer: no norm before attention or the MLP, an RMSNorm after each
// (post_attention_layernorm, post_feedforward_layernorm), and RMSNorms of the whole query and key
// projections.
const LayerTable kOlmo2Layer = {
    {"attn.q", "self_attn.q_proj", Piece::Linear, Bias::Qkv},
    {"attn.k", "self_attn.k_proj", Piece::Linear, Bias::Qkv},
    {"attn.v", "self_attn.v_proj", Piece::Linear, Bias::Qkv},
    {"attn.o", "self_attn.o_proj", Piece::Linear, Bias::Out},
    {"attn.q_norm", "self_attn.q_norm.weight", Piece::Tensor},
    {"attn.k_norm", "self_attn.k_norm.weight", Piece::Tensor},
    {"attn_out_norm", "post_attention_layernorm", Piece::Norm},
    {"ffn.gate", "mlp.gate_proj", Piece::Linear},
    {"ffn.up", "mlp.up_proj", Piece::Linear},
    {"ffn.down", "mlp.down_proj", Piece::Linear},
    {"ffn_out_norm", "post_feedforward_layernorm", Piece::Norm},
};

}  // namespace

// modeling_llama.py / modeling_qwen2.py / modeling_mistral.py: pre-RMSNorm decoder, RoPE in the
// rotate-half layout (HeadLab's own, so no permutation), GQA, SwiGLU. Qwen2 adds q/k/v biases;
// Mistral a sliding window over the keys; Qwen3 (modeling_qwen3.py) a per-head RMSNorm of queries
// and keys before RoPE. Phi-3 (modeling_phi3.py): Llama's block with fused projections
// (qkv_proj = [q | k | v], gate_up_proj = [gate | up] along the outputs, no biases), Mistral's
// sliding window when `sliding_window` is set, and partial rotary embeddings
// (partial_rotary_factor: the first int(head_dim · factor) dims of each head rotate, rotate-half, the
// rest pass — the engine's rope_dim). SmolLM3 (modeling_smollm3.py): Llama's block whose layers marked
// 0 in no_rope_layers skip the rotary embedding (the engine's nope_layers), tied embeddings by default.
// OLMo (modeling_olmo.py; Groeneveld et al. 2024, arXiv 2402.00838): Llama's block with LayerNorms that
// have no weights (OlmoLayerNorm: F.layer_norm without weight or bias, eps 1e-5), imported as LayerNorms
// of weight 1 and bias 0, and its clip_qkv (q, k and v clamped as they leave their projections; OLMo-7B-0424
// and OLMo 1.7 write 8) as the engine's qkv_clip. OLMo 2 (modeling_olmo2.py;
// OLMo et al. 2024, arXiv 2501.00656): Llama's projections with RMSNorms of the whole query and key
// projections before RoPE (the engine's qk_norm_whole) and a norm after each sublayer instead of before
// it, h ← h + norm(sublayer(h)) (sublayer_output_norm without sublayer_input_norm).
Layout llama_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const HasTensor& has = in.has;
  const std::string& family = in.family;
  const bool qwen2 = family == "qwen2", mistral = family == "mistral", qwen3 = family == "qwen3",
             phi3 = family == "phi3", smollm3 = family == "smollm3", olmo = family == "olmo",
             olmo2 = family == "olmo2";
  const int default_positions = qwen2 || smollm3 ? 32768 : phi3 ? 4096 : 2048;  // the configs' defaults
  const RopeSettings rope =
      read_rope(c, c.integer("max_position_embeddings", default_positions), smollm3 ? 2000000.0 : 10000.0);
  // Mistral's sliding_window (null = none): query i sees keys j with i − sliding_window < j ≤ i, i.e.
  // sliding_window keys counting itself; HeadLab's pattern.window w lets a causal query see its w
  // predecessors and itself, so w = sliding_window − 1.
  int sliding_window = 0;
  if ((mistral || phi3) && c.find("sliding_window")) {
    sliding_window = c.integer("sliding_window");
    if (sliding_window < 1) c.fail("sliding_window must be >= 1 (or null), got " + std::to_string(sliding_window));
  }
  require_layer_types(c, sliding_window > 0 ? "sliding_attention" : "full_attention");
  const double rotary_fraction = rope.rotary_fraction;
  if (rotary_fraction != 1.0 && !phi3)
    c.fail("partial_rotary_factor " + std::to_string(rotary_fraction) + " is not supported (modeling_" + family +
           ".py rotates the whole head)");
  if (!(rotary_fraction > 0 && rotary_fraction <= 1))
    c.fail("partial_rotary_factor must be in (0, 1], got " + std::to_string(rotary_fraction));
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu" && act != "swish") c.fail("hidden_act '" + act + "' is not supported (the SwiGLU MLP needs silu)");
  float clip_qkv = 0.0f;  // OlmoConfig's default: null, no clamp
  if (olmo && c.find("clip_qkv")) {
    clip_qkv = static_cast<float>(c.number("clip_qkv", 0.0));
    if (!(clip_qkv > 0) || !std::isfinite(clip_qkv)) c.fail("clip_qkv must be a positive number or null");
  }
  if ((qwen2 || qwen3 || smollm3) && c.boolean("use_sliding_window", false))
    c.fail("use_sliding_window true is not supported (a per-layer sliding window)");

  Layout layout = rope_decoder_layout(c, family, default_positions, rope.theta);
  ModelConfig& m = layout.config;
  m.rope_scaling = rope.scaling;
  const int D = m.hidden_size;
  m.final_norm = true;
  if (olmo) {
    m.norm = NormKind::LayerNorm;
    m.norm_eps = 1e-5f;  // OlmoLayerNorm's, fixed
  }
  if (olmo2) {
    m.norm_eps = static_cast<float>(c.number("rms_norm_eps", 1e-5));  // Olmo2Config's default
    m.sublayer_input_norm = false;
    m.sublayer_output_norm = true;
  }
  const bool mlp_bias = c.boolean("mlp_bias", false);
  m.ffn = ffn_config(FfnKind::SwiGLU, c.integer("intermediate_size"), Activation::Silu, mlp_bias);
  const int heads = c.integer("num_attention_heads");
  const int kv_heads = c.integer("num_key_value_heads", heads);
  const int head_dim = head_dim_of(c, D, heads, "hidden_size", "num_attention_heads", true);
  // Llama: attention_bias puts a bias on q, k, v and o; Qwen2: always on q, k, v and never on o.
  const bool attention_bias = qwen2 || phi3 ? false : c.boolean("attention_bias", false);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, kv_heads, head_dim, qwen2 || attention_bias, attention_bias);
  if (sliding_window > 0) stack.attention.pattern.window = sliding_window - 1;
  stack.attention.qkv_clip = clip_qkv;
  if (qwen3 || olmo2) {
    stack.attention.qk_norm = true;
    stack.attention.qk_norm_eps = m.norm_eps;  // Qwen3RMSNorm(head_dim, eps=rms_norm_eps); OLMo 2's alike
    stack.attention.qk_norm_whole = olmo2;     // Olmo2RMSNorm(heads · head_dim) and (kv_heads · head_dim)
  }
  if (rotary_fraction != 1.0) {
    m.rope_dim = static_cast<int>(head_dim * rotary_fraction);  // transformers: int(head_dim · factor)
    if (m.rope_dim < 2 || m.rope_dim % 2 != 0)
      c.fail("partial_rotary_factor " + std::to_string(rotary_fraction) + " rotates " + std::to_string(m.rope_dim) +
             " of " + std::to_string(head_dim) + " dims per head; RoPE needs an even number >= 2");
  }
  if (smollm3) stack.nope_layers = smollm3_nope_layers(c, stack.layers);
  m.decoder = stack;

  Sources s(has);
  const std::string p = has("model.embed_tokens.weight") ? "model." : "";  // *ForCausalLM vs *Model
  s.copy("tokens.weight", p + "embed_tokens.weight");
  if (phi3) {
    if (mlp_bias) c.fail("mlp_bias true is not supported (Phi-3's projections have no biases)");
    add_layers(s, "decoder", stack.layers, p + "layers.", kPhi3Layer);
    // The fused projections, split along their output rows: what a table row cannot say.
    const int64_t q_rows = int64_t(heads) * head_dim, kv_rows = int64_t(kv_heads) * head_dim;
    const int64_t inner = m.ffn.inner_size;
    for (int l = 0; l < stack.layers; ++l) {
      const std::string n = "decoder." + std::to_string(l) + ".";
      const std::string h = p + "layers." + std::to_string(l) + ".";
      const int64_t qkv_rows = q_rows + 2 * kv_rows;
      s.add(n + "attn.q.weight", {h + "self_attn.qkv_proj.weight", {qkv_rows, D}, 0, 0, q_rows, false});
      s.add(n + "attn.k.weight", {h + "self_attn.qkv_proj.weight", {qkv_rows, D}, 0, q_rows, kv_rows, false});
      s.add(n + "attn.v.weight", {h + "self_attn.qkv_proj.weight", {qkv_rows, D}, 0, q_rows + kv_rows, kv_rows, false});
      s.add(n + "ffn.gate.weight", {h + "mlp.gate_up_proj.weight", {2 * inner, D}, 0, 0, inner, false});
      s.add(n + "ffn.up.weight", {h + "mlp.gate_up_proj.weight", {2 * inner, D}, 0, inner, inner, false});
    }
  } else if (olmo2) {
    if (mlp_bias) c.fail("mlp_bias true is not supported (OLMo 2's MLP has no biases)");
    add_layers(s, "decoder", stack.layers, p + "layers.", kOlmo2Layer,
               {stack.attention.qkv_bias, stack.attention.out_bias, false});
  } else {
    add_layers(s, "decoder", stack.layers, p + "layers.", kLlamaLayer,
               {stack.attention.qkv_bias, stack.attention.out_bias, mlp_bias});
  }
  if (olmo) {  // weightless LayerNorms: weight 1, bias 0 in place of the table's norm rows
    auto weightless = [&](const std::string& native) {
      s.constant(native + ".weight", 1.0f, "(OlmoLayerNorm has no weight)");
      s.constant(native + ".bias", 0.0f, "(OlmoLayerNorm has no bias)");
    };
    for (int l = 0; l < stack.layers; ++l)
      for (const char* norm : {"attn_norm", "ffn_norm"}) weightless("decoder." + std::to_string(l) + "." + norm);
    weightless("decoder_norm");
  }
  if (qwen3) add_layers(s, "decoder", stack.layers, p + "layers.", kQkNormLayer);
  if (!olmo) s.norm("decoder_norm", p + "norm", false);
  const bool tied = add_decoder_head(layout, s, in, smollm3);  // SmolLM3Config ties by default
  layout.sources = s.take();
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
