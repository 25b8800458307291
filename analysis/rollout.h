// Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in
// Transformers"): how much each input token reaches each position through the layers, with the
// residual connection modelled as they define it: per layer the raw attention A (averaged over the
// heads) becomes 0.5·A + 0.5·I, rows renormalised to sum to 1.
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

// Flow: the maximum flow from each input token (layer-0 node) to `position` at the last layer, in
// the layered graph whose edge capacities are the residual_attention weights. [T] (float64).
std::vector<double> attention_flow(const std::vector<at::Tensor>& layers, int position);

}  // namespace headlab::analysis
