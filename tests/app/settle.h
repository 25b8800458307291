// Polls a Controller until it is idle (model loaded and run, no job running), as the window's
// frame loop would; fails the test with the last error after `seconds`. Header-only.
#pragma once

#include "test_common.h"  // torch before Catch2 (tests/include_order_test.sh)

#include "app/document/controller.h"

#include <chrono>
#include <thread>

namespace headlab::test {

inline void settle(app::Controller& c, int seconds = 120) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    c.poll();
    // Idle once more after a poll: work that ended between the poll and the check has been taken in
    // (and anything it asked for in turn is running).
    if (c.idle()) {
      c.poll();
      if (c.idle()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto& d = c.doc();
  FAIL("the controller did not settle: " << d.last_error() << " (generating: " << d.generation_job.running
       << ", converting: " << d.convert.running << ", dataset: " << d.dataset.running << ")");
}

}  // namespace headlab::test
