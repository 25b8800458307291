// The window's live model: loads a model (from the model store, shared with every other task) and
// runs text through the engine as tasks of the "model" lane of the window's task system, so loads
// and runs happen one at a time in order. A newer run replaces a queued one and stops one in
// flight; a load replaces both. The results are immutable snapshots the UI thread picks up once a
// frame; errors are kept by kind (a load's, a run's) until the same kind succeeds.
#pragma once

#include "app/work/workbench_engine.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

namespace headlab::core {
class ModelStore;
}

namespace headlab::app {

class Task;
class TaskManager;

// Where a model comes from: a folder, or a random-weight model of a config.
struct ModelSource {
  std::string folder;
  std::string random_config;
  uint64_t seed = 0;
  // Where the folder's model runs ("cpu", "cuda:N"): the model store's device for every task from
  // here on. A random-weight model runs on the CPU.
  std::string device = "cpu";
};

struct TaskStatus {
  bool busy = false;        // something running or queued
  std::string task;         // "running the model", "loading /path", …
  float progress = 0;       // 0..1 of the running task
  // The last finished load and run: how many have finished (a stopped one does not count), and
  // why the last one failed ("" when it succeeded).
  uint64_t loads_done = 0, runs_done = 0;
  std::string load_error, run_error;
  // The input of the last run when the model refused it (null once a run succeeds).
  std::optional<RefusedInput> refused;
};

class WorkbenchWorker {
 public:
  // Null `tasks` or `models`: a task system and model store of its own (tests, benchmarks); the
  // window passes its own, shared with its other work (app/work/job.h).
  explicit WorkbenchWorker(std::shared_ptr<TaskManager> tasks = nullptr, std::shared_ptr<core::ModelStore> models = nullptr);
  ~WorkbenchWorker();  // stops the work under way
  WorkbenchWorker(const WorkbenchWorker&) = delete;
  WorkbenchWorker& operator=(const WorkbenchWorker&) = delete;

  // Queues a model load; drops a queued run and stops one in flight.
  void request_load(const ModelSource& source);
  // Queues a run; replaces a queued one and stops one in flight (a load in flight goes on).
  void request_run(const RunInput& input);
  // The stop button: stops the running task and drops queued runs.
  void stop();
  // Intra-op threads for the tasks that start from now on (1 by default: software GL and the UI
  // need a core; the window passes more when it draws on a real GPU).
  void set_threads(int threads) { threads_ = std::max(1, threads); }

  // Latest results (UI thread).
  std::shared_ptr<const ModelSummary> model() const;
  std::shared_ptr<const RunSnapshot> snapshot() const;
  uint64_t model_serial() const;  // increments with every successful load
  TaskStatus status() const;
  // True when nothing is queued or running.
  bool idle() const;

 private:
  void refresh() const;  // takes in the results of the tasks that finished, in order

  std::shared_ptr<TaskManager> tasks_;
  std::shared_ptr<core::ModelStore> models_;
  std::shared_ptr<WorkbenchEngine> engine_;  // used only by the lane's tasks, one at a time
  int threads_ = 1;
  mutable std::deque<std::shared_ptr<Task>> open_;  // started and not yet taken in, oldest first
  mutable std::shared_ptr<const ModelSummary> model_;
  mutable std::shared_ptr<const RunSnapshot> snapshot_;
  mutable uint64_t model_serial_ = 0, loads_done_ = 0, runs_done_ = 0;
  mutable std::string load_error_, run_error_;
  mutable std::optional<RefusedInput> refused_;
};

}  // namespace headlab::app
