// ModelConfig ⇄ config.json (schema in core/README.md) and the names of the config's enums.
#include "core/config.h"

#include "core/families/families.h"
#include "core/json_file.h"
#include "core/json_integer.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::core {
namespace {

using nlohmann::json;

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

constexpr EnumName<StackKind> kStackKinds[] = {
    {StackKind::Encoder, "encoder"}, {StackKind::Decoder, "decoder"}, {StackKind::EncoderDecoder, "encoder-decoder"}};
constexpr EnumName<NormKind> kNormKinds[] = {{NormKind::LayerNorm, "layernorm"}, {NormKind::RMSNorm, "rmsnorm"}};
constexpr EnumName<NormPlacement> kPlacements[] = {{NormPlacement::Pre, "pre"}, {NormPlacement::Post, "post"}};
constexpr EnumName<PositionKind> kPositions[] = {{PositionKind::None, "none"},
                                                 {PositionKind::Learned, "learned"},
                                                 {PositionKind::Sinusoidal, "sinusoidal"},
                                                 {PositionKind::Rope, "rope"},
                                                 {PositionKind::RopeLearned, "rope+learned"}};
constexpr EnumName<FfnKind> kFfnKinds[] = {{FfnKind::Mlp, "mlp"}, {FfnKind::SwiGLU, "swiglu"}, {FfnKind::None, "none"},
                                           {FfnKind::ClampedSwiGLU, "swiglu_clamped"}};
constexpr EnumName<Activation> kActivations[] = {{Activation::Gelu, "gelu"},
                                                 {Activation::GeluTanh, "gelu_tanh"},
                                                 {Activation::Relu, "relu"},
                                                 {Activation::Silu, "silu"}};
constexpr EnumName<RouterScores> kRouterScores[] = {{RouterScores::Softmax, "softmax"}, {RouterScores::Sigmoid, "sigmoid"}};
constexpr EnumName<GroupScore> kGroupScores[] = {{GroupScore::Max, "max"}, {GroupScore::TopTwoSum, "top2_sum"}};
constexpr EnumName<Scoring> kScorings[] = {{Scoring::Dot, "dot"}, {Scoring::Additive, "additive"}};
constexpr EnumName<SinusoidLayout> kSinusoidLayouts[] = {{SinusoidLayout::Interleaved, "interleaved"},
                                                          {SinusoidLayout::Halves, "halves"}};
constexpr EnumName<RopeScalingKind> kRopeScalings[] = {{RopeScalingKind::None, "default"},
                                                       {RopeScalingKind::Linear, "linear"},
                                                       {RopeScalingKind::Dynamic, "dynamic"},
                                                       {RopeScalingKind::Llama3, "llama3"},
                                                       {RopeScalingKind::Yarn, "yarn"}};

template <typename Enum, size_t N>
const char* enum_to_name(const EnumName<Enum> (&table)[N], Enum value) {
  for (const auto& entry : table)
    if (entry.value == value) return entry.name;
  return "?";
}

template <typename Enum, size_t N>
Enum enum_from_json(const EnumName<Enum> (&table)[N], const json& j, const std::string& where) {
  if (!j.is_string()) throw std::runtime_error(where + ": expected a string");
  const std::string text = j.get<std::string>();
  std::string allowed;
  for (const auto& entry : table) {
    if (text == entry.name) return entry.value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(entry.name);
  }
  throw std::runtime_error(where + ": unknown value '" + text + "' (expected one of: " + allowed + ")");
}

// Reads `key` from `object` if present; a value of the wrong type names the key path.
template <typename T>
void read(const json& object, const char* key, T& out, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  try {
    out = get_value<T>(*it);
  } catch (const json::out_of_range&) {
    throw std::runtime_error(where + "." + key + ": " + it->dump() + " is out of range");
  } catch (const json::exception&) {
    throw std::runtime_error(where + "." + key + ": wrong type (" + (it->is_number() ? it->dump() : it->type_name()) +
                             ")");
  }
}

template <typename Enum, size_t N>
void read_enum(const json& object, const char* key, const EnumName<Enum> (&table)[N], Enum& out,
               const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return;
  out = enum_from_json(table, *it, where + "." + key);
}

void check_known_keys(const json& object, std::initializer_list<const char*> keys, const std::string& where) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    bool known = false;
    for (const char* key : keys) known = known || it.key() == key;
    if (!known) throw std::runtime_error(where + ": unknown key '" + it.key() + "'");
  }
}

