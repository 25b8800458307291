// ModernBERT (modeling_modernbert.py; Warner et al. 2024, arXiv 2412.13663) → ModelConfig + native
// parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"

#include <string>
#include <vector>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

// The layers' attention types: transformers 5's `layer_types`, else global every
// global_attn_every_n_layers-th layer (0, n, 2n, …) and local (sliding) between.
std::vector<int> local_layers(const HfConfig& c, int layers) {
  std::vector<int> local;
  if (const json* types = c.find("layer_types")) {
    if (!types->is_array() || static_cast<int>(types->size()) != layers)
      c.fail("'layer_types' must list num_hidden_layers (" + std::to_string(layers) + ") names, got " + types->dump());
    for (int l = 0; l < layers; ++l) {
      const json& t = (*types)[l];
      if (t == "sliding_attention")
        local.push_back(l);
      else if (t != "full_attention")
        c.fail("layer_types[" + std::to_string(l) + "] " + t.dump() + " is not supported ('sliding_attention' or 'full_attention')");
    }
    return local;
  }
  const int every = c.integer("global_attn_every_n_layers", 3);
  if (every < 1) c.fail("global_attn_every_n_layers must be >= 1, got " + std::to_string(every));
  for (int l = 0; l < layers; ++l)
    if (l % every != 0) local.push_back(l);
  return local;
}

// RoPE bases: global_rope_theta / local_rope_theta (transformers 4), or rope_parameters keyed by
// layer type (transformers 5), default rope only.
std::pair<double, double> rope_bases(const HfConfig& c) {
  double global = c.number("global_rope_theta", 160000.0), local = c.number("local_rope_theta", 10000.0);
  if (const json* params = c.find("rope_parameters")) {
    if (!params->is_object()) c.fail("'rope_parameters' must be an object, got " + params->dump());
    for (const auto& [type, object] : params->items()) {
      if (!object.is_object() || object.value("rope_type", "default") != "default" || !object.contains("rope_theta") ||
          !object["rope_theta"].is_number() || (type != "full_attention" && type != "sliding_attention"))
        c.fail("rope_parameters." + type + " " + object.dump() +
               " is not supported (ModernBERT: default RoPE with a rope_theta per full_attention/sliding_attention)");
      (type == "full_attention" ? global : local) = object["rope_theta"].get<double>();
    }
  }
  if (!(global > 0) || !(local > 0)) c.fail("the RoPE bases must be positive numbers");
  return {global, local};
}

}  // namespace

