// Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
// Transformers"): how much each input token reaches each position through the layers, with the
// residual connection modelled as they define it: per layer the raw attention A (averaged over the
// heads) becomes 0.5·A + 0.5·I, rows renormalised to sum to 1. Self-attention only (T × T maps).
#pragma once

#include <vector>

namespace at {
class Tensor;
}

namespace headlab::analysis {

// The per-layer graph weights 0.5·mean_h(A) + 0.5·I with rows renormalised: [T, T] (float64).
// `maps` is one layer's [heads, T, T] attention (the weights that multiply the values).
at::Tensor residual_attention(const at::Tensor& maps);

// Rollout: Ã_L · … · Ã_1, [T, T] (float64): row t = how much each input token reaches position t
// after the last layer. `layers` holds each layer's [heads, T, T] maps, first layer first.
at::Tensor attention_rollout(const std::vector<at::Tensor>& layers);
// One layer of it, for a run that sees each layer's maps once and keeps none (core::RunRequest's
// on_layer): Ã_l · rollout, where `rollout` is the product of the layers before (undefined before
// the first layer).
at::Tensor rollout_step(const at::Tensor& rollout, const at::Tensor& maps);

// Flow: the maximum flow from each input token (layer-0 node) to `position` at the last layer, in
// the layered graph whose edge capacities are the residual_attention weights: nodes (l, i) for
// l = 0 … L (layer 0 = the inputs), an edge (l, j) → (l + 1, i) of capacity Ã_l[i, j]. [T] (float64).
// Each value is at most 1 (the position's incoming capacities sum to 1).
std::vector<double> attention_flow(const std::vector<at::Tensor>& layers, int position);

// A directed edge of a flow network.
struct FlowEdge {
  int from = 0, to = 0;
  double capacity = 0;  // ≥ 0
};

// The maximum flow from `source` to `sink` over `nodes` nodes (Dinic's algorithm, float64);
// attention_flow runs the same solver. Throws std::invalid_argument for a bad node or capacity.
double max_flow(int nodes, const std::vector<FlowEdge>& edges, int source, int sink);

}  // namespace headlab::analysis
