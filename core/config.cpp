#include "core/config.h"

#include "core/json_file.h"

#include "core/json_integer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
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
constexpr EnumName<FfnKind> kFfnKinds[] = {{FfnKind::Mlp, "mlp"}, {FfnKind::SwiGLU, "swiglu"}, {FfnKind::None, "none"}};
constexpr EnumName<Activation> kActivations[] = {{Activation::Gelu, "gelu"},
                                                 {Activation::GeluTanh, "gelu_tanh"},
                                                 {Activation::Relu, "relu"},
                                                 {Activation::Silu, "silu"}};
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

void validate_pattern(const AttentionPattern& p, const std::string& where, std::vector<std::string>& problems) {
  if (p.window < 0) problems.push_back(where + ".window must be >= 0");
  if (p.dilation < 1) problems.push_back(where + ".dilation must be >= 1");
  for (int g : p.global_tokens)
    if (g < 0) problems.push_back(where + ".global_tokens must be >= 0");
}

// Size limits far above any published model (the largest have hidden 16,384, 126 layers, 128 heads,
// a 262k vocabulary and ~1M positions).
constexpr int64_t kMaxHidden = 1 << 16, kMaxLayers = 1024, kMaxHeads = 1024, kMaxHeadSize = 1 << 14,
                  kMaxVocab = 1 << 22, kMaxInner = 1 << 19, kMaxPositions = 1 << 21;
constexpr double kMaxParameters = 1ull << 40;

