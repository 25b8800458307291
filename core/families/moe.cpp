// Mixtral (modeling_mixtral.py) and gpt-oss (modeling_gpt_oss.py): RoPE decoders whose FFN is a
// mixture of experts (ModelConfig's FfnConfig::moe) → ModelConfig + native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <string>
#include <vector>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

// Llama's layer without its MLP rows (the experts take their place).
LayerTable attention_rows() {
  LayerTable rows;
  for (const LayerTensor& row : kLlamaLayer)
    if (!starts_with(row.native, "ffn.")) rows.push_back(row);
  return rows;
}

MoeConfig read_experts(const HfConfig& c, bool router_bias) {
  MoeConfig moe;
  moe.experts = c.integer("num_local_experts");
  moe.top_k = c.integer("num_experts_per_tok");
  moe.normalize = true;  // Mixtral renormalises the k weights; gpt-oss softmaxes the k logits: the same
  moe.router_bias = router_bias;
  if (moe.experts < 1 || moe.top_k < 1 || moe.top_k > moe.experts)
    c.fail("num_experts_per_tok (" + std::to_string(moe.top_k) + ") must be in 1..num_local_experts (" +
           std::to_string(moe.experts) + ")");
  return moe;
}

// The config both families share: vocabulary, hidden size, RoPE (with its scaling), RMSNorm, heads.
Layout moe_decoder(const HfConfig& c, const std::string& family, int default_positions, double default_theta,
                   bool attention_bias, StackConfig& stack) {
  const RopeSettings rope = read_rope(c, c.integer("max_position_embeddings", default_positions), default_theta);
  if (rope.rotary_fraction != 1.0)
    c.fail("partial_rotary_factor " + json(rope.rotary_fraction).dump() + " is not supported (modeling_" + family +
           ".py rotates the whole head)");
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu" && act != "swish") c.fail("hidden_act '" + act + "' is not supported (the experts' GLU needs silu)");
  Layout layout = rope_decoder_layout(c, family, default_positions, rope.theta);
  ModelConfig& m = layout.config;
  m.rope_scaling = rope.scaling;
  m.norm_eps = static_cast<float>(c.number("rms_norm_eps", 1e-5));  // both configs' default
  m.final_norm = true;
  const int heads = c.integer("num_attention_heads");
  const int kv_heads = c.integer("num_key_value_heads", heads);
  const int head_dim = head_dim_of(c, m.hidden_size, heads, "hidden_size", "num_attention_heads", true);
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, kv_heads, head_dim, attention_bias, attention_bias);
  return layout;
}

// Query i sees keys j with i − sliding_window < j ≤ i (create_sliding_window_causal_mask): HeadLab's
// causal window w counts the query's predecessors, so w = sliding_window − 1.
int sliding_window_of(const HfConfig& c) {
  if (!c.find("sliding_window")) return 0;
  const int window = c.integer("sliding_window");
  if (window < 1) c.fail("sliding_window must be >= 1 (or null), got " + std::to_string(window));
  return window - 1;
}

// The untied head of both families (a bare *Model file: scored against the embeddings).
void untied_head(Layout& layout, Sources& s, const FamilyInput& in) {
  const bool tied = add_decoder_head(layout, s, in, false);
  layout.ignorable = [tied](const std::string& name) {
    return ends_with(name, "rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
  };
}

}  // namespace

// modeling_mixtral.py: Mistral's attention (GQA, RoPE, an optional sliding window over the keys) and
// MixtralSparseMoeBlock: a router `gate` [experts, D], softmax over every expert, the top
// num_experts_per_tok renormalised to sum 1, each expert w2(silu(w1 x) ⊙ w3 x) (HeadLab's gate, down,
// up). Router jitter is a training-time noise and has no effect here.
Layout mixtral_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  StackConfig stack;
  Layout layout = moe_decoder(c, in.family, 4096 * 32, 1000000.0, false, stack);
  ModelConfig& m = layout.config;
  stack.attention.pattern.window = sliding_window_of(c);
  if (const json* types = c.find("layer_types")) {
    const std::string want = stack.attention.pattern.window > 0 ? "sliding_attention" : "full_attention";
    for (const auto& t : *types)
      if (!t.is_string() || t.get<std::string>() != want)
        c.fail("layer_types " + types->dump() + " is not supported (HeadLab runs every Mixtral layer as " + want + ")");
  }
  m.ffn = ffn_config(FfnKind::SwiGLU, c.integer("intermediate_size"), Activation::Silu, false);
  m.ffn.moe = read_experts(c, false);
  m.decoder = stack;

  Sources s(in.has);
  const std::string p = in.has("model.embed_tokens.weight") ? "model." : "";
  s.copy("tokens.weight", p + "embed_tokens.weight");
  add_layers(s, "decoder", stack.layers, p + "layers.", attention_rows());
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".ffn.", h = p + "layers." + std::to_string(l) + ".block_sparse_moe.";
    s.copy(n + "router.weight", h + "gate.weight");
    for (int e = 0; e < m.ffn.moe->experts; ++e) {
      const std::string ne = n + "experts." + std::to_string(e) + ".", he = h + "experts." + std::to_string(e) + ".";
      s.copy(ne + "gate.weight", he + "w1.weight");
      s.copy(ne + "down.weight", he + "w2.weight");
      s.copy(ne + "up.weight", he + "w3.weight");
    }
  }
  s.norm("decoder_norm", p + "norm", false);
  untied_head(layout, s, in);
  layout.sources = s.take();
  return layout;
}