void require_object(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": expected an object, got " + std::string(j.type_name()));
}


json pattern_to_json(const AttentionPattern& p) {
  return json{{"window", p.window}, {"dilation", p.dilation}, {"global_tokens", p.global_tokens}};
}

AttentionPattern pattern_from_json(const json& p, const std::string& where) {
  require_object(p, where);
  check_known_keys(p, {"window", "dilation", "global_tokens"}, where);
  AttentionPattern pattern;
  read(p, "window", pattern.window, where);
  read(p, "dilation", pattern.dilation, where);
  read(p, "global_tokens", pattern.global_tokens, where);
  return pattern;
}

LocalLayers local_from_json(const json& j, const std::string& where) {
  require_object(j, where);
  check_known_keys(j, {"layers", "pattern", "rope_theta"}, where);
  LocalLayers local;
  read(j, "layers", local.layers, where);
  if (j.contains("pattern") && !j["pattern"].is_null()) local.pattern = pattern_from_json(j["pattern"], where + ".pattern");
  if (j.contains("rope_theta") && !j["rope_theta"].is_null()) {
    float theta = 0;
    read(j, "rope_theta", theta, where);
    local.rope_theta = theta;
  }
  return local;
}

json local_to_json(const LocalLayers& local) {
  json j{{"layers", local.layers}, {"pattern", pattern_to_json(local.pattern)}};
  if (local.rope_theta) j["rope_theta"] = *local.rope_theta;
  return j;
}

// A list of layer indices in 0..layers-1, each at most once.
StackConfig stack_from_json(const json& j, const std::string& where, bool allow_cross) {
  require_object(j, where);
  check_known_keys(j, {"layers", "attention", "cross_attention", "nope_layers", "shared_layers", "local"}, where);
  StackConfig stack;
  read(j, "layers", stack.layers, where);
  read(j, "nope_layers", stack.nope_layers, where);
  read(j, "shared_layers", stack.shared_layers, where);
  if (j.contains("local") && !j["local"].is_null()) stack.local = local_from_json(j["local"], where + ".local");
  if (!j.contains("attention")) throw std::runtime_error(where + ".attention: missing");
  stack.attention = attention_config_from_json(j["attention"], where + ".attention");
  if (j.contains("cross_attention") && !j["cross_attention"].is_null()) {
    if (!allow_cross) throw std::runtime_error(where + ".cross_attention: only the decoder of an encoder-decoder has one");
    stack.cross_attention = attention_config_from_json(j["cross_attention"], where + ".cross_attention");
  }
  return stack;
}

json stack_to_json(const StackConfig& s) {
  json j{{"layers", s.layers}, {"attention", to_json(s.attention)}};
  if (!s.nope_layers.empty()) j["nope_layers"] = s.nope_layers;
  if (s.shared_layers) j["shared_layers"] = true;
  if (s.local) j["local"] = local_to_json(*s.local);
  if (s.cross_attention) j["cross_attention"] = to_json(*s.cross_attention);
  return j;
}