void validate_attention(const AttentionConfig& a, int hidden, const std::string& where,
                        std::vector<std::string>& problems) {
  auto problem = [&](const std::string& text) { problems.push_back(where + ": " + text); };
  if (a.heads < 1) problem("heads must be >= 1");
  if (a.key_size < 1) problem("key_size must be >= 1");
  if (a.value_size < 1) problem("value_size must be >= 1");
  // Beyond any published model by far: a config asking for more is damaged or hostile, and must not
  // make the engine allocate first and fail later.
  if (a.heads > kMaxHeads) problem("heads " + std::to_string(a.heads) + " is more than HeadLab opens (" + std::to_string(kMaxHeads) + ")");
  if (a.key_size > kMaxHeadSize || a.value_size > kMaxHeadSize)
    problem("key_size/value_size above " + std::to_string(kMaxHeadSize) + " is more than HeadLab opens");
  if (a.kv_heads < 1 || (a.heads >= 1 && a.heads % a.kv_heads != 0))
    problem("kv_heads (" + std::to_string(a.kv_heads) + ") must divide heads (" + std::to_string(a.heads) + ")");
  if (a.talking_heads && a.collaborative) problem("talking_heads and collaborative cannot be combined");
  if (a.talking_heads) {
    const auto& t = *a.talking_heads;
    if (t.key_heads < 1 || t.softmax_heads < 1 || t.value_heads < 1)
      problem("talking_heads: key_heads, softmax_heads and value_heads must be >= 1");
    if (a.kv_heads != t.key_heads)
      problem("talking_heads: kv_heads (" + std::to_string(a.kv_heads) + ") must equal key_heads (" +
              std::to_string(t.key_heads) + "): each key head has its own key projection");
    if (a.heads != t.key_heads)
      problem("talking_heads: heads (" + std::to_string(a.heads) + ") must equal key_heads (" +
              std::to_string(t.key_heads) + ")");
  }
  if (a.collaborative && a.collaborative->shared_key_size < 1) problem("collaborative: shared_key_size must be >= 1");
  if (a.scoring == Scoring::Additive && a.collaborative) problem("additive scoring cannot be collaborative");
  if (a.qk_norm && a.collaborative) problem("qk_norm cannot be combined with collaborative heads (no per-head keys)");
  if (a.qk_norm && !(a.qk_norm_eps > 0)) problem("qk_norm_eps must be > 0");
  if (!std::isfinite(a.qk_norm_weight_offset)) problem("qk_norm_weight_offset must be finite");
  if (!(a.logit_softcap >= 0) || !std::isfinite(a.logit_softcap)) problem("logit_softcap must be >= 0 (0 = none)");
  if (a.alibi && a.relative_bias) problem("alibi and relative_bias cannot be combined (two position biases)");
  if (a.relative_bias) {
    // A bidirectional stack's exact range is buckets / 4 offsets, which must be >= 1, and the
    // logarithmic buckets need max_distance beyond the exact range.
    if (a.relative_bias->buckets < 4) problem("relative_bias.buckets must be >= 4");
    if (a.relative_bias->max_distance <= a.relative_bias->buckets / 2)
      problem("relative_bias.max_distance must be more than buckets / 2 (" + std::to_string(a.relative_bias->buckets / 2) + ")");
  }
  validate_pattern(a.pattern, where + ".pattern", problems);
  (void)hidden;
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
void validate_layer_list(const std::vector<int>& list, int layers, const std::string& where,
                         std::vector<std::string>& problems) {
  for (size_t i = 0; i < list.size(); ++i) {
    const int l = list[i];
    if (l < 0 || l >= layers)
      problems.push_back(where + "[" + std::to_string(i) + "]: layer " + std::to_string(l) + " is not in 0.." +
                         std::to_string(layers - 1));
    else if (std::count(list.begin(), list.begin() + i, l))
      problems.push_back(where + ": layer " + std::to_string(l) + " is listed twice");
  }
}

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

int64_t attention_parameters(const AttentionConfig& a, int hidden) {
  const int64_t D = hidden;
  int64_t n = 0;
  const int64_t qk_width = a.collaborative ? a.collaborative->shared_key_size : 0;
  if (a.collaborative) {
    n += D * qk_width * 2;                            // W̃_Q, W̃_K (no biases: re-parametrised)
    n += int64_t(a.heads) * qk_width;                 // mixing vectors m_i
    if (a.qkv_bias) n += int64_t(a.heads) * D;        // content biases r_i
  } else {
    n += D * a.heads * a.key_size + D * a.kv_heads * a.key_size;
    if (a.qkv_bias) n += int64_t(a.heads + a.kv_heads) * a.key_size;
    if (a.qk_norm) n += 2 * int64_t(a.key_size);  // q_norm, k_norm weights
  }
  n += D * a.value_heads_stored() * a.value_size + (a.qkv_bias ? int64_t(a.value_heads_stored()) * a.value_size : 0);
  n += int64_t(a.output_heads()) * a.value_size * D + (a.out_bias ? D : 0);
  if (a.talking_heads)
    n += int64_t(a.logit_heads()) * a.softmax_heads() + int64_t(a.softmax_heads()) * a.output_heads();
  if (a.scoring == Scoring::Additive) n += int64_t(a.heads) * a.key_size;
  return n;
}

// The relative position bias table, stored once per stack (RelativeBias).
int64_t relative_bias_parameters(const AttentionConfig& a) {
  return a.relative_bias ? int64_t(a.relative_bias->buckets) * a.logit_heads() : 0;
}

// Only the keys of its kind, so that a config says what it runs.
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

void validate_rope_scaling(const RopeScaling& r, bool rotary, int max_positions, std::vector<std::string>& problems) {
  if (r.kind == RopeScalingKind::None) return;
  const std::string where = std::string("rope_scaling (") + enum_to_name(kRopeScalings, r.kind) + ")";
  if (!rotary) problems.push_back(where + ": only meaningful with positions 'rope' or 'rope+learned'");
  if (!(r.factor > 0) || !std::isfinite(r.factor)) problems.push_back(where + ".factor must be > 0");
  if (r.kind == RopeScalingKind::Dynamic && max_positions < 1)
    problems.push_back(where + ": dynamic scaling needs max_positions >= 1 (its base grows past it)");
  if ((r.kind == RopeScalingKind::Llama3 || r.kind == RopeScalingKind::Yarn) && r.original_max_positions < 1)
    problems.push_back(where + ".original_max_positions must be >= 1");
  if (r.kind == RopeScalingKind::Llama3 && !(r.high_freq_factor > r.low_freq_factor && r.low_freq_factor > 0))
    problems.push_back(where + ": high_freq_factor must exceed low_freq_factor > 0");
  if (r.kind == RopeScalingKind::Yarn) {
    if (!(r.beta_fast > 0) || !(r.beta_slow > 0)) problems.push_back(where + ": beta_fast and beta_slow must be > 0");
    if (!(r.attention_factor > 0) || !std::isfinite(r.attention_factor))
      problems.push_back(where + ".attention_factor must be > 0");
  }
}

}  // namespace

