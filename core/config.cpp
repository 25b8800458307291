// ModelConfig's checks (validate), sizes (parameter_count) and one-paragraph summary; the JSON
// reading and writing is core/config_json.cpp.
#include "core/config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::core {
namespace {

using nlohmann::json;
void validate_pattern(const AttentionPattern& p, const std::string& where, std::vector<std::string>& problems) {
  if (p.window < 0) problems.push_back(where + ".window must be >= 0");
  if (p.dilation < 1) problems.push_back(where + ".dilation must be >= 1");
  for (int g : p.global_tokens)
    if (g < 0) problems.push_back(where + ".global_tokens must be >= 0");
}

// Size limits far above any published model (the largest have hidden 16,384, 126 layers, 128 heads,
// a 262k vocabulary and ~1M positions).
constexpr int64_t kMaxHidden = 1 << 16, kMaxLayers = 1024, kMaxHeads = 1024, kMaxHeadSize = 1 << 14,
                  kMaxVocab = 1 << 22, kMaxInner = 1 << 19, kMaxPositions = 1 << 21,
                  kMaxExperts = 1024;
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
  if (a.qk_norm_whole && !a.qk_norm) problem("qk_norm_whole needs qk_norm");
  if (!std::isfinite(a.qk_norm_weight_offset)) problem("qk_norm_weight_offset must be finite");
  if (!(a.logit_softcap >= 0) || !std::isfinite(a.logit_softcap)) problem("logit_softcap must be >= 0 (0 = none)");
  if (!(a.qkv_clip >= 0) || !std::isfinite(a.qkv_clip)) problem("qkv_clip must be >= 0 (0 = none)");
  if (a.qkv_clip > 0 && a.collaborative)
    problem("qkv_clip cannot be combined with collaborative heads (their queries and keys are shared across heads)");
  if (a.alibi && a.relative_bias) problem("alibi and relative_bias cannot be combined (two position biases)");
  if (a.relative_bias) {
    // A bidirectional stack's exact range is buckets / 4 offsets, which must be >= 1, and the
    // logarithmic buckets need max_distance beyond the exact range.
    if (a.relative_bias->buckets < 4) problem("relative_bias.buckets must be >= 4");
    if (a.relative_bias->max_distance <= a.relative_bias->buckets / 2)
      problem("relative_bias.max_distance must be more than buckets / 2 (" + std::to_string(a.relative_bias->buckets / 2) + ")");
  }
  if (a.latent) {
    const auto& m = *a.latent;
    const std::string w = "latent (multi-head latent attention): ";
    if (m.kv_rank < 1) problem(w + "kv_rank must be >= 1");
    if (m.q_rank < 0) problem(w + "q_rank must be >= 0 (0 = queries straight from the stream)");
    if (m.kv_rank > kMaxInner || m.q_rank > kMaxInner) problem(w + "a latent rank above " + std::to_string(kMaxInner) + " is more than HeadLab opens");
    if (m.rope_size < 0 || m.rope_size % 2 != 0) problem(w + "rope_size must be even and >= 0");
    if (m.rope_size >= a.key_size)
      problem(w + "rope_size (" + std::to_string(m.rope_size) + ") must be less than key_size (" +
              std::to_string(a.key_size) + "): each key has a non-rotated part from the latent");
    if (!(m.norm_eps > 0)) problem(w + "norm_eps must be > 0");
    if (a.kv_heads != a.heads) problem(w + "every head has its own key and value up-projection: kv_heads must equal heads");
    if (a.talking_heads) problem(w + "cannot be combined with talking_heads");
    if (a.collaborative) problem(w + "cannot be combined with collaborative heads");
    if (a.scoring != Scoring::Dot) problem(w + "needs dot-product scoring");
    if (a.qk_norm) problem(w + "cannot be combined with qk_norm (its latents have norms of their own)");
    if (a.qkv_clip > 0) problem(w + "cannot be combined with qkv_clip");
  }
  if (a.disentangled) {
    const auto& d = *a.disentangled;
    const std::string w = "disentangled (DeBERTa's relative attention): ";
    if (d.buckets < 0) problem(w + "buckets must be >= 0 (0 = offsets clamped to max_distance)");
    if (d.buckets > 0 && (d.buckets < 2 || d.buckets % 2 != 0)) problem(w + "buckets must be even and >= 2");
    if (d.max_distance < 1) problem(w + "max_distance must be >= 1");
    if (d.buckets > 0 && d.max_distance <= d.buckets / 2 + 1)
      problem(w + "with buckets, max_distance must be more than buckets / 2 + 1 (" + std::to_string(d.buckets / 2 + 1) +
              "): the logarithmic rows reach from buckets / 2 to it");
    if (d.span() > kMaxPositions) problem(w + "a position table above " + std::to_string(2 * kMaxPositions) + " rows is more than HeadLab opens");
    if (!d.c2p && !d.p2c) problem(w + "needs c2p, p2c or both (without either it is plain attention)");
    if (d.table_norm && !(d.table_norm_eps > 0)) problem(w + "table_norm_eps must be > 0");
    if (a.kv_heads != a.heads) problem(w + "its position keys are per query head: kv_heads must equal heads");
    if (a.talking_heads) problem(w + "cannot be combined with talking_heads");
    if (a.collaborative) problem(w + "cannot be combined with collaborative heads");
    if (a.latent) problem(w + "cannot be combined with multi-head latent attention");
    if (a.scoring != Scoring::Dot) problem(w + "needs dot-product scoring");
    if (a.qk_norm) problem(w + "cannot be combined with qk_norm (the position keys are not normalised)");
    if (a.qkv_clip > 0) problem(w + "cannot be combined with qkv_clip");
  }
  validate_pattern(a.pattern, where + ".pattern", problems);
  (void)hidden;
}

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

