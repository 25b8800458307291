#include "app/tasks/quit_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace headlab::app {

std::vector<std::string> work_stopped_by_quit(const std::vector<std::shared_ptr<Task>>& active) {
  // The lanes of the jobs a user starts (app/work/*_job.cpp).
  static const std::vector<std::string> kUserLanes = {"dataset", "generate", "patching", "convert", "export"};
  std::vector<std::string> lines;
  for (const auto& task : active) {
    if (!task) continue;
    const auto& lane = task->options().lane;
    if (std::find(kUserLanes.begin(), kUserLanes.end(), lane) == kUserLanes.end()) continue;
    const Task::Status s = task->status();
    if (!s.active()) continue;
    std::string line = s.name;
    if (s.total > 0) {
      char progress[96];
      std::snprintf(progress, sizeof progress, " — %lld of %lld (%.0f%%)", static_cast<long long>(s.done),
                    static_cast<long long>(s.total), std::floor(100 * s.fraction));
      line += progress;
    } else if (s.state == TaskState::Queued) {
      line += " — waiting to start";
    }
    lines.push_back(line);
  }
  return lines;
}

}  // namespace headlab::app