bool StackConfig::is_local(int layer) const {
  return local && std::count(local->layers.begin(), local->layers.end(), layer) > 0;
}

AttentionConfig StackConfig::layer_attention(int layer) const {
  AttentionConfig a = attention;
  if (is_local(layer)) a.pattern = local->pattern;
  return a;
}

float AttentionConfig::logit_scale() const {
  if (scale) return *scale;
  if (scoring == Scoring::Additive) return 1.0f;
  // Collaborative: 1/sqrt(D̃_k / h) as in Cordonnier et al.'s code, so an MHA re-written as
  // collaborative (D̃_k = h·d_k) keeps its 1/sqrt(d_k).
  if (collaborative) return 1.0f / std::sqrt(static_cast<float>(collaborative->shared_key_size) / heads);
  return 1.0f / std::sqrt(static_cast<float>(key_size));
}

std::string AttentionConfig::variant_name() const {
  std::ostringstream out;
  if (talking_heads) {
    out << "talking-heads(" << talking_heads->key_heads << "/" << talking_heads->softmax_heads << "/"
        << talking_heads->value_heads << ")";
  } else if (collaborative) {
    out << "collaborative(" << heads << "h, D̃k=" << collaborative->shared_key_size << ")";
  } else if (kv_heads == heads) {
    out << "MHA(" << heads << "h)";
  } else if (kv_heads == 1) {
    out << "MQA(" << heads << "q/1kv)";
  } else {
    out << "GQA(" << heads << "q/" << kv_heads << "kv)";
  }
  if (scoring == Scoring::Additive) out << " additive";
  if (qk_norm) out << " qk-norm";
  if (logit_softcap > 0) out << " softcap=" << logit_softcap;
  if (alibi) out << " ALiBi";
  if (pattern.window > 0) {
    out << " window=" << pattern.window;
    if (pattern.dilation > 1) out << " dilation=" << pattern.dilation;
  }
  if (!pattern.global_tokens.empty()) out << " global=" << pattern.global_tokens.size();
  return out.str();
}

