// One piece of background work as the window sees it: a name, a phase, progress with an ETA, a
// Stop, and the results it publishes — immutable snapshots (shared_ptr<const R>) that the UI thread
// picks up, the newest first. The work checks `interrupted()` (or calls `check()`) between layers,
// sentences or sweeps, so Stop takes effect within one unit of work. Created and run by the
// TaskManager (app/tasks/task_manager.h); ImHex's Task is the model. Torch-free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace headlab::app {

// How a task is scheduled and shown.
struct TaskOptions {
  std::string name;  // for the status bar: "analysing the dataset", "writing text"
  // Tasks of one lane run one at a time, in the order they were started (they may share state that
  // is not thread-safe, such as the live engine); "" puts the task in a lane of its own.
  std::string lane;
  std::string kind;  // what the task does within its lane ("load", "run", …), for `replaces`
  // The kinds this task supersedes in its lane (newest request wins): queued ones are dropped and a
  // running one is stopped; a superseded task publishes nothing more.
  std::vector<std::string> replaces;
  int threads = 1;  // LibTorch intra-op threads for the work (set on the task's thread)
  bool shown = true;  // listed in the status bar
};

enum class TaskState { Queued, Running, Done, Failed, Stopped };
const char* task_state_name(TaskState state);

class Task {
 public:
  explicit Task(TaskOptions options, uint64_t id);
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  // ---- the work's side (its own thread) ----
  // `done` of `total` units (sentences, layers, steps); the ETA follows from the rate so far.
  void progress(int64_t done, int64_t total);
  void phase(const std::string& text);
  // Stop was pressed, or a newer task of the lane replaced this one.
  bool interrupted() const { return stop_.load(); }
  // Throws core::Cancelled when interrupted (core/cancelled.h).
  void check() const;
  // The flag for core::RunRequest::cancel and the like: true once interrupted.
  const std::atomic<bool>* stop_flag() const { return &stop_; }
  // Makes `result` the task's newest result (an intermediate one — a step of a generation, a
  // partial report — or the final one). Dropped once the task has been superseded.
  template <class R>
  void publish(std::shared_ptr<const R> result) {
    publish_any(std::static_pointer_cast<const void>(std::move(result)));
  }

  // ---- the window's side ----
  struct Status {
    std::string name, phase;
    TaskState state = TaskState::Queued;
    int64_t done = 0, total = 0;
    double fraction = 0;      // done / total, 0 while the total is unknown
    double elapsed_s = 0;     // since it started running
    double eta_s = -1;        // time left at the rate so far; −1 while unknown
    std::string error;        // why it failed (TaskState::Failed)
    uint64_t published = 0;   // how many results it has published
    bool superseded = false;  // replaced by a newer task of its lane
    bool active() const { return state == TaskState::Queued || state == TaskState::Running; }
  };
  Status status() const;
  bool finished() const;  // Done, Failed or Stopped
  // Asks the work to stop; it does at its next check. A queued task never starts.
  void stop() { stop_ = true; }
  // The newest published result (null before any).
  template <class R>
  std::shared_ptr<const R> result() const {
    return std::static_pointer_cast<const R>(result_any());
  }
  uint64_t id() const { return id_; }
  const TaskOptions& options() const { return options_; }

 private:
  friend class TaskManager;
  void publish_any(std::shared_ptr<const void> result);
  std::shared_ptr<const void> result_any() const;
  void set_state(TaskState state, const std::string& error = {});
  void supersede();

  const TaskOptions options_;
  const uint64_t id_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  Status status_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point progress_start_;  // when the first unit was reported
  int64_t progress_start_done_ = 0;
  std::shared_ptr<const void> result_;
};

}  // namespace headlab::app
