// The memory and length of a batched pass — `evaluate`'s forward passes, `train`'s forward and backward — is
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

// Throws UsageError when --seq-len is more than the positions of `folder`'s model: evaluate, prune,
// compare and convert measure quality on sequences the model takes (a rotary model's extrapolation is
// for `run`, which reads past them on purpose).
void check_seq_len(const core::ModelConfig& config, int64_t seq_len, const std::string& folder);

}  // namespace headlab::app