void ModelConfig::validate() const {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& text) { problems.push_back(text); };
  if (vocab_size < 1) problem("vocab_size must be >= 1");
  if (hidden_size < 1) problem("hidden_size must be >= 1");
  if (max_positions < 1) problem("max_positions must be >= 1");
  if (embedding_size < 0) problem("embedding_size must be >= 0 (0 = embeddings as wide as hidden_size)");
  if (ffn.kind != FfnKind::None && ffn.inner_size < 1) problem("ffn.inner_size must be >= 1");
  auto limit = [&](int64_t value, int64_t most, const char* what) {
    if (value > most)
      problem(std::string(what) + " " + std::to_string(value) + " is more than HeadLab opens (at most " +
              std::to_string(most) + ")");
  };
  limit(hidden_size, kMaxHidden, "hidden_size");
  limit(embedding_size, kMaxHidden, "embedding_size");
  limit(vocab_size, kMaxVocab, "vocab_size");
  limit(type_vocab_size, kMaxVocab, "type_vocab_size");
  limit(ffn.inner_size, kMaxInner, "ffn.inner_size");
  // Only position tables allocate max_positions rows (a RoPE model may declare 10M positions).
  limit(max_positions, has_position_table() ? kMaxPositions : int64_t(1) << 30, "max_positions");
  for (const auto* stack : {&encoder, &decoder})
    if (*stack) limit((*stack)->layers, kMaxLayers, "layers");
  if (norm_eps <= 0) problem("norm_eps must be > 0");
  if (!std::isfinite(norm_weight_offset)) problem("norm_weight_offset must be finite");
  if (!(embedding_scale > 0) || !std::isfinite(embedding_scale)) problem("embedding_scale must be > 0");
  if (!(lm_head.softcap >= 0) || !std::isfinite(lm_head.softcap)) problem("lm_head.softcap must be >= 0 (0 = none)");
  if (!(lm_head.input_scale > 0) || !std::isfinite(lm_head.input_scale)) problem("lm_head.input_scale must be > 0");
  validate_rope_scaling(rope_scaling, positions == PositionKind::Rope || positions == PositionKind::RopeLearned,
                        max_positions, problems);
  if (stack_embeddings && kind != StackKind::EncoderDecoder)
    problem("stack_embeddings: only an encoder-decoder has a second stack to embed for");
  if (positions == PositionKind::Sinusoidal && embedding_width() % 2 != 0)
    problem("sinusoidal positions need an even embedding width, got " + std::to_string(embedding_width()));
  if (decoder_start_id && (*decoder_start_id < 0 || *decoder_start_id >= vocab_size))
    problem("decoder_start_id " + std::to_string(*decoder_start_id) + " is outside the vocabulary (size " +
            std::to_string(vocab_size) + ")");
  if (decoder_start_id && kind != StackKind::EncoderDecoder)
    problem("decoder_start_id: only an encoder-decoder's decoder starts from a token of its own");
  if (sublayer_output_norm && norm_placement != NormPlacement::Pre)
    problem("sublayer_output_norm needs norm_placement 'pre' (a post-LN block already normalises each sum)");
  if (parallel_residual) {
    if (norm_placement != NormPlacement::Pre) problem("parallel_residual needs norm_placement 'pre'");
    if (ffn.kind == FfnKind::None) problem("parallel_residual needs an FFN to run beside attention");
    if (sublayer_output_norm) problem("parallel_residual cannot be combined with sublayer_output_norm");
    if (kind == StackKind::EncoderDecoder) problem("parallel_residual: not with cross attention (encoder-decoder)");
  }
  if (rope_interleaved && positions != PositionKind::Rope && positions != PositionKind::RopeLearned)
    problem("rope_interleaved: only meaningful with positions 'rope' or 'rope+learned', not '" + std::string(to_string(positions)) + "'");
  const bool wants_encoder = kind != StackKind::Decoder;
  const bool wants_decoder = kind != StackKind::Encoder;
  if (wants_encoder != encoder.has_value())
    problem(std::string("a '") + to_string(kind) + "' model " + (wants_encoder ? "needs" : "must not have") + " an encoder stack");
  if (wants_decoder != decoder.has_value())
    problem(std::string("a '") + to_string(kind) + "' model " + (wants_decoder ? "needs" : "must not have") + " a decoder stack");
  auto check_stack = [&](const std::optional<StackConfig>& stack, const char* name) {
    if (!stack) return;
    if (stack->layers < 1) problem(std::string(name) + ".layers must be >= 1");
    validate_attention(stack->attention, hidden_size, std::string(name) + ".attention", problems);
    if (stack->cross_attention)
      validate_attention(*stack->cross_attention, hidden_size, std::string(name) + ".cross_attention", problems);
    if (stack->cross_attention && stack->cross_attention->alibi)
      problem(std::string(name) + ".cross_attention.alibi: ALiBi biases a sequence's own tokens (self-attention only)");
    if (stack->cross_attention && stack->cross_attention->relative_bias)
      problem(std::string(name) + ".cross_attention.relative_bias: relative positions are between a sequence's own "
              "tokens (self-attention only)");
    if (stack->local && stack->attention.relative_bias)
      problem(std::string(name) + ".local: local layers cannot be combined with relative_bias");
    const bool rotary = positions == PositionKind::Rope || positions == PositionKind::RopeLearned;
    if (!stack->nope_layers.empty() && !rotary)
      problem(std::string(name) + ".nope_layers: only meaningful with positions 'rope' or 'rope+learned', not '" +
              to_string(positions) + "'");
    if (stack->shared_layers && !stack->nope_layers.empty())
      problem(std::string(name) + ".shared_layers: one set of shared weights cannot skip RoPE in some layers only "
              "(nope_layers)");
    validate_layer_list(stack->nope_layers, stack->layers, std::string(name) + ".nope_layers", problems);
    if (stack->local) {
      const std::string where = std::string(name) + ".local";
      validate_layer_list(stack->local->layers, stack->layers, where + ".layers", problems);
      validate_pattern(stack->local->pattern, where + ".pattern", problems);
      if (stack->local->rope_theta && !rotary)
        problem(where + ".rope_theta: only meaningful with positions 'rope' or 'rope+learned', not '" +
                to_string(positions) + "'");
      if (stack->local->rope_theta && (!(*stack->local->rope_theta > 0) || !std::isfinite(*stack->local->rope_theta)))
        problem(where + ".rope_theta must be > 0");
    }
    if (rotary) {
      const auto& a = stack->attention;
      const int dim = rope_dim > 0 ? rope_dim : (a.collaborative ? a.collaborative->shared_key_size : a.key_size);
      if (dim % 2 != 0) problem(std::string(name) + ": RoPE needs an even rotated size, got " + std::to_string(dim));
      if (rope_scaling.kind == RopeScalingKind::Dynamic && dim <= 2)
        problem(std::string(name) + ": dynamic RoPE scaling needs more than 2 rotated dims (its base grows as "
                "^(rot/(rot-2))), got " + std::to_string(dim));
    }
  };
  check_stack(encoder, "encoder");
  check_stack(decoder, "decoder");
  if (kind == StackKind::EncoderDecoder && decoder && !decoder->cross_attention)
    problem("decoder.cross_attention: an encoder-decoder decoder needs cross attention");
  if (kind != StackKind::EncoderDecoder && decoder && decoder->cross_attention)
    problem("decoder.cross_attention: only an encoder-decoder has cross attention");
  if (problems.empty() && parameter_estimate() > kMaxParameters)
    problem("the config describes " + std::to_string(static_cast<long double>(parameter_estimate())) +
            " parameters, more than HeadLab opens (2^40)");
  if (!problems.empty()) {
    std::string text = "invalid model config: ";
    for (size_t i = 0; i < problems.size(); ++i) text += (i ? "; " : "") + problems[i];
    throw std::runtime_error(text);
  }
}

