// Autoregressive generation: a causal model (or an encoder-decoder's decoder) writes token by token,
// each step feeding only the new token through the layers and reading every earlier token's keys and
// values from the KV cache (core/model/kv_cache.h), with the user's head controls applied at every step.
// Each step reports the token, the distribution it was drawn from and the new query's attention row
// in every head — what the window's Generate view and `headlab generate --out` show.
#pragma once

#include "core/controls.h"
#include "core/model/model.h"

#include <ATen/core/Generator.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace headlab::core {

struct Sampling {
  float temperature = 0;  // 0 = greedy (the most probable token)
  int top_k = 0;          // keep the k most probable tokens (0 = all)
  float top_p = 1;        // keep the smallest set whose probability reaches p (Holtzman et al. 2020)
  uint64_t seed = 0;      // the same seed draws the same tokens
};

struct GenerateRequest {
  std::vector<int64_t> prompt;          // decoder-only: the text so far; encoder-decoder: the source (encoder) ids
  std::vector<int64_t> decoder_prompt;  // encoder-decoder: the decoder's first ids (its start token)
  int max_new = 20;
  Sampling sampling;
  std::vector<int64_t> stop_ids;  // end-of-sequence ids: generation stops once one is drawn
  // The first tokens to write as given: their steps are computed (logits, attention rows) but not
  // drawn — going back to a step and writing again from there, under other controls.
  std::vector<int64_t> forced;
  bool use_cache = true;          // false: each step recomputes the whole sequence (the cache's baseline)
  ModelControls controls;
  // Set → the generation ends within one layer: the step under way is dropped, the steps made
  // stand, and `stopped` says "cancelled".
  const std::atomic<bool>* cancel = nullptr;
  // Called after each layer of the step under way with (layers done, layers in the step) — the
  // decoder's layers from the cache; every layer the recomputing baseline re-runs otherwise, an
  // encoder-decoder's encoder too. Returning false ends the generation as `cancel` does.
  std::function<bool(int done, int total)> progress;
};

struct GenerationStep {
  int64_t token = 0;     // the token drawn at this step
  torch::Tensor logits;  // [V] the logits it was drawn from (before temperature)
  // Per decoder layer: the attention row of the query that produced the token — the last token of
  // the sequence so far, T_s tokens at step s — in every head: [h_v, T_s] (U, what multiplies the
  // values). Keys a sliding window no longer reaches hold 0, as in a full run.
  std::vector<torch::Tensor> attention;
  std::vector<torch::Tensor> cross_attention;  // encoder-decoder: [h_v, S_source]
  // Per decoder layer, with learned sinks (AttentionConfig::sinks): the same query's share of the
  // sink in every softmax head [h] — the row of W sums to 1 minus it. Undefined in a layer without.
  std::vector<torch::Tensor> sink_share;
  int64_t cache_bytes = 0;                      // the KV cache after this step (0 without a cache)
};

struct Generation {
  std::vector<int64_t> tokens;  // the generated tokens, in order
  std::vector<GenerationStep> steps;
  std::string stopped;          // "end of sequence", "max_new" or "cancelled"
  std::vector<std::string> notes;  // how the run differed from the request (steps recomputed, not cached)
};

// Generates from `request`; `on_step` sees each step as it is made. Throws std::invalid_argument for
// a model without a decoder, an empty prompt, a length beyond the model's positions (max_positions;
// dynamic RoPE, which exists to run past it, excepted), or mean ablation over the input's own
// positions (it needs the whole sequence).
Generation generate(Model& model, const GenerateRequest& request,
                    const std::function<void(const GenerationStep&)>& on_step = {});

// The next token from logits [V] under `sampling` (greedy when the temperature is 0).
int64_t sample_token(const torch::Tensor& logits, const Sampling& sampling, at::Generator& generator);

}  // namespace headlab::core
