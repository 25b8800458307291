// Race tests, built with ThreadSanitizer (tests/race/ci.sh): the window's task system under the
// access patterns the window has — work on lane threads publishing results and progress while the
// UI thread polls status, results and the status bar's list, newer tasks replacing running ones,
// Stop from the UI thread, and the task system destroyed with work under way. Every test also
// asserts its outcome; the sanitizer adds the proof that no access raced (a report fails the run).
// Torch-free: LibTorch is not instrumented, and its thread pools would drown the reports.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "app/tasks/task_manager.h"
#include "app/tasks/task_track.h"
#include "task_lanes.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace headlab::app;
using namespace std::chrono_literals;
using headlab::test::in_lane;

namespace {

// Work that publishes `steps` results with progress and phases, checking for Stop between them.
TaskManager::Work publishing(int steps) {
  return [steps](Task& task) -> std::shared_ptr<const void> {
    for (int i = 0; i < steps; ++i) {
      task.check();
      task.phase("step " + std::to_string(i));
      task.progress(i, steps);
      task.publish(std::make_shared<const std::vector<int>>(size_t(i + 1), i));
    }
    return std::make_shared<const std::vector<int>>(size_t(steps), -1);
  };
}

// What the UI thread does every frame: reads every task's status and newest result.
void poll_like_a_frame(const TaskManager& tasks, const std::vector<std::shared_ptr<Task>>& mine, TaskTrack& track) {
  for (const auto& t : tasks.active()) (void)t->status();
  for (const auto& t : mine) {
    const auto s = t->status();
    if (auto r = t->result<std::vector<int>>()) REQUIRE(!r->empty());
    (void)s;
  }
  (void)track.serial();
  (void)track.busy();
  (void)tasks.idle();
}

}  // namespace

TEST_CASE("lanes publish while the UI thread polls every task", "[race]") {
  TaskManager tasks;
  TaskTrack track;
  std::vector<std::shared_ptr<Task>> mine;
  for (int i = 0; i < 6; ++i) {
    mine.push_back(tasks.start(in_lane("lane" + std::to_string(i % 3)), publishing(200)));
    track.follow(mine.back());
  }
  while (!tasks.idle()) poll_like_a_frame(tasks, mine, track);
  REQUIRE(tasks.wait_idle(60s));
  for (const auto& t : mine) {
    CHECK(t->status().state == TaskState::Done);
    CHECK(t->result<std::vector<int>>()->front() == -1);
  }
  CHECK(!track.busy());
}

TEST_CASE("newer requests replace running ones while the UI thread polls", "[race]") {
  TaskManager tasks;
  TaskTrack track;
  std::vector<std::shared_ptr<Task>> mine;
  for (int i = 0; i < 50; ++i) {
    mine.push_back(tasks.start(in_lane("model", "run", {"run"}), publishing(100)));
    track.follow(mine.back());
    poll_like_a_frame(tasks, mine, track);
  }
  while (!tasks.idle()) poll_like_a_frame(tasks, mine, track);
  REQUIRE(tasks.wait_idle(60s));
  CHECK(mine.back()->status().state == TaskState::Done);  // the newest request wins
  CHECK(!mine.back()->status().superseded);
  CHECK(*mine.back()->result<std::vector<int>>() == std::vector<int>(100, -1));
}

TEST_CASE("Stop from the UI thread while the work checks it", "[race]") {
  TaskManager tasks;
  std::vector<std::shared_ptr<Task>> mine;
  TaskTrack track;
  for (int i = 0; i < 8; ++i) mine.push_back(tasks.start(in_lane("l" + std::to_string(i)), publishing(100000)));
  for (const auto& t : mine) {
    while (t->status().published == 0) std::this_thread::sleep_for(1ms);
    t->stop();
    poll_like_a_frame(tasks, mine, track);
  }
  REQUIRE(tasks.wait_idle(60s));
  for (const auto& t : mine) CHECK(t->status().state == TaskState::Stopped);
}

TEST_CASE("the task system destroyed with work under way stops it and waits", "[race]") {
  std::vector<std::shared_ptr<Task>> mine;
  {
    TaskManager tasks;
    for (int i = 0; i < 4; ++i) mine.push_back(tasks.start(in_lane("d" + std::to_string(i)), publishing(1000000)));
    while (mine.back()->status().published == 0) std::this_thread::sleep_for(1ms);
  }
  for (const auto& t : mine) CHECK(t->finished());
}
