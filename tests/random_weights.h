// Random weights of unit scale for the circuit and patching tests (the initialisation's are small):
// matrices N(0, 1/fan_in), norm gains in [1, 1.5) so that folding them matters, and — with
// `biases` — every other vector N(0, 0.1²), so that every term of a run matters. Header-only.
#pragma once

#include "core/model/model.h"

#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <string>

namespace headlab::test {

inline std::shared_ptr<core::Model> unit_scale_model(const core::ModelConfig& config, uint64_t seed, bool biases = false) {
  auto model = core::make_random_model(config, seed);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model->module->named_parameters()) {
    auto& p = item.value();
    if (item.key().find("norm.weight") != std::string::npos) p.copy_(1 + 0.5 * torch::rand(p.sizes()));
    else if (p.dim() >= 2) p.copy_(torch::randn(p.sizes()) / std::sqrt(double(p.size(-1))));
    else if (biases) p.copy_(0.1 * torch::randn(p.sizes()));
  }
  return model;
}

}  // namespace headlab::test
