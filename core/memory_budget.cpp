#include "core/memory_budget.h"

#include "core/controls.h"
#include "core/weights_memory.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace headlab::core {

namespace {

std::atomic<int64_t> g_limit{0};  // 0: default

// Estimates in double first: the point is to refuse sizes that would overflow anything else.
int64_t clamp_bytes(double bytes) { return bytes > 9e18 ? int64_t(9e18) : static_cast<int64_t>(bytes); }

struct StackCost {
  double captured = 0, maps = 0, working = 0, backward = 0;
};

// One stack of `layers` layers: T queries over S keys (self-attention: S = T), plus cross-attention
// over `cross` keys when the stack has it.
StackCost stack_cost(const ModelConfig& c, const StackConfig& s, double T, double cross, unsigned capture,
                     Stack self_stack, const MapDetail& detail) {
  const double D = c.hidden_size, F = c.ffn.kind == FfnKind::None ? 0 : c.ffn.inner_size, L = s.layers;
  StackCost out;
  auto attention = [&](const AttentionConfig& a, double S, Stack stack) {
    // J: one map per (key) head; L and W: per softmax head (talking heads may have more); U: per value head.
    const double hk = a.heads, h = a.talking_heads ? a.talking_heads->softmax_heads : a.heads, hv = a.output_heads();
    double per_cell = 0;  // maps kept per (query, key) cell
    if (capture & kCaptureLogits) per_cell += hk;
    if (capture & kCaptureMixedLogits) per_cell += h;
    if (capture & kCaptureWeights) per_cell += h;
    if (capture & kCaptureMixedWeights) per_cell += hv;
    // Thumbnails for the pooled layers, the full size for the one kept whole (core/map_detail.h).
    const double full_cells = T * S;
    double cells = L * full_cells;
    if (detail.pooled()) {
      const double thumb = double(pooled_length(int64_t(T), detail.thumbnail_side)) *
                           double(pooled_length(int64_t(S), detail.thumbnail_side));
      const bool one_full = detail.full_stack == stack && detail.full_layer >= 0 && detail.full_layer < L;
      cells = (one_full ? (L - 1) * thumb + full_cells : L * thumb);
    }
    const double maps = per_cell * cells;
    out.maps += maps * 4;
    out.captured += maps * 4;
    if (capture & kCaptureHeadOutputs) out.captured += L * 2 * hv * T * a.value_size * 4;
    if (capture & kCapturePatchSites)
      out.captured += L * (T * a.logit_heads() * a.key_size + S * a.kv_heads * a.key_size +
                           S * a.value_heads_stored() * a.value_size + T * D) * 4;
    // One layer at a time: scores, masked scores, softmax and its mixes.
    out.working = std::max(out.working, 4 * h * T * S * 4);
    // Autograd keeps, per layer, the scores and softmax of every head, Q/K/V and the FFN's input
    // and activation.
    out.backward += L * (3 * h * T * S + 3 * T * (h * a.key_size + hv * a.value_size)) * 4;
  };
  attention(s.attention, T, self_stack);
  if (s.cross_attention) attention(*s.cross_attention, cross, Stack::Cross);
  if (capture & kCaptureResidual) out.captured += (L + 1) * T * D * 4;
  out.working += (3 * T * F + 8 * T * D) * 4;
  out.backward += L * (3 * T * F + 8 * T * D) * 4;
  return out;
}

}  // namespace

MemoryEstimate estimate_run_memory(const ModelConfig& config, int64_t tokens, int64_t decoder_tokens, unsigned capture,
                                   int64_t logit_positions, bool with_backward, const MapDetail& maps) {
  StackCost total;
  auto add = [&](const StackCost& s) {
    total.captured += s.captured;
    total.maps += s.maps;
    total.working = std::max(total.working, s.working);
    total.backward += s.backward;
  };
  const double T = double(tokens);
  const double out_tokens = config.kind == StackKind::EncoderDecoder ? double(decoder_tokens) : T;
  if (config.encoder) add(stack_cost(config, *config.encoder, T, 0, capture, Stack::Encoder, maps));
  if (config.decoder)
    add(stack_cost(config, *config.decoder, config.kind == StackKind::EncoderDecoder ? double(decoder_tokens) : T, T,
                   capture, Stack::Decoder, maps));
  const double P = logit_positions > 0 ? double(logit_positions) : out_tokens;
  total.captured += P * double(config.vocab_size) * 4;
  if (with_backward) total.backward += out_tokens * double(config.vocab_size) * 4 * 2;
  MemoryEstimate e;
  e.captured = clamp_bytes(total.captured);
  e.maps = clamp_bytes(total.maps);
  e.working = clamp_bytes(total.working);
  e.backward = with_backward ? clamp_bytes(total.backward) : 0;
  return e;
}