double ModelConfig::parameter_estimate() const {
  // parameter_count's sum in floating point, so that no size can overflow it: layers × (4·D² + 2·D·F)
  // plus the embeddings is within a few per cent of the exact count for every variant.
  const double D = hidden_size, E = embedding_width(), F = ffn.kind == FfnKind::None ? 0 : ffn.inner_size;
  const double position_rows = has_position_table() ? double(max_positions) * (stack_embeddings ? 2 : 1) : 0.0;
  double n = (double(vocab_size) + position_rows + double(type_vocab_size)) * E * 2;
  auto stack = [&](const std::optional<StackConfig>& s) {
    if (!s) return 0.0;
    const auto& a = s->attention;
    const double attention = D * (double(a.heads) * a.key_size + double(a.kv_heads) * (a.key_size + a.value_size) +
                                  double(a.heads) * a.value_size);
    return (s->shared_layers ? 1.0 : double(s->layers)) * (attention * (s->cross_attention ? 2 : 1) + 3 * D * F);
  };
  return n + stack(encoder) + stack(decoder);
}

int64_t ModelConfig::parameter_count() const {
  const int64_t D = hidden_size;
  const int64_t E = embedding_width();
  int64_t n = int64_t(vocab_size) * E;
  const int64_t position_tables = stack_embeddings ? 2 : 1;  // the decoder's own table
  if (positions == PositionKind::Learned || positions == PositionKind::RopeLearned)
    n += position_tables * int64_t(max_positions) * E;
  n += int64_t(type_vocab_size) * E;
  const int64_t norm_params = norm == NormKind::LayerNorm ? 2 * D : D;
  const int64_t embedding_norm_params = norm == NormKind::LayerNorm ? 2 * E : E;
  if (embedding_norm) n += (stack_embeddings ? 2 : 1) * embedding_norm_params;
  if (embedding_size > 0) n += E * D + D;  // projection E → D
  const bool has_ffn = ffn.kind != FfnKind::None;
  const int64_t ffn_params = !has_ffn ? 0
                                      : (ffn.kind == FfnKind::SwiGLU ? 3 : 2) * D * ffn.inner_size +
                                            (ffn.bias ? ffn.inner_size * (ffn.kind == FfnKind::SwiGLU ? 2 : 1) + D : 0);
  auto stack_params = [&](const std::optional<StackConfig>& s) -> int64_t {
    if (!s) return 0;
    const int64_t norms_per_sublayer = sublayer_output_norm ? 2 : 1;
    int64_t per_layer = attention_parameters(s->attention, hidden_size) + ffn_params +
                        (has_ffn ? 2 : 1) * norms_per_sublayer * norm_params;
    if (s->cross_attention)
      per_layer += attention_parameters(*s->cross_attention, hidden_size) + norms_per_sublayer * norm_params;
    return per_layer * (s->shared_layers ? 1 : s->layers) + relative_bias_parameters(s->attention) +
           (final_norm ? norm_params : 0);
  };
  n += stack_params(encoder) + stack_params(decoder);
  // The head's transform maps D → E (E = D unless factorised); its decoder reads E, or D without transform.
  if (lm_head.transform) n += D * E + E + embedding_norm_params;
  if (!lm_head.tied) n += int64_t(vocab_size) * (lm_head.transform ? E : D);
  if (lm_head.bias) n += vocab_size;
  return n;
}

