#include "app/cli/batch_memory.h"

#include "app/cli/cli.h"

#include "core/controls.h"
#include "core/memory_budget.h"

namespace headlab::app {

void check_batch_memory(const core::ModelConfig& config, int64_t batch, int64_t seq_len, bool training,
                        const std::string& what) {
  const int64_t limit = core::memory_limit();
  if (limit < 0) return;
  // Every sequence of the batch is in flight at once: its logits at every position, the layer being
  // computed and, when training, what autograd keeps for the backward pass.
  const core::MemoryEstimate one = core::estimate_run_memory(config, seq_len, config.decoder && config.encoder ? seq_len : 0,
                                                             core::kCaptureNone, 0, training);
  const int64_t need = one.total() * batch;
  if (need <= limit) return;
  throw core::MemoryLimitError(what + ": a batch of " + std::to_string(batch) + " sequences of " +
                               std::to_string(seq_len) + " tokens needs about " + core::format_bytes(need) +
                               (training ? " with its backward pass" : "") + ", more than the limit of " +
                               core::format_bytes(limit) + ". Give a smaller --batch-tokens or --seq-len, or raise "
                               "the limit (--memory-limit, HEADLAB_MEMORY_LIMIT).");
}

void check_seq_len(const core::ModelConfig& config, int64_t seq_len, const std::string& folder) {
  if (seq_len > config.max_positions)
    throw UsageError("--seq-len " + std::to_string(seq_len) + " is more than the " +
                     std::to_string(config.max_positions) + " positions " + folder + " takes");
}

}  // namespace headlab::app
