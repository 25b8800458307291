// Composition scores between the heads of a model (Elhage et al. 2021, "A mathematical framework
// for transformer circuits"), as TransformerLens's all_composition_scores defines them: how much of
// what head h1 writes (its OV circuit) a head h2 of a later layer reads through its queries, keys
// or values,
//   Q: ‖W_OV^{h1} W_QK^{h2}‖_F / (‖W_OV^{h1}‖_F ‖W_QK^{h2}‖_F),
//   K: the same with W_QK^{h2}ᵀ,
//   V: the same with W_OV^{h2},
// from the folded weights of analysis/circuit_weights.h, no data needed.
#pragma once

#include "analysis/circuits.h"

#include <functional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

// [layer1][head1][layer2][head2]: 0 where layer2 ≤ layer1. head1 is an output head (talking heads: a
// value head); head2 a softmax head for Q and K, an output head for V.
using CompositionTable = std::vector<std::vector<std::vector<std::vector<double>>>>;

struct Composition {
  core::Stack stack = core::Stack::Encoder;
  CompositionTable q, k, v;  // q and k empty where the heads have no QK circuit (additive scoring)
  // [layer][head]: the softmax head's QK circuit is zero or negligible (‖W_QK‖ below kNegligible of
  // its layer's largest: query or key weights zero or decayed away). Nothing can compose into its
  // queries or keys; q and k hold 0 there, and a note names the heads. Empty with q and k.
  std::vector<std::vector<bool>> qk_zero;
  OvCircuits ov;             // each head's OV eigenvalues and copying score
  std::vector<std::string> notes;
};

// Every pair of heads of the main stack (analysis/circuit_weights.h). `progress(done, total)` is
// called after each later layer; returning false stops (core::Cancelled).
Composition composition_scores(core::Model& model,
                               const std::function<bool(int64_t done, int64_t total)>& progress = {});

}  // namespace headlab::analysis
