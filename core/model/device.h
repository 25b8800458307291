// Where a model runs: the CPU, or a CUDA card when HeadLab is built against a LibTorch with CUDA
// (app/README.md, "The GPU build"). A model moved to a card keeps its weights' stored dtype there (an 8B BF16
// model takes its 16 GB of card memory, not 32); its runs compute in float32 as on the CPU
// (core/model/linear.h upcasts a stored weight in large blocks on a card) and leave what they capture
// on the card, where the analyses that follow read it. Code that reads tensor memory on the host
// (data_ptr, accessor) copies it there first (`.to(torch::kCPU, dtype)`: no copy when it is there).
#pragma once

#include "core/memory_budget.h"
#include "core/model/model.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace headlab::core {

// "cpu", "cuda" or "cuda:N" → a device this process can use; std::invalid_argument in one line
// otherwise: an unknown name, a build without CUDA, no card found, or N outside the cards there.
torch::Device parse_device(const std::string& text);

// True when this build's LibTorch carries CUDA (whether or not a card is present).
bool built_with_cuda();
// The cards this process sees (0 without CUDA).
int cuda_device_count();

// Moves every weight and buffer of `model` to `device`, keeping each one's dtype. A mapped weight
// (Residency::Mapped) is copied onto the card and its mapping released; moving back to the CPU
// gives owned copies. MemoryLimitError, with the model left where it was: weights over 90% of the
// card's memory (before copying anything), or a card that runs out part way.
void move_to_device(Model& model, torch::Device device);

// A card's free and total memory in bytes (from the CUDA runtime the CUDA LibTorch loaded); false
// where there is none.
bool card_memory(int index, size_t& free_bytes, size_t& total_bytes);

// check_memory (core/memory_budget.h) where the model runs: on the CPU against the memory limit; on
// a card, where what a run captures stays, against the card's memory beside the model's weights
// (MemoryLimitError saying what to change).
void check_run_memory(const MemoryEstimate& estimate, const Model& model, const std::string& what, int64_t tokens);

// The device of the model's weights.
torch::Device model_device(const Model& model);

// Token ids as a [1, T] int64 tensor on the model's device: a run's input.
torch::Tensor ids_on_device(const std::vector<int64_t>& ids, const Model& model);

// The name the CLI and sessions use: "cpu", "cuda:0".
std::string device_name(torch::Device device);

// The bytes a computation on `device` may still take: a card's free memory, or on the CPU the memory
// limit (memory_limit()); -1 when unknown or unlimited.
int64_t memory_room(torch::Device device);

}  // namespace headlab::core
