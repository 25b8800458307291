// What a run will need before it starts, and the limit it must stay under. A 4,000-token input to a
// 32-layer model with every stage captured asks for tens of gigabytes of attention maps alone
// (T² × heads × layers × stages × 4 bytes); HeadLab refuses such a run with a message that says what
// to change, instead of letting the system kill it or swap for minutes.
#pragma once

#include "core/config.h"
#include "core/map_detail.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace headlab::core {

// Thrown when a run's estimate exceeds the limit; what() says what to change.
struct MemoryLimitError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MemoryEstimate {
  int64_t captured = 0;  // bytes kept in the trace: captured stages, residual stream, logits
  int64_t working = 0;   // bytes alive at once while one layer runs (scores, softmax, FFN)
  int64_t backward = 0;  // bytes autograd keeps for a backward pass (LRP, importance); 0 for inference
  int64_t maps = 0;      // of `captured`: the attention maps (T × S per head and stage)
  int64_t total() const { return captured + working + backward; }
};

// The estimate for one forward pass of `config` over `tokens` tokens (`decoder_tokens` for an
// encoder-decoder's decoder), capturing `capture` (core/model/attention.h flags), with logits at
// `logit_positions` positions (0 = every position), plus a backward pass when `with_backward`. The
// maps count at the size `maps` keeps them: thumbnails for every layer but its full one.
MemoryEstimate estimate_run_memory(const ModelConfig& config, int64_t tokens, int64_t decoder_tokens, unsigned capture,
                                   int64_t logit_positions = 0, bool with_backward = false, const MapDetail& maps = {});

// Bytes the KV cache of generation (core/model/kv_cache.h) holds after `tokens` decoder tokens: per
// decoder layer, each kept token's float32 keys and values — h_kv·d_k + h_v·d_v (collaborative:
// D̃_k + d_v·h_v, plus h for a content bias) — a sliding-window layer keeping at most
// window · dilation + 1 tokens and its global tokens. An encoder-decoder's cross-attention adds its
// source's keys and values once, not counted here.
int64_t kv_cache_bytes(const ModelConfig& config, int64_t tokens);
// The same for one token: what each generated token adds while the text is shorter than any window.
int64_t kv_cache_bytes_per_token(const ModelConfig& config);
// The same for the model with a key/value head per query head (MQA and GQA turned back into MHA;
// collaborative and talking-heads keys are not per head and count as they are).
int64_t kv_cache_bytes_per_token_as_mha(const ModelConfig& config);

// Bytes of memory the system can still give (MemAvailable of /proc/meminfo), or -1 if unknown.
int64_t available_memory();

// The limit runs are held to: set_memory_limit's value, else $HEADLAB_MEMORY_LIMIT (bytes, or with a
// K/M/G suffix), else half the available memory (unlimited when that is unknown: -1).
int64_t memory_limit();
// Sets the limit for this process (a CLI's --memory-limit); 0 restores the default, -1 = none.
void set_memory_limit(int64_t bytes);
// "12G" / "512M" / "4096" → bytes; throws std::invalid_argument naming the text.
int64_t parse_byte_size(const std::string& text);
// "1.5 GB", "312 MB", "4 KB".
std::string format_bytes(int64_t bytes);

// Throws MemoryLimitError when `estimate` exceeds memory_limit(): the message names `what` (e.g.
// "this run"), the sizes, and what to change (a shorter input, fewer captured stages, the limit).
void check_memory(const MemoryEstimate& estimate, const std::string& what, int64_t tokens);

}  // namespace headlab::core