// modeling_gpt_oss.py (OpenAI 2025, the gpt-oss model card): q, k, v and o with biases, a learned sink
// logit per head (self_attn.sinks, the engine's AttentionConfig::sinks), layer_types alternating
// sliding_attention (a window of sliding_window keys) and full_attention, YaRN RoPE; and GptOssMLP:
// a router with a bias, the top num_experts_per_tok logits softmaxed, experts stored stacked —
// gate_up_proj [experts, D, 2I] read as x @ W, its gate the even and its up the odd columns, down_proj
// [experts, I, D] — running gpt-oss's clamped GLU (swiglu_limit, the engine's ClampedSwiGLU).
// Folders as the hub ships them keep the experts in MXFP4 (gate_up_proj_blocks / _scales and
// down_proj_blocks / _scales); those are dequantised as they are read (TensorSource::mxfp4_scales).
Layout gpt_oss_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  StackConfig stack;
  Layout layout = moe_decoder(c, in.family, 131072, 150000.0, c.boolean("attention_bias", true), stack);
  ModelConfig& m = layout.config;
  stack.attention.sinks = true;
  const int window = sliding_window_of(c);
  std::vector<int> sliding;
  if (const json* types = c.find("layer_types")) {
    if (!types->is_array() || static_cast<int>(types->size()) != stack.layers)
      c.fail("'layer_types' must list num_hidden_layers (" + std::to_string(stack.layers) + ") names, got " + types->dump());
    for (int l = 0; l < stack.layers; ++l) {
      const json& t = (*types)[l];
      if (t == "sliding_attention")
        sliding.push_back(l);
      else if (t != "full_attention")
        c.fail("layer_types[" + std::to_string(l) + "] " + t.dump() + " is not supported ('sliding_attention' or 'full_attention')");
    }
  } else {
    for (int l = 0; l < stack.layers; l += 2) sliding.push_back(l);  // GptOssConfig's default: even layers slide
  }
  if (!sliding.empty()) {
    if (window <= 0) c.fail("layer_types name sliding_attention layers but sliding_window is not set");
    LocalLayers local;
    local.layers = sliding;
    local.pattern.window = window;
    stack.local = local;
  }
  const int inner = c.integer("intermediate_size");
  m.ffn = ffn_config(FfnKind::ClampedSwiGLU, inner, Activation::Silu, true);
  m.ffn.limit = static_cast<float>(c.number("swiglu_limit", 7.0));
  m.ffn.moe = read_experts(c, true);
  m.decoder = stack;

  Sources s(in.has);
  const std::string p = in.has("model.embed_tokens.weight") ? "model." : "";
  s.copy("tokens.weight", p + "embed_tokens.weight");
  const bool bias = stack.attention.qkv_bias;
  add_layers(s, "decoder", stack.layers, p + "layers.", attention_rows(), {bias, bias, false});
  const int64_t E = m.ffn.moe->experts, D = m.hidden_size, I = inner;
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".", h = p + "layers." + std::to_string(l) + ".";
    const bool mxfp4 = in.has(h + "mlp.experts.gate_up_proj_blocks");
    s.copy(n + "attn.sinks", h + "self_attn.sinks");
    s.copy(n + "ffn.router.weight", h + "mlp.router.weight");
    s.copy(n + "ffn.router.bias", h + "mlp.router.bias");
    const std::string x = h + "mlp.experts.";
    for (int64_t e = 0; e < E; ++e) {
      const std::string ne = n + "ffn.experts." + std::to_string(e) + ".";
      auto part = [&](const std::string& name, std::vector<int64_t> shape, int dim, int64_t begin, int64_t count,
                      bool transpose, int64_t groups) {
        TensorSource t;
        t.name = x + name;
        if (mxfp4 && (name == "gate_up_proj" || name == "down_proj")) {
          t.name = x + name + "_blocks";
          t.mxfp4_scales = x + name + "_scales";
        }
        t.stored_shape = std::move(shape);
        t.select_index = e;
        t.slice_dim = dim, t.slice_begin = begin, t.slice_count = count, t.slice_groups = groups;
        t.transpose = transpose;
        return t;
      };
      // gate = gate_up[..., ::2], up = gate_up[..., 1::2]: one column of each pair, I pairs.
      s.add(ne + "gate.weight", part("gate_up_proj", {E, D, 2 * I}, 1, 0, 1, true, I));
      s.add(ne + "up.weight", part("gate_up_proj", {E, D, 2 * I}, 1, 1, 1, true, I));
      s.add(ne + "gate.bias", part("gate_up_proj_bias", {E, 2 * I}, 0, 0, 1, false, I));
      s.add(ne + "up.bias", part("gate_up_proj_bias", {E, 2 * I}, 0, 1, 1, false, I));
      s.add(ne + "down.weight", part("down_proj", {E, I, D}, -1, 0, 0, true, 0));
      s.add(ne + "down.bias", part("down_proj_bias", {E, D}, -1, 0, 0, false, 0));
    }
  }
  s.norm("decoder_norm", p + "norm", false);
  untied_head(layout, s, in);
  layout.sources = s.take();
  return layout;
}

}  // namespace headlab::core::hf
