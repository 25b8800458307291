// Quitting the window asks first while the user's own work runs: a dataset analysis, a generation,
// patching, a conversion or an export — named with its progress — and never for the live model's
// loads and runs. Torch-free.
#include "test_common.h"

#include "app/tasks/quit_check.h"
#include "app/tasks/task_manager.h"
#include "task_lanes.h"

#include <atomic>
#include <chrono>
#include <thread>

using namespace headlab::app;
using namespace std::chrono_literals;
using headlab::test::in_lane;

TEST_CASE("a quit names the user's work under way with its progress, not the live model's runs", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<bool> release{false}, started{false};
  auto waiting = [&](Task& task) -> std::shared_ptr<const void> {
    task.progress(33, 12544);
    started = true;
    while (!release.load()) std::this_thread::sleep_for(1ms);
    return nullptr;
  };
  auto dataset = in_lane("dataset");
  dataset.name = "analysing the dataset";
  tasks.start(dataset, waiting);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!started.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  REQUIRE(started.load());
  std::atomic<bool> model_started{false};
  tasks.start(in_lane("model", "run"), [&](Task&) -> std::shared_ptr<const void> {
    model_started = true;
    while (!release.load()) std::this_thread::sleep_for(1ms);
    return nullptr;
  });
  while (!model_started.load() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  REQUIRE(model_started.load());
  const auto lines = work_stopped_by_quit(tasks.active());
  REQUIRE(lines.size() == 1);  // the live model's run is not the user's work
  CHECK(lines[0] == "analysing the dataset — 33 of 12544 (0%)");
  release = true;
  REQUIRE(tasks.wait_idle(10s));
  CHECK(work_stopped_by_quit(tasks.active()).empty());  // finished: the window quits without asking
}
