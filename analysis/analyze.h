// `headlab analyze` as a library call: streams a dataset through a model once and measures every
// head (analysis/head_report.h), with progress, cancellation (what is complete is kept, marked
// partial) and sharding (every N-th sentence, so a corpus too large for one machine is split and
// merged exactly with merge_into).
#pragma once

#include "analysis/head_report.h"
#include "analysis/report_figures.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

// The names of every registered measure (analysis/measure.h), in the registry's order.
const std::vector<std::string>& all_metrics();

struct AnalyzeOptions {
  std::vector<std::string> data;         // files or folders (expand_dataset_paths)
  ReportSettings settings;               // metrics, thresholds, limit, shard
  std::vector<std::string> freq_files;   // frequency corpus for the rare-word ranks (plain text)
  int64_t max_tokens = 0;                // longer sentences are skipped; 0 = the model's positions
  int examples = 3;                      // maps of the most relevant heads kept for the figures
  // Called with (sentences done, sentences in this shard); returning false stops (partial report).
  std::function<bool(int64_t done, int64_t total)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set → stop after the current sentence (partial report)
};

struct AnalyzeResult {
  HeadReport report;
  std::vector<ExampleMap> examples;
};

// Throws std::runtime_error for a model without a tokenizer, an unknown metric, unreadable data or
// a malformed CoNLL-U file (naming the file and line).
AnalyzeResult analyze(core::Model& model, const AnalyzeOptions& options);

// The shard this process analyses: --shard I/N when given (shard_text non-empty), else a Slurm job
// array (SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT) or Open MPI's mpirun (OMPI_COMM_WORLD_RANK /
// OMPI_COMM_WORLD_SIZE) from the environment, else 0/1. Throws std::invalid_argument on a bad value.
std::pair<int, int> shard_from(const std::string& shard_text);

}  // namespace headlab::analysis
