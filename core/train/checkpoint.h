// Training checkpoints: one file holding the model parameters, the optimizer state and a JSON
// record (step, data position, seeds, schedule). Written atomically (core/atomic_file.h), so a
// crash mid-write leaves the previous checkpoint intact.
#pragma once

#include "core/model/transformer.h"

#include <nlohmann/json.hpp>
#include <torch/optim/optimizer.h>

#include <string>

namespace headlab::core::train {

// Atomically replaces `path`.
void save_checkpoint(const std::string& path, Transformer& model, torch::optim::Optimizer& optimizer,
                     const nlohmann::json& meta);

// Restores model parameters and optimizer state; returns the JSON record. Errors name the file.
nlohmann::json load_checkpoint(const std::string& path, Transformer& model, torch::optim::Optimizer& optimizer);

// Only the JSON record.
nlohmann::json read_checkpoint_meta(const std::string& path);

}  // namespace headlab::core::train
