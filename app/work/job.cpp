#include "app/work/job.h"

#include "app/tasks/task_manager.h"
#include "app/tasks/task_track.h"
#include "core/model/model_store.h"
#include "core/model/system_info.h"

namespace headlab::app {

std::shared_ptr<TaskManager> tasks_or_own(std::shared_ptr<TaskManager> tasks) {
  if (tasks) return tasks;
  return std::make_shared<TaskManager>([](int threads) { core::use_interactive_threads(threads); });
}

std::shared_ptr<core::ModelStore> models_or_own(std::shared_ptr<core::ModelStore> models) {
  return models ? std::move(models) : std::make_shared<core::ModelStore>();
}

Job::Job(std::shared_ptr<TaskManager> tasks, std::shared_ptr<core::ModelStore> models)
    : tasks_(tasks_or_own(std::move(tasks))), models_(models_or_own(std::move(models))), track_(std::make_unique<TaskTrack>()) {}

Job::~Job() { stop(); }

void Job::stop() {
  if (track_->newest()) track_->newest()->stop();
}

void Job::discard() {
  stop();
  if (track_->newest()) discarded_ = track_->newest()->id();
  shown_.reset();
}

const std::shared_ptr<Task>& Job::newest() const { return track_->newest(); }

void Job::follow(std::shared_ptr<Task> task) { track_->follow(std::move(task)); }

JobStatus Job::status() const {
  JobStatus s;
  const auto& task = track_->newest();
  if (!task) return s;
  const Task::Status t = task->status();
  // A run discarded (another model or a session opened) is not this window's run: once it has
  // ended, nothing to say — its error named the model before.
  if (discarded(*task) && !t.active()) return s;
  s.running = t.active();
  if (t.state == TaskState::Failed) s.error = t.error;
  return s;
}

uint64_t Job::result_serial() const { return track_->serial(); }

std::shared_ptr<const void> Job::shown_any() const {
  const auto& task = track_->newest();
  if (!task || discarded(*task)) return nullptr;
  // While a new task runs, the result before stays on show; a failed run shows its error instead.
  if (task->status().state == TaskState::Failed) {
    shown_.reset();
  } else if (auto r = task->result<void>()) {
    shown_ = std::move(r);
  }
  return shown_;
}

unsigned Job::finished_count(bool running) const {
  const auto& task = newest();
  if (task && !running && counted_ != task.get()) {
    counted_ = task.get();
    ++finished_;
  }
  return finished_;
}

}  // namespace headlab::app