int64_t attention_parameters(const AttentionConfig& a, int hidden) {
  const int64_t D = hidden;
  int64_t n = 0;
  const int64_t qk_width = a.collaborative ? a.collaborative->shared_key_size : 0;
  if (a.latent) {  // LatentAttention's parameters; the up projections have no biases
    const auto& m = *a.latent;
    const int64_t H = a.heads, qr = m.q_rank, r = m.kv_rank, dR = m.rope_size;
    n += qr > 0 ? D * qr + (a.qkv_bias ? qr : 0) + qr + qr * H * a.key_size : D * H * a.key_size;
    n += D * (r + dR) + (a.qkv_bias ? r + dR : 0) + r;
    n += r * H * (a.key_size - dR) + r * H * a.value_size;
    n += H * a.value_size * D + (a.out_bias ? D : 0);
    if (a.sinks) n += H;
    return n;
  }
  if (a.collaborative) {
    n += D * qk_width * 2;                            // W̃_Q, W̃_K (no biases: re-parametrised)
    n += int64_t(a.heads) * qk_width;                 // mixing vectors m_i
    if (a.qkv_bias) n += int64_t(a.heads) * D;        // content biases r_i
  } else {
    n += D * a.heads * a.key_size + D * a.kv_heads * a.key_size;
    if (a.qkv_bias) n += int64_t(a.heads + a.kv_heads) * a.key_size;
    if (a.qk_norm)  // q_norm, k_norm weights: per head [d_k] each, or over the whole projections
      n += a.qk_norm_whole ? int64_t(a.heads + a.kv_heads) * a.key_size : 2 * int64_t(a.key_size);
  }
  n += D * a.value_heads_stored() * a.value_size + (a.qkv_bias ? int64_t(a.value_heads_stored()) * a.value_size : 0);
  n += int64_t(a.output_heads()) * a.value_size * D + (a.out_bias ? D : 0);
  if (a.talking_heads)
    n += int64_t(a.logit_heads()) * a.softmax_heads() + int64_t(a.softmax_heads()) * a.output_heads();
  if (a.scoring == Scoring::Additive) n += int64_t(a.heads) * a.key_size;
  if (a.sinks) n += a.softmax_heads();
  if (a.disentangled && !a.disentangled->shared_keys)  // attn.pos_k, attn.pos_q, each with a bias
    n += ((a.disentangled->c2p ? 1 : 0) + (a.disentangled->p2c ? 1 : 0)) * (D + 1) * a.heads * a.key_size;
  return n;
}

// The relative position tables, stored once per stack: T5's bias (RelativeBias) and DeBERTa's
// position embeddings with their LayerNorm (Disentangled).
int64_t relative_position_parameters(const AttentionConfig& a, int hidden) {
  int64_t n = a.relative_bias ? int64_t(a.relative_bias->buckets) * a.logit_heads() : 0;
  if (a.disentangled) n += (2 * int64_t(a.disentangled->span()) + (a.disentangled->table_norm ? 2 : 0)) * hidden;
  return n;
}

