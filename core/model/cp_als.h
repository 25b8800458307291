// Canonical polyadic (CP) decomposition of a 3-way tensor by alternating least squares (Kolda & Bader
// 2009, "Tensor decompositions and applications", §3.4): T[k] ≈ A diag(C[k]) Bᵀ for every slice k.
// Collaborative attention (Cordonnier et al. 2020, §4) uses it to turn the per-head key-query
// products W_Q^i W_K^iᵀ of a trained model into one shared W̃_Q, W̃_K and a mixing vector per head.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>

namespace headlab::core {

struct CpOptions {
  int max_iterations = 500;
  double tolerance = 1e-10;  // stop when the relative error improves by less than this
  uint64_t seed = 0;         // for the columns a truncated start leaves to chance
  // Starting factors (optional): A [I, R], B [J, R], C [K, R], e.g. an exact solution to refine.
  torch::Tensor init_a, init_b, init_c;
  // Called after each sweep with (iteration, relative error); false stops early.
  std::function<bool(int, double)> on_iteration;
  // Where the sweeps run (in float64 there: a card's cuBLAS and cuSOLVER); the factors come back on the CPU.
  torch::Device device = torch::kCPU;
};

struct CpResult {
  torch::Tensor a;  // [I, R]
  torch::Tensor b;  // [J, R]
  torch::Tensor c;  // [K, R]
  double relative_error = 0;  // ‖T − T̂‖_F / ‖T‖_F
  int iterations = 0;
};

// The rank-R CP decomposition of `t` [K, I, J] (float64 inside; factors returned as float64).
// Without starting factors: A and B start from the leading left singular vectors of T's mode
// unfoldings (HOSVD; random columns past their rank), C from its least-squares solve. Throws
// std::invalid_argument for a tensor that is not 3-way or a rank < 1.
CpResult cp_als(const torch::Tensor& t, int64_t rank, const CpOptions& options = {});

// T̂[k] = A diag(C[k]) Bᵀ: [K, I, J].
torch::Tensor cp_reconstruct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c);

}  // namespace headlab::core
