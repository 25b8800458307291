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
  // Sentences run together in one forward pass (core/model/run_batch.h): every weight is read once
  // per batch. 1, the default, runs them one at a time, and its reports are bit-identical however
  // the dataset is sharded; a batch adds rounding of ~1e-7 (larger matrix products sum in another
  // order). Worth it where the weights are streamed from memory each pass (a mapped 8B folder).
  int batch = 1;
  // Bytes of maps the sentences waiting for their batch may keep before they are measured early;
  // -1 = half the memory limit (core/memory_budget.h), so a large batch never grows past it.
  int64_t window_bytes = -1;
  // Called with (sentences done, sentences in this shard); returning false stops (partial report).
  std::function<bool(int64_t done, int64_t total)> progress;
  // set → stop after the current sentence (partial report); batched, the sentences read for the
  // current window and not yet measured are dropped
  const std::atomic<bool>* cancel = nullptr;
  // Called while a measure that reads only the weights works before the sentences (spectra: after
  // each layer) with (what, done, total); returning false stops as cancel does.
  std::function<bool(const std::string& what, int64_t done, int64_t total)> preparing;
};

struct AnalyzeResult {
  HeadReport report;
  std::vector<ExampleMap> examples;
};

// Throws std::runtime_error for a model without a tokenizer, an unknown metric, unreadable data or
// a malformed CoNLL-U file (naming the file and line).
AnalyzeResult analyze(core::Model& model, const AnalyzeOptions& options);

// The shard this process analyses, as {index I, count N}:
// - `shard_text` "I/N" when given (and N must equal `shards` when that is given too);
// - else Open MPI's mpirun (OMPI_COMM_WORLD_RANK of OMPI_COMM_WORLD_SIZE; `shards`, when given, must
//   equal the size);
// - else a Slurm job array task: I is SLURM_ARRAY_TASK_ID itself and N is `shards`, which is then
//   required. The array's own task count cannot stand in for N: a task resubmitted alone
//   (`sbatch --array=2`) sees a count of 1 and would analyse the whole dataset as its "shard";
// - else 0/1 (and a `shards` > 1 with nothing to say which shard is an error).
// Throws std::invalid_argument with what to pass instead.
std::pair<int, int> shard_from(const std::string& shard_text, int shards = 0);

}  // namespace headlab::analysis