json rope_scaling_to_json(const RopeScaling& r) {
  json j{{"type", enum_to_name(kRopeScalings, r.kind)}, {"factor", r.factor}};
  if (r.kind == RopeScalingKind::Llama3 || r.kind == RopeScalingKind::Yarn)
    j["original_max_positions"] = r.original_max_positions;
  if (r.kind == RopeScalingKind::Llama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  if (r.kind == RopeScalingKind::Yarn) {
    j["beta_fast"] = r.beta_fast;
    j["beta_slow"] = r.beta_slow;
    j["truncate"] = r.truncate;
    j["attention_factor"] = r.attention_factor;
  }
  return j;
}

RopeScaling rope_scaling_from_json(const json& j, const std::string& where) {
  require_object(j, where);
  RopeScaling r;
  read_enum(j, "type", kRopeScalings, r.kind, where);
  switch (r.kind) {
    case RopeScalingKind::None: check_known_keys(j, {"type"}, where); break;
    case RopeScalingKind::Linear:
    case RopeScalingKind::Dynamic: check_known_keys(j, {"type", "factor"}, where); break;
    case RopeScalingKind::Llama3:
      check_known_keys(j, {"type", "factor", "original_max_positions", "low_freq_factor", "high_freq_factor"}, where);
      break;
    case RopeScalingKind::Yarn:
      check_known_keys(j, {"type", "factor", "original_max_positions", "beta_fast", "beta_slow", "truncate",
                           "attention_factor"},
                       where);
      break;
  }
  read(j, "factor", r.factor, where);
  read(j, "original_max_positions", r.original_max_positions, where);
  read(j, "low_freq_factor", r.low_freq_factor, where);
  read(j, "high_freq_factor", r.high_freq_factor, where);
  read(j, "beta_fast", r.beta_fast, where);
  read(j, "beta_slow", r.beta_slow, where);
  read(j, "truncate", r.truncate, where);
  read(j, "attention_factor", r.attention_factor, where);
  return r;
}

}  // namespace

json to_json(const AttentionConfig& a) {
  json j{{"heads", a.heads},
         {"kv_heads", a.kv_heads},
         {"key_size", a.key_size},
         {"value_size", a.value_size},
         {"scoring", enum_to_name(kScorings, a.scoring)},
         {"qkv_bias", a.qkv_bias},
         {"out_bias", a.out_bias},
         {"pattern", pattern_to_json(a.pattern)}};
  if (a.scale) j["scale"] = *a.scale;
  if (a.qk_norm) {
    j["qk_norm"] = true;
    j["qk_norm_eps"] = a.qk_norm_eps;
    if (a.qk_norm_weight_offset != 0) j["qk_norm_weight_offset"] = a.qk_norm_weight_offset;
    if (a.qk_norm_whole) j["qk_norm_whole"] = true;
  }
  if (a.logit_softcap > 0) j["logit_softcap"] = a.logit_softcap;
  if (a.qkv_clip > 0) j["qkv_clip"] = a.qkv_clip;
  if (a.alibi) j["alibi"] = true;
  if (a.sinks) j["sinks"] = true;
  if (a.talking_heads)
    j["talking_heads"] = {{"key_heads", a.talking_heads->key_heads},
                          {"softmax_heads", a.talking_heads->softmax_heads},
                          {"value_heads", a.talking_heads->value_heads}};
  if (a.collaborative) j["collaborative"] = {{"shared_key_size", a.collaborative->shared_key_size}};
  if (a.relative_bias)
    j["relative_bias"] = {{"buckets", a.relative_bias->buckets}, {"max_distance", a.relative_bias->max_distance}};
  if (a.latent)
    j["latent"] = {{"kv_rank", a.latent->kv_rank}, {"q_rank", a.latent->q_rank}, {"rope_size", a.latent->rope_size},
                   {"norm_eps", a.latent->norm_eps}};
  if (const auto& d = a.disentangled)
    j["disentangled"] = {{"buckets", d->buckets},         {"max_distance", d->max_distance},
                         {"c2p", d->c2p},                 {"p2c", d->p2c},
                         {"shared_keys", d->shared_keys}, {"table_norm", d->table_norm},
                         {"table_norm_eps", d->table_norm_eps}};
  return j;
}

