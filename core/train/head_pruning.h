// Head pruning with stochastic gates (Voita et al. 2019, §6): one gate g_i ∈ [0, 1] per head
// multiplies the head's output, Concat_i(g_i·head_i) W_O, and the gates are trained under the Hard
// Concrete relaxation of the L0 norm (Louizos et al. 2018, §4.1):
//
//   loss = task loss + λ · Σ_i P(g_i ≠ 0)
//
// with the model's weights frozen (the default) or fine-tuned along. A larger λ closes more heads.
// After training each gate takes its test-time value (Louizos et al. eq. 13); a head is pruned when
// that value is exactly 0.
#pragma once

#include "core/train/data.h"
#include "core/train/forward.h"
#include "core/model/transformer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace headlab::core::train {

// The Hard Concrete distribution's constants (Louizos et al. 2018, §4.1; the values they use and
// Voita et al. keep): temperature β and the stretch interval (γ, ζ) around [0, 1].
struct HardConcrete {
  double beta = 2.0 / 3.0;
  double gamma = -0.1;
  double zeta = 1.1;
};

// One sample per element of log_alpha (any shape): u ~ U(0, 1), s = σ((log u − log(1 − u) + log α) / β),
// s̄ = s (ζ − γ) + γ, g = min(1, max(0, s̄)). Differentiable with respect to log α.
torch::Tensor hard_concrete_sample(const torch::Tensor& log_alpha, const HardConcrete& hc = {});
// P(g ≠ 0) = σ(log α − β log(−γ / ζ)): the expected L0 norm of each gate (Louizos et al. eq. 12).
torch::Tensor hard_concrete_open_probability(const torch::Tensor& log_alpha, const HardConcrete& hc = {});
// The test-time gate ĝ = min(1, max(0, σ(log α) (ζ − γ) + γ)) (Louizos et al. eq. 13).
torch::Tensor hard_concrete_test_gate(const torch::Tensor& log_alpha, const HardConcrete& hc = {});

struct PruneOptions {
  double lambda = 0.01;     // weight of the expected number of open heads
  int64_t steps = 300;      // optimizer steps
  int64_t batch_size = 16;  // examples a batch
  double lr = 0.05;         // Adam on log α
  bool fine_tune = false;   // also train the model's weights
  double fine_tune_lr = 1e-4;
  double init_log_alpha = 3.0;  // every gate starts fully open (ĝ = 1, P(g ≠ 0) ≈ 0.99)
  uint64_t seed = 1;
  Masking masking;          // MLM corruption of the training batches
  // After each step: (step done, steps, task loss, expected open heads Σ P(g ≠ 0)); false stops.
  std::function<bool(int64_t step, int64_t steps, double loss, double expected_heads)> progress;
};

// The gates of one attention layer after training.
struct LayerGates {
  Stack stack = Stack::Encoder;
  int layer = 0;
  std::vector<double> log_alpha, open_probability, gate;  // per head; gate = the test-time ĝ
  int kept() const;  // heads with ĝ > 0
};

struct PruneResult {
  std::vector<LayerGates> layers;
  int64_t steps_done = 0;
  int heads() const;
  int kept() const;
};

// Trains one gate per head of every attention layer of `model` (its self-attention layers, and
// cross-attention in an encoder-decoder) on `train`, as `options` says. The model's weights change
// only with options.fine_tune. Throws std::invalid_argument on empty data or bad options.
PruneResult train_head_gates(Transformer& model, const std::vector<Example>& train, Objective objective,
                             const SpecialTokens& specials, const PruneOptions& options);

// The test-time gates as the tensors forward_hidden / evaluate_examples take ([1, h] per layer).
HeadGateTensors gate_tensors(const PruneResult& result);

}  // namespace headlab::core::train
