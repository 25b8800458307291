// The key/value cache of autoregressive generation: per layer, the keys and values of every token
// fed so far, in the form the layer's attention variant stores them — per kv head for MHA, MQA and
// GQA (h_kv × S × d_k and d_v: MQA keeps 1/h of MHA's, GQA g/h), the one shared key projection of
// collaborative heads, the key heads of talking heads, the latent and shared rotated key of multi-head
// latent attention (read through the absorbed up-projections, never expanded per head). A sliding-window layer keeps only the keys
// a later query can still reach (the last w·dilation positions, and global tokens), so its cache
// is bounded by the window. Cross-attention keys and values of an encoder-decoder are computed once.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace headlab::core {

struct LayerCache {
  // [B, h_kv, S, d_k] after qk-norm and RoPE; collaborative: [B, 1, S, D̃_k]; multi-head latent
  // attention: the shared rotated key [B, 1, S, d_R]
  torch::Tensor keys;
  torch::Tensor values;     // [B, h_v stored, S, d_v]; multi-head latent attention: undefined
  torch::Tensor latent;     // multi-head latent attention: the normalised key/value latent [B, 1, S, d_c]
  torch::Tensor key_bias;   // collaborative content bias r_iᵀ x_s: [B, h, 1, S] (else undefined)
  torch::Tensor positions;  // [S] int64: the absolute position of each cached key
  int64_t length() const { return positions.defined() ? positions.size(0) : 0; }
  int64_t bytes() const;
};

struct KvCache {
  std::vector<LayerCache> self;   // one per decoder layer
  std::vector<LayerCache> cross;  // encoder-decoder: one per decoder layer, filled on the first step
  int64_t next_position = 0;      // the position of the next token fed
  int64_t bytes() const;
};

}  // namespace headlab::core