// Only the keys of its kind, so that a config says what it runs.
void validate_rope_scaling(const RopeScaling& r, bool rotary, int max_positions, std::vector<std::string>& problems) {
  if (r.kind == RopeScalingKind::None) return;
  const std::string where = std::string("rope_scaling (") + to_string(r.kind) + ")";
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

bool MoeConfig::is_dense(int layer) const {
  return std::find(dense_layers.begin(), dense_layers.end(), layer) != dense_layers.end();
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
  // DeBERTa: 1/sqrt(d·(1 + c2p + p2c)) for the content and position terms alike.
  if (disentangled) return 1.0f / std::sqrt(static_cast<float>(key_size) * static_cast<float>(disentangled->terms()));
  return 1.0f / std::sqrt(static_cast<float>(key_size));
}

std::string AttentionConfig::variant_name() const {
  std::ostringstream out;
  if (talking_heads) {
    out << "talking-heads(" << talking_heads->key_heads << "/" << talking_heads->softmax_heads << "/"
        << talking_heads->value_heads << ")";
  } else if (collaborative) {
    out << "collaborative(" << heads << "h, D̃k=" << collaborative->shared_key_size << ")";
  } else if (latent) {
    out << "MLA(" << heads << "h, latent " << latent->kv_rank;
    if (latent->q_rank > 0) out << ", query latent " << latent->q_rank;
    out << ", RoPE " << latent->rope_size << ")";
  } else if (kv_heads == heads) {
    out << "MHA(" << heads << "h)";
  } else if (kv_heads == 1) {
    out << "MQA(" << heads << "q/1kv)";
  } else {
    out << "GQA(" << heads << "q/" << kv_heads << "kv)";
  }
  if (scoring == Scoring::Additive) out << " additive";
  if (qk_norm) out << (qk_norm_whole ? " qk-norm(whole)" : " qk-norm");
  if (logit_softcap > 0) out << " softcap=" << logit_softcap;
  if (qkv_clip > 0) out << " qkv-clip=" << qkv_clip;
  if (alibi) out << " ALiBi";
  if (sinks) out << " sinks";
  if (disentangled) {
    out << " disentangled(" << (disentangled->c2p && disentangled->p2c ? "c2p+p2c" : disentangled->c2p ? "c2p" : "p2c");
    if (disentangled->buckets > 0) out << ", " << disentangled->buckets << " log buckets to " << disentangled->max_distance;
    else out << ", offsets to ±" << disentangled->max_distance;
    out << ")";
  }
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
  if (type_vocab_size < 0) problem("type_vocab_size must be >= 0 (0 = no token types)");
  if (objective != "mlm" && objective != "causal" && objective != "seq2seq" && objective != "none")
    problem("objective must be mlm, causal, seq2seq or none, not '" + objective + "'");
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
  if (ffn.kind == FfnKind::ClampedSwiGLU && !(ffn.limit > 0 && std::isfinite(ffn.limit)))
    problem("ffn.limit must be > 0 (the clamp of gpt-oss's GLU)");
  if (ffn.moe) {
    const MoeConfig& e = *ffn.moe;
    if (ffn.kind == FfnKind::None) problem("ffn.moe needs an FFN kind for its experts");
    if (e.experts < 1 || e.experts > kMaxExperts)
      problem("ffn.moe.experts must be in 1.." + std::to_string(kMaxExperts) + ", got " + std::to_string(e.experts));
    if (e.top_k < 1 || e.top_k > e.experts)
      problem("ffn.moe.top_k must be in 1..experts (" + std::to_string(e.experts) + "), got " + std::to_string(e.top_k));
    if (e.shared_inner_size < 0) problem("ffn.moe.shared_inner_size must be >= 0 (0 = no shared expert)");
    if (e.groups < 1 || e.experts % e.groups != 0)
      problem("ffn.moe.groups (" + std::to_string(e.groups) + ") must divide experts (" + std::to_string(e.experts) + ")");
    else if (e.top_groups < 1 || e.top_groups > e.groups)
      problem("ffn.moe.top_groups must be in 1..groups (" + std::to_string(e.groups) + ")");
    else if (e.top_groups * (e.experts / e.groups) < e.top_k)
      problem("ffn.moe: top_groups × experts per group (" + std::to_string(e.top_groups * (e.experts / e.groups)) +
              ") must be at least top_k (" + std::to_string(e.top_k) + ")");
    if (e.group_score == GroupScore::TopTwoSum && e.groups > 1 && e.experts / e.groups < 2)
      problem("ffn.moe.group_score top2_sum needs at least two experts a group");
    if (!(e.scale > 0) || !std::isfinite(e.scale)) problem("ffn.moe.scale must be > 0");
    if (!e.dense_layers.empty() && e.dense_inner_size < 1) problem("ffn.moe.dense_inner_size must be >= 1 with dense_layers");
    limit(e.dense_inner_size, kMaxInner, "ffn.moe.dense_inner_size");
    for (const auto* s : {&encoder, &decoder})
      if (*s) validate_layer_list(e.dense_layers, (*s)->layers, "ffn.moe.dense_layers", problems);
    limit(e.shared_inner_size, kMaxInner, "ffn.moe.shared_inner_size");
  }
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
  if (!sublayer_input_norm) {
    if (norm_placement != NormPlacement::Pre || !sublayer_output_norm)
      problem("sublayer_input_norm false needs norm_placement 'pre' and sublayer_output_norm (each sublayer's "
              "output is then what is normalised)");
    if (parallel_residual || kind == StackKind::EncoderDecoder)
      problem("sublayer_input_norm false: not with parallel_residual or cross attention");
  }
  if (!first_attention_norm) {
    if (norm_placement != NormPlacement::Pre) problem("first_attention_norm false needs norm_placement 'pre'");
    for (const auto* stack : {&encoder, &decoder})
      if (*stack && (*stack)->shared_layers)
        problem("first_attention_norm false: not with shared_layers (layer 0's weights run in every layer)");
  }
  if (parallel_residual) {
    if (norm_placement != NormPlacement::Pre) problem("parallel_residual needs norm_placement 'pre'");
    if (ffn.kind == FfnKind::None) problem("parallel_residual needs an FFN to run beside attention");
    if (sublayer_output_norm) problem("parallel_residual cannot be combined with sublayer_output_norm");
    if (kind == StackKind::EncoderDecoder) problem("parallel_residual: not with cross attention (encoder-decoder)");
  }
  if (rope_interleaved && positions != PositionKind::Rope && positions != PositionKind::RopeLearned)
    problem("rope_interleaved: only meaningful with positions 'rope' or 'rope+learned', not '" + std::string(to_string(positions)) + "'");
  if (rope_dim > 0 && positions != PositionKind::Rope && positions != PositionKind::RopeLearned)
    problem("rope_dim: only meaningful with positions 'rope' or 'rope+learned', not '" + std::string(to_string(positions)) + "'");
  if ((positions == PositionKind::Rope || positions == PositionKind::RopeLearned) && !(rope_theta > 0 && std::isfinite(rope_theta)))
    problem("rope_theta must be > 0 (the rotary base), got " + std::to_string(rope_theta));
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
    if (stack->cross_attention && stack->cross_attention->latent)
      problem(std::string(name) + ".cross_attention.latent: multi-head latent attention is a self-attention option");
    if (stack->cross_attention && stack->cross_attention->sinks)
      problem(std::string(name) + ".cross_attention.sinks: learned sinks are a self-attention option");
    if (stack->cross_attention && stack->cross_attention->disentangled)
      problem(std::string(name) + ".cross_attention.disentangled: relative positions are between a sequence's own "
              "tokens (self-attention only)");
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
      if (a.latent && rope_dim > 0)
        problem(std::string(name) + ": rope_dim cannot be set with multi-head latent attention (its rotated size is "
                "latent.rope_size)");
      if (a.latent && a.latent->rope_size == 0)
        problem(std::string(name) + ": multi-head latent attention with rotary positions needs latent.rope_size > 0");
      const int key = a.collaborative ? a.collaborative->shared_key_size : a.key_size;
      const int dim = a.latent ? a.latent->rope_size : rope_dim > 0 ? rope_dim : key;
      if (!a.latent && rope_dim > key)
        problem(std::string(name) + ": rope_dim " + std::to_string(rope_dim) + " is more than the key size (" +
                std::to_string(key) + ") it rotates");
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
    double attention = D * (double(a.heads) * a.key_size + double(a.kv_heads) * (a.key_size + a.value_size) +
                            double(a.heads) * a.value_size);
    if (a.latent) {  // the down projections, the up projections from the latents, W_O
      const double qr = a.latent->q_rank, r = a.latent->kv_rank, H = a.heads;
      attention = (qr > 0 ? D * qr + qr * H * a.key_size : D * H * a.key_size) + D * (r + a.latent->rope_size) +
                  r * H * (a.key_size - a.latent->rope_size + a.value_size) + H * a.value_size * D;
    }
    if (a.disentangled && !a.disentangled->shared_keys)  // pos_k, pos_q
      attention += ((a.disentangled->c2p ? 1 : 0) + (a.disentangled->p2c ? 1 : 0)) * D * a.heads * a.key_size;
    const double ffn_units = ffn.moe ? double(ffn.moe->experts) * F + double(ffn.moe->shared_inner_size) + 1 : F;
    const double tables = a.disentangled ? 2.0 * a.disentangled->span() * D : 0.0;  // once per stack
    return (s->shared_layers ? 1.0 : double(s->layers)) * (attention * (s->cross_attention ? 2 : 1) + 3 * D * ffn_units) +
           tables;
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
  const bool gated = ffn.kind == FfnKind::SwiGLU || ffn.kind == FfnKind::ClampedSwiGLU;
  auto one_ffn = [&](int64_t inner) { return (gated ? 3 : 2) * D * inner + (ffn.bias ? inner * (gated ? 2 : 1) + D : 0); };
  int64_t ffn_params = !has_ffn ? 0 : one_ffn(ffn.inner_size);
  int64_t dense_params = 0;  // MoeConfig::dense_layers: a plain FFN
  if (has_ffn && ffn.moe) {
    const MoeConfig& e = *ffn.moe;
    ffn_params = e.experts * ffn_params + e.experts * D + (e.router_bias ? e.experts : 0) +
                 (e.choice_bias ? e.experts : 0) + (e.shared_inner_size > 0 ? one_ffn(e.shared_inner_size) : 0);
    dense_params = one_ffn(e.dense_inner_size);
  }
  auto stack_params = [&](const std::optional<StackConfig>& s) -> int64_t {
    if (!s) return 0;
    const int64_t norms_per_sublayer = (sublayer_output_norm ? 1 : 0) + (sublayer_input_norm ? 1 : 0);
    int64_t per_layer = attention_parameters(s->attention, hidden_size) + ffn_params +
                        (has_ffn ? 2 : 1) * norms_per_sublayer * norm_params;
    // Layer 0 without its attention norm (first_attention_norm false).
    const int64_t missing = !first_attention_norm && sublayer_input_norm ? norm_params : 0;
    if (s->cross_attention)
      per_layer += attention_parameters(*s->cross_attention, hidden_size) + norms_per_sublayer * norm_params;
    const int64_t dense = has_ffn && ffn.moe ? int64_t(ffn.moe->dense_layers.size()) * (dense_params - ffn_params) : 0;
    return per_layer * (s->shared_layers ? 1 : s->layers) + dense - missing + relative_position_parameters(s->attention, hidden_size) +
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
          : ffn.kind == FfnKind::ClampedSwiGLU    ? "clamped SwiGLU (limit " + json(ffn.limit).dump() + ")"
          : ffn.activation == Activation::Silu ? std::string("SwiGLU")
                                               : std::string("GLU/") + to_string(ffn.activation))  // GeGLU: GLU/gelu_tanh
      << (ffn.kind == FfnKind::None ? std::string() : " " + std::to_string(ffn.inner_size))
      << (ffn.moe ? " × " + std::to_string(ffn.moe->experts) + " experts, top " + std::to_string(ffn.moe->top_k) +
                        (ffn.moe->normalize ? "" : " (weights not renormalised)") +
                        (ffn.moe->shared_inner_size > 0 ? ", a shared expert of " + std::to_string(ffn.moe->shared_inner_size) : "") +
                        (ffn.moe->scores == RouterScores::Sigmoid ? ", sigmoid router" : "") +
                        (ffn.moe->groups > 1 ? ", best " + std::to_string(ffn.moe->top_groups) + " of " +
                                                   std::to_string(ffn.moe->groups) + " groups" : "") +
                        (!ffn.moe->dense_layers.empty() ? ", " + std::to_string(ffn.moe->dense_layers.size()) +
                                                              " dense layer(s) of " + std::to_string(ffn.moe->dense_inner_size) : "")
                  : std::string())
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

}  // namespace headlab::core
