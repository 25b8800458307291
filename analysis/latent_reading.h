// Multi-head latent attention (core::LatentAttention) as the weight analyses read it: each head's
// reading matrices from the residual stream, with the latents' RMSNorm weights folded in and their
// input-dependent denominators left out (as the q/k norms' are). Only the non-rotated parts of the
// queries and keys form a bilinear form of the stream, W_Q^h W_UK^hᵀ through the latent; the rotated
// part's logit q_R·RoPE-rotated k_R depends on the distance, as every RoPE head's does, and the key
// side W_KR is one matrix shared by all heads.
#pragma once

#include <torch/types.h>

namespace headlab::core {
class AttentionImpl;
}

namespace headlab::analysis {

struct LatentReading {
  torch::Tensor query;  // [D, h·(d_k − d_R)] float64: each head's non-rotated query columns
  torch::Tensor key;    // [D, h·(d_k − d_R)]: W_DKVᵀ diag(γ_KV) W_UK^hᵀ
  torch::Tensor value;  // [D, h·d_v]: W_DKVᵀ diag(γ_KV) W_UV^hᵀ
};

// Undefined tensors when the module has no latent.
LatentReading latent_reading(const core::AttentionImpl& attention);

// The sentence the analyses show beside a latent layer's forms.
inline constexpr const char* kLatentNote =
    "multi-head latent attention: the key-query forms are those of the non-rotated query and key parts "
    "through the latent (W_Q^h W_UK^hᵀ, the latents' RMS denominators left out); the decoupled RoPE part "
    "(one rotated key shared by all heads) depends on the distance and is not in them";

}  // namespace headlab::analysis
