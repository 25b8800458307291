// What every kind of the window's background work shares — a dataset run, the Syntax view's
// sentence, a generation, a conversion: the task system it runs on (app/tasks/), the model store it
// takes its model from (core/model/model_store.h), the tasks it started, and a Stop. A kind of work is a
// subclass that builds its TaskOptions and its work function and reads its own results; this base
// holds the rest once. Used on the window's thread. Torch-free.
#pragma once

#include "app/tasks/task.h"

#include <cstdint>
#include <memory>
#include <string>

namespace headlab::core {
class ModelStore;
}

namespace headlab::app {

class TaskManager;
class TaskTrack;

// The window's task system and model store when given, else ones of a job's own (a test, a
// headless caller): the one place a job gets them.
std::shared_ptr<TaskManager> tasks_or_own(std::shared_ptr<TaskManager> tasks);
std::shared_ptr<core::ModelStore> models_or_own(std::shared_ptr<core::ModelStore> models);

// A job's state as a view shows it: running (queued included) and why the newest run failed.
struct JobStatus {
  bool running = false;
  std::string error;  // "" unless the newest run failed; the message names what was being done
};

class Job {
 public:
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Stops the newest task: it ends within one unit of its work (a layer, a sentence, a sweep).
  void stop();
  // Stops the newest task and drops what it showed or will still publish (a dataset run's partial
  // report, a patching sweep): the work of a model or session no longer open. Nothing is on show
  // until a task started after this publishes.
  void discard();
  JobStatus status() const;
  // Grows with every result published and every end, over every task started: a poller re-reads
  // the results when it changes.
  uint64_t result_serial() const;

 protected:
  // Null `tasks` or `models`: the job gets a task system or model store of its own (tests, a headless
  // caller); the window passes its own, shared with every other job.
  Job(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models);
  ~Job();  // stops the newest task; the work holds the model store, never the job

  // Starts `work` (Task& → shared_ptr<const R>) as the newest task.
  template <class R, class F>
  void launch(const TaskOptions& options, F work);
  // The result on show: the newest task's latest, the one before it while a new task has published
  // nothing yet, null after a failure.
  template <class R>
  std::shared_ptr<const R> shown() const {
    return std::static_pointer_cast<const R>(shown_any());
  }

  const std::shared_ptr<Task>& newest() const;
  // Whether `task`'s results were dropped by discard().
  bool discarded(const Task& task) const { return discarded_ != 0 && task.id() == discarded_; }
  const TaskTrack& track() const { return *track_; }
  // How many of the newest tasks have been seen finished (done, stopped or failed), each counted the
  // first time a status read finds it so (`running`: what that read found): a poller that keeps the
  // last count learns that one more ended.
  unsigned finished_count(bool running) const;

  std::shared_ptr<TaskManager> tasks_;
  std::shared_ptr<core::ModelStore> models_;

 private:
  void follow(std::shared_ptr<Task> task);
  std::shared_ptr<const void> shown_any() const;

  std::unique_ptr<TaskTrack> track_;
  mutable std::shared_ptr<const void> shown_;
  uint64_t discarded_ = 0;  // the id of the newest task when discard() was called (0: none)
  mutable const void* counted_ = nullptr;  // the task last counted as finished
  mutable unsigned finished_ = 0;
};

}  // namespace headlab::app

#include "app/tasks/task_manager.h"

namespace headlab::app {

template <class R, class F>
void Job::launch(const TaskOptions& options, F work) {
  follow(tasks_->start_typed<R>(options, std::move(work)));
}

}  // namespace headlab::app
