// The window's dataset run: `headlab analyze` (analysis/analyze.h) on a background thread with its
// own copy of the model, progress, an ETA and a stop button. Stop keeps what is complete (a partial
// report) and publishes it; errors are caught at the thread boundary and kept for the status line.
// Torch-free header: GUI translation units include it.
#pragma once

#include "analysis/head_report.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
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

class DatasetJob {
 public:
  DatasetJob();
  // Stops the run in flight and waits for its thread (at most the sentence or model load under way).
  ~DatasetJob();
  DatasetJob(const DatasetJob&) = delete;
  DatasetJob& operator=(const DatasetJob&) = delete;

  // Starts a run; a run in flight is cancelled and its result dropped. Never blocks on the old run:
  // the new one starts on the same thread once the old one has stopped.
  void start(const DatasetRequest& request);
  // Cancels the run after the current sentence; what is complete is published, marked partial.
  void stop();

  DatasetJobStatus status() const;
  // The last published report (a complete or a stopped run), or null.
  std::shared_ptr<const analysis::HeadReport> result() const;
  // Increments with every published report: the window re-reads result() when it changes.
  uint64_t result_serial() const;

  // Reads a report written by `headlab analyze` (a folder or its head_report.json); errors name the path.
  static std::shared_ptr<const analysis::HeadReport> open_report(const std::string& path);

 private:
  void loop();
  void run(const DatasetRequest& request);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<DatasetRequest> pending_;
  bool quit_ = false;
  bool busy_ = false;            // a run is in progress on the thread
  bool superseded_ = false;      // the run in progress was replaced by start(): drop its result
  std::atomic<bool> cancel_{false};
  DatasetJobStatus status_;
  std::chrono::steady_clock::time_point started_;  // start() of the run the status describes
  std::shared_ptr<const analysis::HeadReport> result_;
  uint64_t result_serial_ = 0;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace headlab::app