std::string ModelConfig::summary() const {
  std::ostringstream out;
  out << name << " (" << family << "): ";
  if (!description.empty()) out << description << "\n  ";
  out << to_string(kind) << ", hidden " << hidden_size;
  if (embedding_size > 0) out << " (embeddings " << embedding_size << ", projected)";
  out << ", vocab " << vocab_size
      << ", positions " << to_string(positions) << [&] {
           std::vector<std::string> notes;  // partial and scaled RoPE
           if (rope_dim > 0 && (positions == PositionKind::Rope || positions == PositionKind::RopeLearned))
             notes.push_back("first " + std::to_string(rope_dim) + " dims of each head rotated");
           if (rope_scaling.kind != RopeScalingKind::None)
             notes.push_back(std::string(to_string(rope_scaling.kind)) + " scaling ×" + json(rope_scaling.factor).dump());
           if (rope_interleaved && (positions == PositionKind::Rope || positions == PositionKind::RopeLearned))
             notes.push_back("interleaved pairs");
           std::string text;
           for (const auto& n : notes) text += (text.empty() ? " (" : ", ") + n;
           return text.empty() ? text : text + ")";
         }()
      << ", " << (norm == NormKind::LayerNorm ? "LayerNorm" : "RMSNorm") << " "
      << (norm_placement == NormPlacement::Pre ? "pre" : "post") << ", FFN "
      << (ffn.kind == FfnKind::None               ? std::string("none (attention only)")
          : ffn.kind == FfnKind::Mlp              ? std::string("MLP/") + to_string(ffn.activation)
          : ffn.activation == Activation::Silu ? std::string("SwiGLU")
                                               : std::string("GLU/") + to_string(ffn.activation))  // GeGLU: GLU/gelu_tanh
      << (ffn.kind == FfnKind::None ? std::string() : " " + std::to_string(ffn.inner_size))
      << (parallel_residual ? ", attention and FFN in parallel" : "");
  auto stack_line = [&](const std::optional<StackConfig>& s, const char* name) {
    if (!s) return;
    out << "\n  " << name << ": " << s->layers << " layers, " << s->attention.variant_name() << ", d_k "
        << s->attention.key_size << ", d_v " << s->attention.value_size;
    if (s->cross_attention) out << "; cross " << s->cross_attention->variant_name();
    if (s->shared_layers) out << "; one set of weights shared by all layers";
    if (const auto& r = s->attention.relative_bias)
      out << "; relative position bias (" << r->buckets << " buckets to " << r->max_distance << ")";
    if (!s->nope_layers.empty()) {
      out << "; no RoPE in layer" << (s->nope_layers.size() > 1 ? "s" : "");
      for (size_t i = 0; i < s->nope_layers.size(); ++i) out << (i ? ", " : " ") << s->nope_layers[i];
    }
    if (s->local) {
      out << "; local layer" << (s->local->layers.size() > 1 ? "s" : "");
      for (size_t i = 0; i < s->local->layers.size(); ++i) out << (i ? ", " : " ") << s->local->layers[i];
      out << " (window " << s->local->pattern.window;
      if (s->local->rope_theta) out << ", RoPE θ " << *s->local->rope_theta;
      out << ")";
    }
  };
  stack_line(encoder, "encoder");
  stack_line(decoder, "decoder");
  out << "\n  parameters: " << parameter_count();
  return out.str();
}

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
  }
  if (a.logit_softcap > 0) j["logit_softcap"] = a.logit_softcap;
  if (a.alibi) j["alibi"] = true;
  if (a.talking_heads)
    j["talking_heads"] = {{"key_heads", a.talking_heads->key_heads},
                          {"softmax_heads", a.talking_heads->softmax_heads},
                          {"value_heads", a.talking_heads->value_heads}};
  if (a.collaborative) j["collaborative"] = {{"shared_key_size", a.collaborative->shared_key_size}};
  if (a.relative_bias)
    j["relative_bias"] = {{"buckets", a.relative_bias->buckets}, {"max_distance", a.relative_bias->max_distance}};
  return j;
}