AttentionConfig attention_config_from_json(const json& j, const std::string& where) {
  require_object(j, where);
  check_known_keys(j, {"heads", "kv_heads", "key_size", "value_size", "scoring", "scale", "qkv_bias", "out_bias",
                       "qk_norm", "qk_norm_eps", "qk_norm_weight_offset", "qk_norm_whole", "logit_softcap", "qkv_clip", "alibi", "sinks", "talking_heads",
                       "collaborative", "relative_bias", "latent", "disentangled", "pattern"},
                   where);
  AttentionConfig a;
  read(j, "heads", a.heads, where);
  a.kv_heads = a.heads;
  read(j, "kv_heads", a.kv_heads, where);
  read(j, "key_size", a.key_size, where);
  a.value_size = a.key_size;
  read(j, "value_size", a.value_size, where);
  read_enum(j, "scoring", kScorings, a.scoring, where);
  if (j.contains("scale") && !j["scale"].is_null()) {
    float scale = 0;
    read(j, "scale", scale, where);
    a.scale = scale;
  }
  read(j, "qkv_bias", a.qkv_bias, where);
  read(j, "out_bias", a.out_bias, where);
  read(j, "qk_norm", a.qk_norm, where);
  read(j, "qk_norm_eps", a.qk_norm_eps, where);
  read(j, "qk_norm_weight_offset", a.qk_norm_weight_offset, where);
  read(j, "qk_norm_whole", a.qk_norm_whole, where);
  read(j, "logit_softcap", a.logit_softcap, where);
  read(j, "qkv_clip", a.qkv_clip, where);
  read(j, "alibi", a.alibi, where);
  read(j, "sinks", a.sinks, where);
  if (j.contains("talking_heads") && !j["talking_heads"].is_null()) {
    const std::string w = where + ".talking_heads";
    const json& t = j["talking_heads"];
    require_object(t, w);
    check_known_keys(t, {"key_heads", "softmax_heads", "value_heads"}, w);
    TalkingHeads th{a.heads, a.heads, a.heads};
    read(t, "key_heads", th.key_heads, w);
    read(t, "softmax_heads", th.softmax_heads, w);
    read(t, "value_heads", th.value_heads, w);
    a.talking_heads = th;
    if (!j.contains("heads")) a.heads = th.key_heads;
    if (!j.contains("kv_heads")) a.kv_heads = th.key_heads;
  }
  if (j.contains("collaborative") && !j["collaborative"].is_null()) {
    const std::string w = where + ".collaborative";
    const json& c = j["collaborative"];
    require_object(c, w);
    check_known_keys(c, {"shared_key_size"}, w);
    Collaborative co;
    read(c, "shared_key_size", co.shared_key_size, w);
    a.collaborative = co;
  }
  if (j.contains("relative_bias") && !j["relative_bias"].is_null()) {
    const std::string w = where + ".relative_bias";
    const json& r = j["relative_bias"];
    require_object(r, w);
    check_known_keys(r, {"buckets", "max_distance"}, w);
    RelativeBias rb;
    read(r, "buckets", rb.buckets, w);
    read(r, "max_distance", rb.max_distance, w);
    a.relative_bias = rb;
  }
  if (j.contains("latent") && !j["latent"].is_null()) {
    const std::string w = where + ".latent";
    const json& l = j["latent"];
    require_object(l, w);
    check_known_keys(l, {"kv_rank", "q_rank", "rope_size", "norm_eps"}, w);
    LatentAttention m;
    read(l, "kv_rank", m.kv_rank, w);
    read(l, "q_rank", m.q_rank, w);
    read(l, "rope_size", m.rope_size, w);
    read(l, "norm_eps", m.norm_eps, w);
    a.latent = m;
  }
  if (j.contains("disentangled") && !j["disentangled"].is_null()) {
    const std::string w = where + ".disentangled";
    const json& d = j["disentangled"];
    require_object(d, w);
    check_known_keys(d, {"buckets", "max_distance", "c2p", "p2c", "shared_keys", "table_norm", "table_norm_eps"}, w);
    Disentangled m;
    read(d, "buckets", m.buckets, w);
    read(d, "max_distance", m.max_distance, w);
    read(d, "c2p", m.c2p, w);
    read(d, "p2c", m.p2c, w);
    read(d, "shared_keys", m.shared_keys, w);
    read(d, "table_norm", m.table_norm, w);
    read(d, "table_norm_eps", m.table_norm_eps, w);
    a.disentangled = m;
  }
  if (j.contains("pattern") && !j["pattern"].is_null()) a.pattern = pattern_from_json(j["pattern"], where + ".pattern");
  return a;
}

