// The memory guard (core/memory_budget.h) for a model's weights: checked before a command draws,
// loads or trains them, so a config too large for this machine is refused in one line instead of
// failing inside LibTorch's allocator.
#pragma once

#include "core/config.h"

#include <string>

namespace headlab::core {

// Throws MemoryLimitError when a model of `config` would hold more than memory_limit() in float32
// parameters with `copies` values each (1 to draw or load the weights; 4 to train them: the weights,
// their gradients and AdamW's two moments). The message names `what` (e.g. "init"), the parameter
// count and the bytes, and what to change (the config's sizes, the limit).
void check_weights_memory(const ModelConfig& config, int copies, const std::string& what);

}  // namespace headlab::core
