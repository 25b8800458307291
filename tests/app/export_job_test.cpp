// Figure exports as tasks: the window keeps drawing while a large figure is written, a second export
// is refused while one runs, a failure is reported with its message, and the controller turns the
// outcome into a notice or an "export" error and counts the export as work in progress.
#include "test_common.h"

#include "settle.h"

#include "app/work/export_job.h"
#include "app/document/controller.h"
#include "core/config.h"
#include "core/model/model.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

using namespace headlab;
using namespace headlab::app;

namespace {

ExportJobStatus wait(const ExportJob& job) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (job.status().running && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return job.status();
}

// A write that holds until released, then writes `path`.
std::function<void()> held_write(const std::string& path, const std::atomic<bool>& release) {
  return [path, &release] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!release.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::ofstream(path) << "figure";
  };
}

}  // namespace

TEST_CASE("an export runs as a task, one at a time, and reports its outcome", "[app][export]") {
  test::TempDir dir("export-job");
  ExportJob job;
  CHECK(!job.status().running);
  CHECK(job.status().serial == 0);
  std::atomic<bool> release{false};
  const std::string a = dir.str("a.svg");
  job.start(a, held_write(a, release));
  // The caller is back at once, while the figure is still being written.
  CHECK(job.status().running);
  CHECK(job.status().path == a);
  CHECK(!std::filesystem::exists(a));
  CHECK_THROWS_WITH(job.start(dir.str("b.svg"), [] {}), Catch::Contains("still being written") && Catch::Contains("a.svg"));
  release = true;
  const auto done = wait(job);
  CHECK(!done.running);
  CHECK(done.error.empty());
  CHECK(done.serial == 1);
  CHECK(std::filesystem::exists(a));

  const std::string b = dir.str("b.svg");
  job.start(b, [b] { throw std::runtime_error("export " + b + ": the disk is full"); });
  const auto failed = wait(job);
  CHECK(failed.serial == 2);
  CHECK(failed.path == b);
  CHECK_THAT(failed.error, Catch::Contains("the disk is full") && Catch::Contains("b.svg"));
}

TEST_CASE("the controller waits for an export and says what became of it", "[app][export]") {
  test::TempDir dir("export-controller");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  config.encoder->layers = 1;
  core::save_model(*core::make_random_model(config, 1), dir.str("m"));
  Controller c;
  c.execute(cmd::OpenModel{dir.str("m")});
  test::settle(c);
  c.clear_notices();

  std::atomic<bool> release{false};
  const std::string path = dir.str("grid.svg");
  c.start_export(path, held_write(path, release));
  c.poll();
  CHECK(!c.idle());  // a script's next action waits for the file
  release = true;
  test::settle(c);
  CHECK(std::filesystem::exists(path));
  REQUIRE(c.doc().notices.size() == 1);
  CHECK(c.doc().notices[0] == "wrote " + path);
  CHECK(c.doc().errors.empty());

  c.start_export(dir.str("bad.svg"), [] { throw std::runtime_error("export bad.svg: cannot write"); });
  test::settle(c);
  REQUIRE(c.doc().errors.size() == 1);
  CHECK(c.doc().errors[0].kind == "export");
  CHECK_THAT(c.doc().errors[0].text, Catch::Contains("cannot write"));
  // The next export that succeeds clears it.
  const std::string again = dir.str("again.svg");
  c.start_export(again, [again] { std::ofstream(again) << "figure"; });
  test::settle(c);
  CHECK(c.doc().errors.empty());
}