json to_json(const ModelConfig& c) {
  json j{{"format", "headlab-model"},
         {"format_version", kConfigFormatVersion},
         {"name", c.name},
         {"description", c.description},
         {"family", c.family},
         {"kind", to_string(c.kind)},
         {"objective", c.objective},
         {"vocab_size", c.vocab_size},
         {"hidden_size", c.hidden_size},
         {"max_positions", c.max_positions},
         {"type_vocab_size", c.type_vocab_size},
         {"positions", to_string(c.positions)},
         {"rope_theta", c.rope_theta},
         {"rope_dim", c.rope_dim},
         {"norm", enum_to_name(kNormKinds, c.norm)},
         {"norm_eps", c.norm_eps},
         {"norm_placement", enum_to_name(kPlacements, c.norm_placement)},
         {"embedding_norm", c.embedding_norm},
         {"final_norm", c.final_norm},
         {"ffn",
          {{"kind", enum_to_name(kFfnKinds, c.ffn.kind)},
           {"inner_size", c.ffn.inner_size},
           {"activation", to_string(c.ffn.activation)},
           {"bias", c.ffn.bias}}},
         {"lm_head", {{"transform", c.lm_head.transform}, {"tied", c.lm_head.tied}, {"bias", c.lm_head.bias}}}};
  if (c.embedding_size > 0) j["embedding_size"] = c.embedding_size;
  if (c.ffn.kind == FfnKind::ClampedSwiGLU) j["ffn"]["limit"] = c.ffn.limit;
  if (c.ffn.moe) {
    const MoeConfig& e = *c.ffn.moe;
    j["ffn"]["moe"] = {{"experts", e.experts}, {"top_k", e.top_k}, {"normalize", e.normalize},
                       {"router_bias", e.router_bias}, {"shared_inner_size", e.shared_inner_size}};
    // DeepSeek's router options only where set, so that other configs read as before.
    auto& jm = j["ffn"]["moe"];
    if (e.scores != RouterScores::Softmax) jm["scores"] = enum_to_name(kRouterScores, e.scores);
    if (e.groups > 1) {
      jm["groups"] = e.groups;
      jm["top_groups"] = e.top_groups;
      jm["group_score"] = enum_to_name(kGroupScores, e.group_score);
    }
    if (e.choice_bias) jm["choice_bias"] = true;
    if (e.scale != 1.0f) jm["scale"] = e.scale;
    if (!e.dense_layers.empty()) {
      jm["dense_layers"] = e.dense_layers;
      jm["dense_inner_size"] = e.dense_inner_size;
    }
  }
  // Written only when set, so configs without them read in any HeadLab.
  if (c.norm_weight_offset != 0) j["norm_weight_offset"] = c.norm_weight_offset;
  if (c.sublayer_output_norm) j["sublayer_output_norm"] = true;
  if (!c.sublayer_input_norm) j["sublayer_input_norm"] = false;
  if (!c.first_attention_norm) j["first_attention_norm"] = false;
  if (c.parallel_residual) j["parallel_residual"] = true;
  if (c.rope_interleaved) j["rope_interleaved"] = true;
  if (c.embedding_scale != 1) j["embedding_scale"] = c.embedding_scale;
  if (c.lm_head.softcap > 0) j["lm_head"]["softcap"] = c.lm_head.softcap;
  if (c.lm_head.input_scale != 1) j["lm_head"]["input_scale"] = c.lm_head.input_scale;
  if (c.sinusoid_layout != SinusoidLayout::Interleaved) j["sinusoid_layout"] = to_string(c.sinusoid_layout);
  if (c.stack_embeddings) j["stack_embeddings"] = true;
  if (c.decoder_start_id) j["decoder_start_id"] = *c.decoder_start_id;
  if (c.rope_scaling.kind != RopeScalingKind::None) j["rope_scaling"] = rope_scaling_to_json(c.rope_scaling);
  if (c.encoder) j["encoder"] = stack_to_json(*c.encoder);
  if (c.decoder) j["decoder"] = stack_to_json(*c.decoder);
  return j;
}