AttentionConfig attention_config_from_json(const json& j, const std::string& where) {
  require_object(j, where);
  check_known_keys(j, {"heads", "kv_heads", "key_size", "value_size", "scoring", "scale", "qkv_bias", "out_bias",
                       "qk_norm", "qk_norm_eps", "qk_norm_weight_offset", "logit_softcap", "alibi", "talking_heads",
                       "collaborative", "relative_bias", "pattern"},
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
  read(j, "logit_softcap", a.logit_softcap, where);
  read(j, "alibi", a.alibi, where);
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
  // Written only when set, so configs without them read in any HeadLab.
  if (c.norm_weight_offset != 0) j["norm_weight_offset"] = c.norm_weight_offset;
  if (c.sublayer_output_norm) j["sublayer_output_norm"] = true;
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

ModelConfig model_config_from_json(const json& j) {
  const std::string where = "config";
  require_object(j, where);
  check_known_keys(j, {"format", "format_version", "name", "description", "family", "kind", "objective", "vocab_size", "hidden_size",
                       "embedding_size", "max_positions", "type_vocab_size", "positions", "rope_theta", "rope_dim", "norm", "norm_eps",
                       "norm_placement", "embedding_norm", "final_norm", "norm_weight_offset", "sublayer_output_norm",
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
    check_known_keys(f, {"kind", "inner_size", "activation", "bias"}, "config.ffn");
    read_enum(f, "kind", kFfnKinds, c.ffn.kind, "config.ffn");
    read(f, "inner_size", c.ffn.inner_size, "config.ffn");
    read_enum(f, "activation", kActivations, c.ffn.activation, "config.ffn");
    read(f, "bias", c.ffn.bias, "config.ffn");
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
