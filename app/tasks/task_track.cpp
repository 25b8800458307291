#include "app/tasks/task_track.h"

#include <algorithm>

namespace headlab::app {
namespace {

// Never fewer than before: a superseded task keeps the results it published before it was.
uint64_t events_of(const Task::Status& s, bool finished) { return s.published + (finished ? 1 : 0); }

}  // namespace

void TaskTrack::follow(std::shared_ptr<Task> task) {
  newest_ = task;
  open_.push_back(std::move(task));
}

uint64_t TaskTrack::serial() const {
  uint64_t open = 0;
  // Finished tasks other than the newest are folded into `closed_` (their counts no longer change).
  for (auto it = open_.begin(); it != open_.end();) {
    const bool finished = (*it)->finished();
    const uint64_t events = events_of((*it)->status(), finished);
    if (finished && *it != newest_) {
      closed_ += events;
      it = open_.erase(it);
    } else {
      open += events;
      ++it;
    }
  }
  return closed_ + open;
}

bool TaskTrack::busy() const {
  return std::any_of(open_.begin(), open_.end(), [](const auto& t) { return !t->finished(); });
}

bool TaskTrack::older_busy() const {
  return std::any_of(open_.begin(), open_.end(), [this](const auto& t) { return t != newest_ && !t->finished(); });
}

}  // namespace headlab::app