namespace {

// The family decides how a text is framed (core/tokenizer/framing.h): a misspelt one would frame
// silently differently, so only "native" and the family table's names are read.
void check_family(const std::string& family) {
  if (family == "native") return;
  std::string names;
  for (const auto& f : hf::families()) {
    if (family == f.name) return;
    names += std::string(names.empty() ? "" : ", ") + f.name;
  }
  throw std::runtime_error("config.family: '" + family + "' is no family HeadLab knows (native for a model made by " +
                           "HeadLab, or an imported one's: " + names + ")");
}

}  // namespace

ModelConfig model_config_from_json(const json& j) {
  const std::string where = "config";
  require_object(j, where);
  check_known_keys(j, {"format", "format_version", "name", "description", "family", "kind", "objective", "vocab_size", "hidden_size",
                       "embedding_size", "max_positions", "type_vocab_size", "positions", "rope_theta", "rope_dim", "norm", "norm_eps",
                       "norm_placement", "embedding_norm", "final_norm", "norm_weight_offset", "sublayer_output_norm", "sublayer_input_norm", "first_attention_norm",
                       "embedding_scale", "sinusoid_layout", "stack_embeddings", "decoder_start_id", "ffn", "lm_head",
                       "encoder", "decoder", "rope_scaling", "parallel_residual", "rope_interleaved"},
                   where);
  if (j.contains("format") && j["format"] != "headlab-model")
    throw std::runtime_error("config.format: expected 'headlab-model' (is this a Hugging Face config? "
                             "HeadLab imports those through their 'architectures' field)");
  int version = kConfigFormatVersion;
  read(j, "format_version", version, where);
  if (version > kConfigFormatVersion)
    throw std::runtime_error("config.format_version " + std::to_string(version) +
                             " is newer than this HeadLab understands (" + std::to_string(kConfigFormatVersion) +
                             "): update HeadLab");
  ModelConfig c;
  read(j, "name", c.name, where);
  read(j, "description", c.description, where);
  read(j, "family", c.family, where);
  check_family(c.family);
  read_enum(j, "kind", kStackKinds, c.kind, where);
  read(j, "objective", c.objective, where);
  read(j, "vocab_size", c.vocab_size, where);
  read(j, "hidden_size", c.hidden_size, where);
  read(j, "embedding_size", c.embedding_size, where);
  read(j, "max_positions", c.max_positions, where);
  read(j, "type_vocab_size", c.type_vocab_size, where);
  read_enum(j, "positions", kPositions, c.positions, where);
  read(j, "rope_theta", c.rope_theta, where);
  read(j, "rope_dim", c.rope_dim, where);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    c.rope_scaling = rope_scaling_from_json(j["rope_scaling"], where + ".rope_scaling");
  read_enum(j, "norm", kNormKinds, c.norm, where);
  read(j, "norm_eps", c.norm_eps, where);
  read_enum(j, "norm_placement", kPlacements, c.norm_placement, where);
  read(j, "embedding_norm", c.embedding_norm, where);
  read(j, "final_norm", c.final_norm, where);
  read(j, "norm_weight_offset", c.norm_weight_offset, where);
  read(j, "sublayer_output_norm", c.sublayer_output_norm, where);
  read(j, "sublayer_input_norm", c.sublayer_input_norm, where);
  read(j, "first_attention_norm", c.first_attention_norm, where);
  read(j, "parallel_residual", c.parallel_residual, where);
  read(j, "rope_interleaved", c.rope_interleaved, where);
  read(j, "embedding_scale", c.embedding_scale, where);
  read_enum(j, "sinusoid_layout", kSinusoidLayouts, c.sinusoid_layout, where);
  read(j, "stack_embeddings", c.stack_embeddings, where);
  if (j.contains("decoder_start_id") && !j["decoder_start_id"].is_null()) {
    int64_t start = 0;
    read(j, "decoder_start_id", start, where);
    c.decoder_start_id = start;
  }
  if (j.contains("ffn")) {
    const json& f = j["ffn"];
    require_object(f, "config.ffn");
    check_known_keys(f, {"kind", "inner_size", "activation", "bias", "limit", "moe"}, "config.ffn");
    read_enum(f, "kind", kFfnKinds, c.ffn.kind, "config.ffn");
    read(f, "inner_size", c.ffn.inner_size, "config.ffn");
    read_enum(f, "activation", kActivations, c.ffn.activation, "config.ffn");
    read(f, "bias", c.ffn.bias, "config.ffn");
    read(f, "limit", c.ffn.limit, "config.ffn");
    if (f.contains("moe") && !f["moe"].is_null()) {
      const json& e = f["moe"];
      require_object(e, "config.ffn.moe");
      check_known_keys(e, {"experts", "top_k", "normalize", "router_bias", "shared_inner_size", "scores", "groups",
                           "top_groups", "group_score", "choice_bias", "scale", "dense_layers", "dense_inner_size"},
                       "config.ffn.moe");
      MoeConfig moe;
      read(e, "experts", moe.experts, "config.ffn.moe");
      read(e, "top_k", moe.top_k, "config.ffn.moe");
      read(e, "normalize", moe.normalize, "config.ffn.moe");
      read(e, "router_bias", moe.router_bias, "config.ffn.moe");
      read(e, "shared_inner_size", moe.shared_inner_size, "config.ffn.moe");
      read_enum(e, "scores", kRouterScores, moe.scores, "config.ffn.moe");
      read(e, "groups", moe.groups, "config.ffn.moe");
      moe.top_groups = moe.groups;
      read(e, "top_groups", moe.top_groups, "config.ffn.moe");
      read_enum(e, "group_score", kGroupScores, moe.group_score, "config.ffn.moe");
      read(e, "choice_bias", moe.choice_bias, "config.ffn.moe");
      read(e, "scale", moe.scale, "config.ffn.moe");
      read(e, "dense_layers", moe.dense_layers, "config.ffn.moe");
      read(e, "dense_inner_size", moe.dense_inner_size, "config.ffn.moe");
      c.ffn.moe = moe;
    }
  }
  if (j.contains("lm_head")) {
    const json& h = j["lm_head"];
    require_object(h, "config.lm_head");
    check_known_keys(h, {"transform", "tied", "bias", "softcap", "input_scale"}, "config.lm_head");
    read(h, "transform", c.lm_head.transform, "config.lm_head");
    read(h, "tied", c.lm_head.tied, "config.lm_head");
    read(h, "bias", c.lm_head.bias, "config.lm_head");
    read(h, "softcap", c.lm_head.softcap, "config.lm_head");
    read(h, "input_scale", c.lm_head.input_scale, "config.lm_head");
  }
  if (j.contains("encoder") && !j["encoder"].is_null()) c.encoder = stack_from_json(j["encoder"], "config.encoder", false);
  if (j.contains("decoder") && !j["decoder"].is_null())
    c.decoder = stack_from_json(j["decoder"], "config.decoder", c.kind == StackKind::EncoderDecoder);
  c.validate();
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  const json j = read_json_file(path);
  try {
    return model_config_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

const char* to_string(StackKind kind) { return enum_to_name(kStackKinds, kind); }
const char* to_string(PositionKind kind) { return enum_to_name(kPositions, kind); }
const char* to_string(Activation activation) { return enum_to_name(kActivations, activation); }
const char* to_string(SinusoidLayout layout) { return enum_to_name(kSinusoidLayouts, layout); }
const char* to_string(RopeScalingKind kind) { return enum_to_name(kRopeScalings, kind); }

RopeScalingKind rope_scaling_kind_from_name(const std::string& name) {
  try {
    return enum_from_json(kRopeScalings, json(name), "rope type");
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace headlab::core