int64_t kv_cache_bytes(const ModelConfig& config, int64_t tokens) {
  if (!config.decoder) return 0;
  const StackConfig& stack = *config.decoder;
  int64_t bytes = 0;
  for (int l = 0; l < stack.layers; ++l) {
    const AttentionConfig a = stack.layer_attention(l);
    const int64_t keys = a.collaborative ? a.collaborative->shared_key_size : int64_t(a.kv_heads) * a.key_size;
    const int64_t bias = a.collaborative && a.qkv_bias ? a.heads : 0;
    // Multi-head latent attention caches the latent and the shared rotated key, nothing per head.
    const int64_t floats = a.latent ? int64_t(a.latent->kv_rank) + a.latent->rope_size
                                    : keys + bias + int64_t(a.value_heads_stored()) * a.value_size;
    int64_t kept = tokens;
    if (a.pattern.window > 0) {
      const int64_t reach = int64_t(a.pattern.window) * std::max(1, a.pattern.dilation) + 1;
      kept = std::min(tokens, reach + static_cast<int64_t>(a.pattern.global_tokens.size()));
    }
    bytes += kept * floats * 4;
  }
  return bytes;
}

int64_t kv_cache_bytes_per_token(const ModelConfig& config) { return kv_cache_bytes(config, 1); }

int64_t kv_cache_bytes_per_token_as_mha(const ModelConfig& config) {
  if (!config.decoder) return 0;
  ModelConfig mha = config;
  auto& a = mha.decoder->attention;
  if (!a.collaborative && !a.talking_heads) a.kv_heads = a.heads;
  a.latent.reset();  // MLA: each head's keys and values, key_size and value_size wide
  return kv_cache_bytes_per_token(mha);
}

int64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;
  }
  return -1;
}

int64_t parse_byte_size(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a size (e.g. 4096, 512M, 12G)");
  }
  std::string suffix = text.substr(used);
  for (auto& ch : suffix) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
  const double scale = suffix.empty() ? 1.0
                       : suffix == "K" ? 1024.0
                       : suffix == "M" ? 1024.0 * 1024
                       : suffix == "G" ? 1024.0 * 1024 * 1024
                       : suffix == "T" ? 1024.0 * 1024 * 1024 * 1024
                                       : -1.0;
  if (scale < 0 || !(value > 0) || !std::isfinite(value))
    throw std::invalid_argument("'" + text + "' is not a size (e.g. 4096, 512M, 12G)");
  return clamp_bytes(value * scale);
}

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f GB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.0f MB", b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.0f KB", std::max(1.0, b / 1024.0));
  return buf;
}

void set_memory_limit(int64_t bytes) { g_limit.store(bytes); }

int64_t memory_limit() {
  const int64_t set = g_limit.load();
  if (set != 0) return set;
  if (const char* env = std::getenv("HEADLAB_MEMORY_LIMIT"); env && *env) {
    try {
      return parse_byte_size(env);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("HEADLAB_MEMORY_LIMIT: ") + e.what());
    }
  }
  const int64_t available = available_memory();
  return available > 0 ? available / 2 : -1;
}

namespace {

// " (half the free memory)" when the limit is the default one, else "".
std::string default_limit_note() {
  return g_limit.load() != 0 || std::getenv("HEADLAB_MEMORY_LIMIT") ? "" : " (half the free memory)";
}

}  // namespace

void check_weights_memory(const ModelConfig& config, int copies, const std::string& what) {
  const int64_t limit = memory_limit();
  const double parameters = config.parameter_estimate();
  const int64_t bytes = clamp_bytes(parameters * 4.0 * copies);
  if (limit < 0 || bytes <= limit) return;
  char count[32];
  if (parameters >= 1e9) std::snprintf(count, sizeof count, "%.1f billion", parameters / 1e9);
  else std::snprintf(count, sizeof count, "%.1f million", parameters / 1e6);
  throw MemoryLimitError(what + ": a model of this config has " + count + " parameters, " + format_bytes(bytes) +
                         (copies > 1 ? " with their gradients and optimizer state" : " in float32") +
                         ", more than the limit of " + format_bytes(limit) + default_limit_note() +
                         ". Make the config smaller (hidden_size, vocab_size, layers, inner_size) or raise the limit "
                         "(--memory-limit, HEADLAB_MEMORY_LIMIT).");
}

void check_memory(const MemoryEstimate& estimate, const std::string& what, int64_t tokens) {
  const int64_t limit = memory_limit();
  if (limit < 0 || estimate.total() <= limit) return;
  std::ostringstream m;
  m << what << " needs about " << format_bytes(estimate.total()) << " (" << tokens << " tokens; attention maps "
    << format_bytes(estimate.maps);
  if (estimate.backward > 0) m << ", backward pass " << format_bytes(estimate.backward);
  m << "), more than the limit of " << format_bytes(limit)
    << default_limit_note()
    << ". Use a shorter input";
  if (estimate.maps > estimate.total() / 4) m << " (the maps grow with its square)";
  m << ", capture fewer stages, or raise the limit (--memory-limit, HEADLAB_MEMORY_LIMIT).";
  throw MemoryLimitError(m.str());
}

}  // namespace headlab::core
