// One attention module for every variant HeadLab runs: MHA/MQA/GQA, decoupled key and value
// sizes, talking-heads, collaborative, latent, disentangled, dot-product or additive scoring, and
// Longformer patterns.
// On request it hands back every stage per head (see AttentionStages).
#pragma once

#include "core/config.h"
#include "core/controls.h"
#include "core/model/kv_cache.h"
#include "core/model/linear.h"
#include "core/model/patch.h"

#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <utility>

namespace headlab::core {

// Which stages a run keeps: Capture (core/controls.h).

// The stages of one attention call; a tensor is undefined unless captured.
struct AttentionStages {
  torch::Tensor logits;         // J [B, h_k, T, S] — scaled scores per key head (soft-capped when logit_softcap > 0)
  torch::Tensor mixed_logits;   // L [B, h, T, S]   — after P_l and the user's pre-softmax mix, before the mask
  torch::Tensor weights;        // W [B, h, T, S]   — softmax over keys
  // AttentionConfig::sinks: each row's share of the learned sink [B, h, T]; a row of W sums to 1 minus
  // it. Captured with W; undefined in a model without sinks.
  torch::Tensor sink_share;
  torch::Tensor mixed_weights;  // U [B, h_v, T, S] — after P_w and the user's post-softmax mix (== W when none)
  torch::Tensor head_outputs;   // O [B, h_v, T, d_v] — U·V per head, before gates and W_O
  // What W_O reads [B, h_v, T, d_v]: O after the gates and ablation (the same tensor as O when the
  // controls set no gates). Captured with kCaptureHeadOutputs; analysis/lrp.cpp differentiates the
  // loss with respect to it to get ∂L/∂g_i exactly, even at g_i = 0.
  torch::Tensor gated_outputs;
  // kCapturePatchSites: the queries and keys as the scores read them (after the q/k norms and RoPE;
  // collaborative: after the mixing vectors), and the values, before GQA's repeat.
  torch::Tensor queries;  // [B, h_k, T, d_k]
  torch::Tensor keys;     // [B, kv, S, d_k]
  torch::Tensor values;   // [B, kv, S, d_v]
};

// Rotary position tables for the query and key positions (Hugging Face rotate-half layout).
struct RopeTables {
  torch::Tensor cos;  // [T, rot]
  torch::Tensor sin;  // [T, rot]
  // The tables of StackConfig::local layers when they have a RoPE base of their own, else undefined.
  torch::Tensor local_cos, local_sin;  // [T, rot]
  // ModelConfig::rope_interleaved: the tables repeat each angle twice side by side and pairs
  // (x_{2i}, x_{2i+1}) rotate; else the tables are [angles | angles] and (x_i, x_{i+rot/2}) rotate.
  bool interleaved = false;
  bool defined() const { return cos.defined(); }
};

// ALiBi's slopes m_h for `heads` logit heads, float32 [heads], as BLOOM's build_alibi_tensor computes
// them: for n = 2^k heads, m_h = (2^(−8/n))^(h+1); otherwise the n' = 2^⌊log₂ heads⌋ slopes of n', then
// the odd powers of 2^(−4/n') (every other slope of 2n' heads). Press et al. 2022 define the same
// sequence; MPT orders the extra slopes of a non-power-of-two head count otherwise.
torch::Tensor alibi_slopes(int64_t heads);

struct AttentionCall {
  torch::Tensor query_input;  // [B, T, D]
  torch::Tensor key_input;    // [B, S, D] — the same tensor for self-attention
  bool causal = false;
  bool apply_pattern = true;   // cross-attention ignores the Longformer pattern
  torch::Tensor key_padding;   // [B, S] bool, true = padding (optional)
  const HeadControls* controls = nullptr;
  // Differentiable gates [B or 1, h_v] multiplying each head's output O_i before W_O (zero
  // ablation, Voita et al. 2019), after the controls' own gates; undefined = none. Head pruning
  // (core/train/head_pruning.h) trains them.
  torch::Tensor head_gates;
  unsigned capture = kCaptureNone;
  RopeTables rope;             // empty = no rotary positions
  bool lrp = false;            // analysis/LRP.md rule 1: attention weights are constants
  // Generation (core/model/kv_cache.h). Self-attention: query_input holds the new tokens at positions
  // [position, position + T); their keys and values are appended to `cache` and they attend to
  // every cached key (the rotary tables must cover position + T rows). Cross-attention: the keys
  // and values are computed from key_input on the first call and read from `cache` after.
  LayerCache* cache = nullptr;
  int64_t position = 0;
  // Activation patches of this layer's q, k, v, pattern and z (core/model/patch.h); self-attention
  // of a whole sequence only (not with a cache).
  const LayerPatches* patches = nullptr;
};

// [T, S] bool, true where query t may attend to key s.
torch::Tensor attention_allowed(int64_t T, int64_t S, bool causal, const AttentionPattern& pattern);
// The same for queries and keys at absolute positions query_positions [T] and key_positions [S].
torch::Tensor attention_allowed(const torch::Tensor& query_positions, const torch::Tensor& key_positions, bool causal,
                                const AttentionPattern& pattern);

// T5's bucket (RelativeBias, core/config.h) of each key's offset from each query, for queries at
// query_positions [T] and keys at key_positions [S]: [T, S] int64 in [0, buckets). Transcribes
// transformers' T5Attention._relative_position_bucket, its logarithm in float32 as there.
torch::Tensor relative_position_buckets(const torch::Tensor& query_positions, const torch::Tensor& key_positions,
                                        int buckets, int max_distance, bool bidirectional);

// DeBERTa's row of the position table (Disentangled, core/config.h) for each key from each query, for
// queries at query_positions [T] and keys at key_positions [S]: [T, S] int64 in [0, 2·span).
// Transcribes transformers' build_relative_position and make_log_bucket_position (its logarithm in
// float32 as there), then clamp(δ + span, 0, 2·span − 1) as DisentangledSelfAttention does.
torch::Tensor disentangled_position_rows(const torch::Tensor& query_positions, const torch::Tensor& key_positions,
                                         const Disentangled& d);

// Soft-capping cap · tanh(x / cap) (Gemma 2). With `lrp` it passes relevance unchanged: x · [capped / x]
// with the bracket constant (analysis/LRP.md rule 3).
torch::Tensor soft_cap(const torch::Tensor& x, float cap, bool lrp = false);

// Applies rotary embeddings to x [B, H, T, d] over its first rot = tables.cos.size(1) dims, for the
// positions [offset, offset + T).
torch::Tensor apply_rope(const torch::Tensor& x, const RopeTables& tables, int64_t offset = 0);

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const AttentionConfig& config, int hidden_size);

  // Returns [B, T, D]; fills `stages` with what `call.capture` asks for.
  torch::Tensor forward(const AttentionCall& call, AttentionStages* stages = nullptr);

  const AttentionConfig& config() const { return config_; }

  // Projections; names match the weight files ("q", "k", "v", "o").
  Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  torch::Tensor mix;           // collaborative m_i: [h, D̃_k]
  torch::Tensor content_bias;  // collaborative r_i: [h, D] (when qkv_bias)
  torch::Tensor pre_mix;    // talking-heads P_l: [h_k, h]
  torch::Tensor post_mix;   // talking-heads P_w: [h, h_v]
  torch::Tensor score_v;    // additive scoring v: [h, d_k]
  torch::Tensor q_norm, k_norm;  // qk_norm RMSNorm weights: [d_k] each
  torch::Tensor sinks;           // AttentionConfig::sinks: the learned sink logit per softmax head [h]
  // AttentionConfig::latent (multi-head latent attention): the down projections to the query latent
  // [q_rank, D] (with one) and to the key/value latent and shared rotated key [kv_rank + rope_size, D],
  // and the latents' RMSNorm weights [q_rank], [kv_rank]; q, k and v are then the up projections.
  Linear q_down{nullptr}, kv_down{nullptr};
  torch::Tensor q_latent_norm, kv_latent_norm;
  // RelativeBias table [buckets, h_k]: a parameter of layer 0's module, the same tensor in the
  // stack's other layers (core/model/transformer.cpp shares it).
  torch::Tensor relative_bias;
  // Disentangled attention: the position table [2·span, D] and its LayerNorm — layer 0's parameters, the
  // same in the stack's other layers, like relative_bias — and, without shared keys, this layer's own
  // projections of the table (c2p: pos_k, p2c: pos_q).
  torch::Tensor rel_embeddings;
  torch::nn::LayerNorm rel_norm{nullptr};
  Linear pos_k{nullptr}, pos_q{nullptr};

 private:
  // DeBERTa's c2p and p2c logits [B, h, T, S] (unscaled) for queries q_heads [B, h, T, d_k] at positions
  // [offset, offset + T) and keys k_heads [B, h, S, d_k] at key_positions [S].
  torch::Tensor disentangled_scores(const torch::Tensor& q_heads, const torch::Tensor& k_heads, int64_t offset,
                                    const torch::Tensor& key_positions) const;
  torch::Tensor scores(const torch::Tensor& q, const torch::Tensor& k) const;  // J
  // Multi-head latent attention: every head's keys and values from the latents (AttentionConfig::latent).
  std::pair<torch::Tensor, torch::Tensor> latent_keys_values(const torch::Tensor& latent, const torch::Tensor& rope_key);
  // Drops the cached keys no query from position `next` on can reach (a sliding window's past).
  void forget_unreachable(LayerCache& cache, int64_t next) const;
  AttentionConfig config_;
};
TORCH_MODULE(Attention);

}  // namespace headlab::core
