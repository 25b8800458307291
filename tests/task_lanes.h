// TaskOptions for a lane, as the task-system tests start their work: torch-free and header-only,
// shared by tests/app/task_manager_test.cpp and the ThreadSanitizer binary (tests/race/).
#pragma once

#include "app/tasks/task.h"

#include <string>
#include <utility>
#include <vector>

namespace headlab::test {

inline app::TaskOptions in_lane(const std::string& lane, const std::string& kind = "",
                                std::vector<std::string> replaces = {}) {
  app::TaskOptions o;
  o.name = lane + " " + kind;
  o.lane = lane;
  o.kind = kind;
  o.replaces = std::move(replaces);
  return o;
}

}  // namespace headlab::test
