// The window's one task system: every piece of background work — the live model's loads and runs,
// a dataset analysis, the Syntax view's sentence, a generation, a conversion — is a Task started
// here. Tasks of one lane run one at a time in the order started (each lane on a thread of its own
// while it has work); a task can replace the queued and running tasks of given kinds in its lane
// (newest request wins). The status bar lists every task with its progress and Stop. Torch-free:
// the threads' LibTorch settings come through the hook given at construction.
#pragma once

#include "app/tasks/task.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace headlab::app {

class TaskManager {
 public:
  using Work = std::function<std::shared_ptr<const void>(Task&)>;
  // `configure_thread(threads)` runs on a task's thread before its work (the intra-op thread count).
  explicit TaskManager(std::function<void(int threads)> configure_thread = {});
  // Stops every task and waits for the work under way (at most one unit of each).
  ~TaskManager();
  TaskManager(const TaskManager&) = delete;
  TaskManager& operator=(const TaskManager&) = delete;

  // Queues `work` in its lane. What it returns becomes its final result; core::Cancelled (from
  // Task::check) ends it as stopped, any other exception as failed with the message.
  std::shared_ptr<Task> start(TaskOptions options, Work work);
  template <class R, class F>
  std::shared_ptr<Task> start_typed(TaskOptions options, F work) {
    return start(std::move(options), [work = std::move(work)](Task& t) -> std::shared_ptr<const void> {
      return std::static_pointer_cast<const void>(std::shared_ptr<const R>(work(t)));
    });
  }

  // The tasks queued or running that the status bar shows, oldest first.
  std::vector<std::shared_ptr<Task>> active() const;
  // True when no task is queued or running (in any lane, shown or not).
  bool idle() const;
  // Waits until idle(); false after `timeout`.
  bool wait_idle(std::chrono::milliseconds timeout);
  // How many threads run work now (for tests: a lane without work has none).
  int threads_running() const;

 private:
  struct Entry {
    std::shared_ptr<Task> task;
    Work work;
  };
  struct Lane {
    std::deque<Entry> queue;
    std::shared_ptr<Task> running;
    std::thread thread;
    bool alive = false;  // its thread is taking work
  };
  void lane_loop(const std::string& name);
  void run_one(Entry& entry);

  std::function<void(int)> configure_thread_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a task finished (wait_idle)
  std::map<std::string, Lane> lanes_;
  std::vector<std::thread> finished_;  // threads of lanes used once, joined later
  uint64_t next_id_ = 0;
  bool quit_ = false;
};

}  // namespace headlab::app
