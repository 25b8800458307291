// Rotary position embeddings' inverse frequencies (Su et al. 2021), plain or scaled as transformers'
// rope types scale them (core/config.h, RopeScaling). One place computes them for every run, the
// KV cache, LRP and training; core/model/attention.cpp applies the tables in the rotate-half layout.
#pragma once

#include "core/config.h"

#include <torch/types.h>

#include <cstdint>

namespace headlab::core {

struct RopeFrequencies {
  torch::Tensor inv_freq;         // [rot/2] float64: the angle of pair i at position p is p · inv_freq[i]
  double attention_factor = 1.0;  // cos and sin are multiplied by it (YaRN's attention scaling)
};

// Plain RoPE: inv_freq[i] = θ^(−2i/rot). `scaling` rescales them; `length` (the tokens the tables
// cover) matters to dynamic scaling only, whose base grows once length > max_positions.
RopeFrequencies rope_frequencies(double theta, int64_t rot, const RopeScaling& scaling, int64_t length,
                                 int max_positions);

}  // namespace headlab::core
