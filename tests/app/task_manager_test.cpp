// The window's one task system: tasks run in lanes one at a time, a newer task replaces queued and
// running ones of the kinds it names, Stop ends a task at its next check, results are published
// as snapshots, and failures keep their message. Torch-free work throughout.
#include "test_common.h"

#include "app/tasks/task_manager.h"
#include "app/tasks/task_track.h"
#include "task_lanes.h"
#include "core/cancelled.h"

#include <atomic>
#include <chrono>
#include <thread>

using namespace headlab::app;
using namespace std::chrono_literals;
using headlab::test::in_lane;

namespace {

// Waits (bounded) until `done()`; false when it never became true.
template <class Done>
bool eventually(Done done, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Work that counts units until stopped (or `units` are done), checking between units.
TaskManager::Work counting(int units, std::atomic<int>* reached = nullptr) {
  return [units, reached](Task& task) -> std::shared_ptr<const void> {
    for (int i = 0; i < units; ++i) {
      task.check();
      task.progress(i, units);
      if (reached) *reached = i;
      std::this_thread::sleep_for(2ms);
    }
    task.progress(units, units);
    return std::make_shared<const int>(units);
  };
}

}  // namespace

TEST_CASE("a task publishes its results and ends done, with its progress", "[app][tasks]") {
  TaskManager tasks;
  auto t = tasks.start_typed<int>(in_lane("a"), [](Task& task) {
    task.phase("counting");
    for (int i = 1; i <= 3; ++i) {
      task.progress(i, 3);
      task.publish(std::make_shared<const int>(i * 10));
    }
    return std::make_shared<const int>(99);
  });
  REQUIRE(tasks.wait_idle(10s));
  const auto s = t->status();
  CHECK(s.state == TaskState::Done);
  CHECK(s.published == 4);  // three intermediate results and the final one
  CHECK(*t->result<int>() == 99);
  CHECK(s.done == 3);
  CHECK(s.total == 3);
  CHECK(s.fraction == 1.0);
  CHECK(s.phase == "counting");
  CHECK(s.elapsed_s >= 0);
  CHECK(t->finished());
}

TEST_CASE("Stop ends a task at its next check, and a queued task never starts", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<int> reached{-1};
  auto running = tasks.start(in_lane("lane"), counting(100000, &reached));
  std::atomic<bool> second_ran{false};
  auto queued = tasks.start(in_lane("lane"), [&](Task&) -> std::shared_ptr<const void> {
    second_ran = true;
    return nullptr;
  });
  REQUIRE(eventually([&] { return reached.load() >= 3; }));
  CHECK(queued->status().state == TaskState::Queued);  // one at a time in a lane
  queued->stop();
  running->stop();
  REQUIRE(tasks.wait_idle(10s));
  CHECK(running->status().state == TaskState::Stopped);
  CHECK(reached.load() < 100000);
  CHECK(queued->status().state == TaskState::Stopped);
  CHECK(!second_ran);
  CHECK(tasks.active().empty());
}

TEST_CASE("a newer task replaces the queued and running tasks of the kinds it names", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<int> reached{-1};
  auto load = tasks.start(in_lane("model", "load"), counting(100000, &reached));
  auto run1 = tasks.start(in_lane("model", "run", {"run"}), counting(1));
  auto run2 = tasks.start(in_lane("model", "run", {"run"}), counting(1));
  REQUIRE(eventually([&] { return reached.load() >= 1; }));
  // run2 replaced the queued run1; neither touched the load.
  CHECK(run1->status().state == TaskState::Stopped);
  CHECK(run1->status().superseded);
  CHECK(load->status().state == TaskState::Running);
  CHECK(!load->interrupted());
  // A newer load replaces the load in flight and the queued run.
  auto load2 = tasks.start(in_lane("model", "load", {"load", "run"}), counting(2));
  REQUIRE(tasks.wait_idle(10s));
  CHECK(load->status().state == TaskState::Stopped);
  CHECK(load->status().superseded);
  CHECK(run2->status().state == TaskState::Stopped);
  CHECK(load2->status().state == TaskState::Done);
  CHECK(!run2->result<int>());
}

TEST_CASE("a superseded task's later results are dropped", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<bool> superseded{false}, published_after{false};
  auto old = tasks.start_typed<int>(in_lane("gen", "step", {"step"}), [&](Task& task) {
    task.publish(std::make_shared<const int>(1));
    eventually([&] { return superseded.load(); });  // bounded: a failed test never hangs here
    task.publish(std::make_shared<const int>(2));  // after it was replaced
    published_after = true;
    return std::make_shared<const int>(3);
  });
  REQUIRE(eventually([&] { return old->status().published == 1; }));
  auto next = tasks.start_typed<int>(in_lane("gen", "step", {"step"}), [](Task&) { return std::make_shared<const int>(7); });
  superseded = true;
  REQUIRE(tasks.wait_idle(10s));
  CHECK(published_after);
  CHECK(*old->result<int>() == 1);  // what it published before it was replaced, nothing after
  CHECK(old->status().published == 1);
  CHECK(*next->result<int>() == 7);
}

TEST_CASE("a failing task keeps its message, and lanes run side by side", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<bool> a_started{false}, b_started{false};
  auto a = tasks.start(in_lane("one"), [&](Task&) -> std::shared_ptr<const void> {
    a_started = true;
    eventually([&] { return b_started.load(); });  // bounded: a failed test never hangs here  // only ends once the other lane runs too
    throw std::runtime_error("reading x.conllu:3: a bad line");
  });
  auto b = tasks.start(in_lane("two"), [&](Task&) -> std::shared_ptr<const void> {
    b_started = true;
    eventually([&] { return a_started.load(); });  // bounded: a failed test never hangs here
    return std::make_shared<const int>(2);
  });
  REQUIRE(tasks.wait_idle(10s));
  CHECK(a->status().state == TaskState::Failed);
  CHECK(a->status().error == "reading x.conllu:3: a bad line");
  CHECK(b->status().state == TaskState::Done);
  CHECK(eventually([&] { return tasks.threads_running() == 0; }));  // no thread waits without work
}

TEST_CASE("the status bar's list: queued and running tasks that are shown, oldest first", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<int> reached{-1};
  auto first = tasks.start(in_lane("x", "a"), counting(100000, &reached));
  TaskOptions hidden = in_lane("y");
  hidden.shown = false;
  auto quiet = tasks.start(hidden, counting(100000));
  auto second = tasks.start(in_lane("x", "b"), counting(1));
  REQUIRE(eventually([&] { return reached.load() >= 0; }));
  const auto active = tasks.active();
  REQUIRE(active.size() == 2);
  CHECK(active[0] == first);
  CHECK(active[1] == second);
  CHECK(!tasks.idle());
  first->stop();
  quiet->stop();
  REQUIRE(tasks.wait_idle(10s));
  CHECK(tasks.idle());
}

TEST_CASE("the ETA follows the rate of the units done", "[app][tasks]") {
  TaskManager tasks;
  std::atomic<bool> go{false};
  auto t = tasks.start(in_lane("eta"), [&](Task& task) -> std::shared_ptr<const void> {
    task.progress(0, 10);
    std::this_thread::sleep_for(50ms);
    task.progress(5, 10);  // 5 units in ~50 ms: 5 more take ~50 ms
    eventually([&] { return go.load(); });  // bounded: a failed test never hangs here
    return nullptr;
  });
  REQUIRE(eventually([&] { return t->status().done == 5; }));
  const double eta = t->status().eta_s;
  CHECK(eta > 0.02);
  CHECK(eta < 1.0);
  go = true;
  REQUIRE(tasks.wait_idle(10s));
}

TEST_CASE("destroying the task system stops its tasks and waits for them", "[app][tasks]") {
  std::atomic<int> reached{-1};
  std::shared_ptr<Task> t;
  {
    TaskManager tasks;
    t = tasks.start(in_lane("long"), counting(1000000, &reached));
    REQUIRE(eventually([&] { return reached.load() >= 1; }));
  }
  CHECK(t->status().state == TaskState::Stopped);
  CHECK(t->interrupted());
}

TEST_CASE("a task track counts every result and end, and never goes back", "[app][tasks]") {
  TaskManager tasks;
  TaskTrack track;
  CHECK(track.serial() == 0);
  CHECK(!track.busy());
  std::atomic<bool> go{false};
  track.follow(tasks.start_typed<int>(in_lane("t", "k", {"k"}), [&](Task& task) {
    task.publish(std::make_shared<const int>(1));
    eventually([&] { return go.load(); });  // bounded: a failed test never hangs here
    return std::make_shared<const int>(2);
  }));
  REQUIRE(eventually([&] { return track.serial() == 1; }));
  CHECK(track.busy());
  track.follow(tasks.start_typed<int>(in_lane("t", "k", {"k"}), [](Task&) { return std::make_shared<const int>(5); }));
  CHECK(track.older_busy());
  go = true;
  REQUIRE(tasks.wait_idle(10s));
  // 1 (first result) + 1 (first end; its final result was dropped) + 1 (second result) + 1 (second end).
  CHECK(track.serial() == 4);
  CHECK(!track.busy());
  CHECK(*track.newest()->result<int>() == 5);
}
