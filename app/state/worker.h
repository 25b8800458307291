// The workbench's one worker thread: loads models and runs text through the engine, publishing
// immutable results the UI thread polls each frame. A newer request supersedes a pending one and
// cancels a run in flight; errors are caught here, at the task boundary, and kept for the status bar.
#pragma once

#include "app/engine/workbench_engine.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <algorithm>

namespace headlab::app {

// Where a model comes from: a folder, or a random-weight model of a config.
struct ModelSource {
  std::string folder;
  std::string random_config;
  uint64_t seed = 0;
};

struct TaskStatus {
  bool busy = false;        // something running or queued
  std::string task;         // "running the model", "loading /path", …
  float progress = 0;       // 0..1 of the running task
  // The last finished load and run: how many have finished (a cancelled run does not count), and
  // why the last one failed ("" when it succeeded).
  uint64_t loads_done = 0, runs_done = 0;
  std::string load_error, run_error;
  // The input of the last run when the model refused it (null once a run succeeds).
  std::optional<RefusedInput> refused;
};

class WorkbenchWorker {
 public:
  WorkbenchWorker();
  ~WorkbenchWorker();
  WorkbenchWorker(const WorkbenchWorker&) = delete;
  WorkbenchWorker& operator=(const WorkbenchWorker&) = delete;

  // Queues a model load; drops a queued run and cancels one in flight.
  void request_load(const ModelSource& source);
  // Queues a run; replaces a queued one and cancels one in flight.
  void request_run(const RunInput& input);
  // The stop button: cancels the running task and drops queued runs.
  void stop();
  // Intra-op threads for the tasks that start from now on (1 by default: software GL and the UI
  // need a core; the window passes more when it draws on a real GPU).
  void set_threads(int threads) { threads_ = std::max(1, threads); }

  // Latest published results (UI thread).
  std::shared_ptr<const ModelSummary> model() const;
  std::shared_ptr<const RunSnapshot> snapshot() const;
  uint64_t model_serial() const;  // increments with every successful load
  TaskStatus status() const;
  // True when nothing is queued or running.
  bool idle() const;

 private:
  void loop();

  WorkbenchEngine engine_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<ModelSource> pending_load_;
  std::optional<RunInput> pending_run_;
  bool running_ = false;
  bool quit_ = false;
  std::string task_;
  std::atomic<bool> cancel_{false};
  std::atomic<float> progress_{0};
  std::atomic<int> threads_{1};
  std::shared_ptr<const ModelSummary> model_;
  std::shared_ptr<const RunSnapshot> snapshot_;
  uint64_t model_serial_ = 0;
  uint64_t loads_done_ = 0, runs_done_ = 0;
  std::string load_error_, run_error_;
  std::optional<RefusedInput> refused_;
  std::thread thread_;  // last: starts after every member above exists
};

}  // namespace headlab::app
