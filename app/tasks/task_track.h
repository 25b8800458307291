// What one kind of background work (a dataset run, the Syntax view's sentence …) knows of the tasks
// it started: the newest one, and a serial that counts every result they published and every end,
// so whoever polls sees each change once. Used on one thread (the window's); no locks.
#pragma once

#include "app/tasks/task.h"

#include <memory>
#include <vector>

namespace headlab::app {

class TaskTrack {
 public:
  // A newly started task becomes the newest.
  void follow(std::shared_ptr<Task> task);
  // The newest task, or null before any.
  const std::shared_ptr<Task>& newest() const { return newest_; }
  // Results published plus ends, over every followed task: it only grows.
  uint64_t serial() const;
  // True while a followed task is queued or running.
  bool busy() const;
  // True while a task followed before the newest is still running (the newest waits for it).
  bool older_busy() const;

 private:
  std::shared_ptr<Task> newest_;
  mutable std::vector<std::shared_ptr<Task>> open_;  // followed and not yet finished (+ the newest)
  mutable uint64_t closed_ = 0;                      // the events of tasks no longer in open_
};

}  // namespace headlab::app
