// The window's dataset run: `headlab analyze` (analysis/analyze.h) as a task of the window's task
// system (app/tasks/task_manager.h), on the model store's copy of the model, with progress, an ETA
// and Stop. Stop keeps what is complete (a partial report) and publishes it; errors name what was
// being done. Torch-free header: GUI translation units include it.
#pragma once

#include "analysis/head_report.h"
#include "app/work/job.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headlab::app {

// What to measure: a model folder with a tokenizer, the data and the measures.
struct DatasetRequest {
  std::string model_folder;              // native or Hugging Face folder; must have a tokenizer
  std::vector<std::string> files;        // plain text (a sentence a line), CoNLL-U files, or folders
  std::vector<std::string> metrics;      // of analysis::all_metrics(); empty = all of them
  int64_t limit = 0;                     // only the first N sentences; 0 = every one
  std::vector<std::string> freq_files;   // frequency corpus for the rare-word ranks; empty = the
                                         // folder's token_counts.json, else the dataset itself
};

struct DatasetJobStatus {
  bool running = false;     // started and not yet finished (queued behind a stopping run included)
  std::string phase;        // "", "loading the model", "reading the dataset", "measuring heads",
                            // "done", "stopped", "failed"
  int64_t done = 0;         // sentences handled (measured or skipped)
  int64_t total = 0;        // sentences in the run; 0 until the dataset has been read once
  double elapsed_seconds = 0;  // since start()
  double eta_seconds = -1;  // time left at the measuring rate so far; −1 while unknown
  bool partial = false;     // the published result stopped before the end of the data
  std::string error;        // why the last run failed ("" when it did not), with file and line
  double fraction() const { return total > 0 ? double(done) / double(total) : 0.0; }
};

// Its status() and result_serial() say more than a Job's: progress with an ETA, and a serial that
// counts published reports only.
class DatasetJob : public Job {
 public:
  // Null `tasks` or `models`: a task system and model store of its own (tests, a headless caller);
  // the window passes its own. Destroying the job stops the run in flight (after its sentence).
  explicit DatasetJob(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr)
      : Job(std::move(tasks), std::move(models)) {}

  // Starts a run; a run in flight is stopped and its result dropped, and the new one starts once it
  // has (the runs share a lane). stop() ends a run after the current sentence; what is complete is
  // published, marked partial.
  void start(const DatasetRequest& request);

  DatasetJobStatus status() const;
  // The last published report (a complete or a stopped run), or null; it stays after a failure.
  std::shared_ptr<const analysis::HeadReport> result() const;
  // Increments with every published report: the window re-reads result() when it changes.
  uint64_t result_serial() const;

  // Reads a report written by `headlab analyze` (a folder or its head_report.json); errors name the path.
  static std::shared_ptr<const analysis::HeadReport> open_report(const std::string& path);

 private:
  void take_result() const;  // picks up the newest task's report

  mutable std::shared_ptr<const analysis::HeadReport> result_;
  mutable uint64_t result_serial_ = 0;
  mutable const void* taken_ = nullptr;  // the report last taken from a task
};

}  // namespace headlab::app
