#include "app/tasks/task.h"

#include "core/cancelled.h"

namespace headlab::app {

const char* task_state_name(TaskState state) {
  switch (state) {
    case TaskState::Queued: return "queued";
    case TaskState::Running: return "running";
    case TaskState::Done: return "done";
    case TaskState::Failed: return "failed";
    case TaskState::Stopped: return "stopped";
  }
  return "?";
}

Task::Task(TaskOptions options, uint64_t id) : options_(std::move(options)), id_(id) {
  status_.name = options_.name;
}

void Task::progress(int64_t done, int64_t total) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  // The rate is measured from the first report on, so loading before the first unit does not
  // count against the units.
  if (status_.total == 0 && status_.done == 0) {
    progress_start_ = now;
    progress_start_done_ = done;
  }
  status_.done = done;
  status_.total = total;
  status_.fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  const double spent = std::chrono::duration<double>(now - progress_start_).count();
  const int64_t units = done - progress_start_done_;
  status_.eta_s = units > 0 && total >= done ? spent / static_cast<double>(units) * static_cast<double>(total - done) : -1;
}

void Task::phase(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  status_.phase = text;
}

void Task::check() const {
  if (interrupted()) throw core::Cancelled();
}

void Task::publish_any(std::shared_ptr<const void> result) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (status_.superseded) return;
  result_ = std::move(result);
  ++status_.published;
}

std::shared_ptr<const void> Task::result_any() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return result_;
}

Task::Status Task::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Status s = status_;
  if (s.state == TaskState::Running)
    s.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return s;
}

bool Task::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_.state == TaskState::Done || status_.state == TaskState::Failed || status_.state == TaskState::Stopped;
}

void Task::set_state(TaskState state, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state == TaskState::Running) started_ = std::chrono::steady_clock::now();
  if (status_.state == TaskState::Running && state != TaskState::Running)
    status_.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  status_.state = state;
  status_.error = error;
}

void Task::supersede() {
  stop_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  status_.superseded = true;
}

}  // namespace headlab::app