// modeling_modernbert.py (ModernBertForMaskedLM, ModernBertModel): a pre-LN encoder of LayerNorms
// without biases (norm_bias false: imported as bias 0), embeddings followed by a norm and no position
// table, RoPE with base global_rope_theta in global layers and local_rope_theta in local ones, which
// see keys within local_attention / 2 positions on either side (the engine's local layers); layer 0's
// attn_norm is the identity (the engine's first_attention_norm false); the fused Wqkv [3 · D, D] is
// q, k, v in that order; GeGLU MLP act(Wi's first half) ⊙ Wi's second half (HeadLab's gate, up); a
// final norm; the MLM head dense → act → norm → decoder tied to the embeddings, with decoder_bias.
Layout modernbert_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const auto [global_theta, local_theta] = rope_bases(c);
  Layout layout;
  ModelConfig& m = layout.config;
  m.family = in.family;
  m.kind = StackKind::Encoder;
  m.objective = "mlm";
  m.vocab_size = c.integer("vocab_size");
  m.hidden_size = c.integer("hidden_size");
  m.max_positions = c.integer("max_position_embeddings", 8192);
  m.positions = PositionKind::Rope;
  m.rope_theta = static_cast<float>(global_theta);
  m.norm = NormKind::LayerNorm;
  m.norm_eps = static_cast<float>(c.number("norm_eps", 1e-5));
  m.norm_placement = NormPlacement::Pre;
  m.embedding_norm = true;
  m.final_norm = true;
  m.first_attention_norm = false;
  const Activation act = activation_from(c, "hidden_activation", "gelu");
  if (c.string("classifier_activation", c.string("hidden_activation", "gelu")) != c.string("hidden_activation", "gelu"))
    c.fail("classifier_activation differs from hidden_activation (HeadLab's MLM head uses the FFN's activation)");
  const bool mlp_bias = c.boolean("mlp_bias", false), norm_bias = c.boolean("norm_bias", false);
  const bool attention_bias = c.boolean("attention_bias", false);
  m.ffn = ffn_config(FfnKind::SwiGLU, c.integer("intermediate_size"), act, mlp_bias);
  const int heads = c.integer("num_attention_heads");
  const int D = m.hidden_size;
  const int hd = head_dim_of(c, D, heads, "hidden_size", "num_attention_heads");
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers");
  stack.attention = attention(heads, heads, hd, attention_bias, attention_bias);
  const std::vector<int> local = local_layers(c, stack.layers);
  if (!local.empty()) {
    const int window = c.integer("local_attention", 128);
    if (window < 2) c.fail("local_attention must be >= 2, got " + std::to_string(window));
    LocalLayers l;
    l.layers = local;
    l.pattern.window = window / 2;
    l.rope_theta = static_cast<float>(local_theta);
    stack.local = l;
  }
  m.encoder = stack;

  Sources s(in.has);
  const std::string p = in.has("model.embeddings.tok_embeddings.weight") ? "model." : "";
  s.copy("tokens.weight", p + "embeddings.tok_embeddings.weight");
  auto norm = [&](const std::string& native, const std::string& hf) {
    s.copy(native + ".weight", hf + ".weight");
    if (norm_bias)
      s.copy(native + ".bias", hf + ".bias");
    else
      s.constant(native + ".bias", 0.0f, "(norm_bias false: no bias)");
  };
  norm("embed_norm", p + "embeddings.norm");
  const int64_t inner = m.ffn.inner_size;
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "encoder." + std::to_string(l) + ".", h = p + "layers." + std::to_string(l) + ".";
    if (l > 0) norm(n + "attn_norm", h + "attn_norm");
    norm(n + "ffn_norm", h + "mlp_norm");
    const char* parts[] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      s.add(n + "attn." + parts[i] + ".weight", {h + "attn.Wqkv.weight", {3 * int64_t(D), D}, 0, i * int64_t(D), D, false});
      if (attention_bias) s.add(n + "attn." + parts[i] + ".bias", {h + "attn.Wqkv.bias", {3 * int64_t(D)}, 0, i * int64_t(D), D, false});
    }
    s.linear(n + "attn.o", h + "attn.Wo", attention_bias);
    s.add(n + "ffn.gate.weight", {h + "mlp.Wi.weight", {2 * inner, D}, 0, 0, inner, false});
    s.add(n + "ffn.up.weight", {h + "mlp.Wi.weight", {2 * inner, D}, 0, inner, inner, false});
    if (mlp_bias) {
      s.add(n + "ffn.gate.bias", {h + "mlp.Wi.bias", {2 * inner}, 0, 0, inner, false});
      s.add(n + "ffn.up.bias", {h + "mlp.Wi.bias", {2 * inner}, 0, inner, inner, false});
    }
    s.linear(n + "ffn.down", h + "mlp.Wo", mlp_bias);
  }
  norm("encoder_norm", p + "final_norm");
  const bool mlm = in.has("head.dense.weight");
  if (mlm) {
    const bool decoder_bias = c.boolean("decoder_bias", true);
    m.lm_head = LmHeadConfig{true, c.boolean("tie_word_embeddings", true), decoder_bias};
    s.copy("head_transform.weight", "head.dense.weight");
    if (c.boolean("classifier_bias", false))
      s.copy("head_transform.bias", "head.dense.bias");
    else
      s.constant("head_transform.bias", 0.0f, "(classifier_bias false: no bias)");
    norm("head_norm", "head.norm");
    if (decoder_bias) s.copy("head_bias", "decoder.bias");
    if (!m.lm_head.tied) s.copy("head_weight", "decoder.weight");
  } else {
    no_mlm_head(layout);
  }
  layout.sources = s.take();
  const bool tied = m.lm_head.tied;
  layout.ignorable = [tied](const std::string& name) { return tied && name == "decoder.weight"; };
  return layout;
}

}  // namespace headlab::core::hf
