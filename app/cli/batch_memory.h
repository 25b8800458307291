// The memory of a batched pass — `evaluate`'s forward passes, `train`'s forward and backward — is
// checked against the memory limit (core/memory_budget.h) before the pass starts, as a single run's
// is: a --seq-len or --batch-tokens too large for the machine is refused with what to change, not
// ended by the system's out-of-memory killer.
#pragma once

#include "core/config.h"

#include <cstdint>
#include <string>

namespace headlab::app {

// Throws core::MemoryLimitError when `batch` sequences of `seq_len` tokens through `config` (with
// their backward pass when `training`) would need more than the limit; `what` names the command.
void check_batch_memory(const core::ModelConfig& config, int64_t batch, int64_t seq_len, bool training,
                        const std::string& what);

}  // namespace headlab::app
