// The window's dataset run on the shipped default model and 100 UD EWT sentences: the same report
// as analysis::analyze, a stop that keeps what is complete, a new start that replaces the run in
// flight, and the errors a window must show instead of crashing.
#include "test_common.h"

#include "analysis/analyze.h"
#include "analysis/head_report.h"
#include "app/tasks/task_manager.h"
#include "app/work/dataset_job.h"
#include "core/config.h"
#include "core/model/model.h"
#include "core/model/system_info.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

using namespace headlab;

namespace {

const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
const std::string kUd = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";

// Polls until `done(status)` or `seconds` pass; returns the last status.
template <class Done>
app::DatasetJobStatus wait_for(const app::DatasetJob& job, Done done, double seconds = 120) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto s = job.status();
  while (!done(s) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s = job.status();
  }
  return s;
}

app::DatasetJobStatus wait_until_finished(const app::DatasetJob& job) {
  return wait_for(job, [](const app::DatasetJobStatus& s) { return !s.running; });
}

// The UD sample `copies` times over: a dataset long enough to stop in the middle of.
std::string long_dataset(const test::TempDir& dir, int copies) {
  std::ifstream in(kUd);
  std::stringstream text;
  text << in.rdbuf();
  const std::string path = dir.str("long.conllu");
  std::ofstream out(path);
  for (int i = 0; i < copies; ++i) out << text.str() << "\n";
  return path;
}

}  // namespace

TEST_CASE("a dataset job measures what analyze measures", "[dataset-job]") {
  app::DatasetRequest request;
  request.model_folder = kModel;
  request.files = {kUd};
  request.metrics = {"confidence", "positional", "rare", "syntactic"};
  app::DatasetJob job;
  CHECK(job.result() == nullptr);
  job.start(request);
  bool saw_measuring = false;
  const auto s = wait_for(job, [&](const app::DatasetJobStatus& st) {
    if (st.phase == "measuring heads" && st.total == 100 && st.done > 0) saw_measuring = true;
    return !st.running;
  });
  INFO(s.error);
  CHECK(s.phase == "done");
  CHECK(s.error.empty());
  CHECK(s.done == 100);
  CHECK(s.total == 100);
  CHECK(s.fraction() == 1.0);
  CHECK_FALSE(s.partial);
  CHECK(s.elapsed_seconds > 0);
  CHECK(saw_measuring);
  CHECK(job.result_serial() == 1);
  const auto report = job.result();
  REQUIRE(report);
  CHECK_FALSE(report->partial);
  CHECK(report->sentences == 100);

  // The same measures called directly, on one intra-op thread like the job's (same sums, bit for bit).
  const int threads = at::get_num_threads();
  core::use_interactive_threads();
  auto model = core::load_model(kModel);
  analysis::AnalyzeOptions o;
  o.data = {kUd};
  o.settings.metrics = request.metrics;
  const auto direct = analysis::analyze(*model, o).report;
  at::set_num_threads(threads);
  CHECK(analysis::to_json(*report) == analysis::to_json(direct));
  REQUIRE(report->heads.size() == direct.heads.size());
  CHECK(report->heads[17].offsets == direct.heads[17].offsets);
  CHECK(report->heads[17].queries > 0);
}

TEST_CASE("stopping a dataset job keeps what is complete, marked partial", "[dataset-job]") {
  test::TempDir dir("dataset-job-stop");
  app::DatasetRequest request;
  request.model_folder = kModel;
  request.files = {long_dataset(dir, 20)};
  request.metrics = {"confidence", "positional"};
  app::DatasetJob job;
  job.start(request);
  const auto measuring = wait_for(job, [](const app::DatasetJobStatus& st) { return st.done >= 3; });
  REQUIRE(measuring.done >= 3);
  CHECK(measuring.total == 2000);
  job.stop();
  const auto s = wait_until_finished(job);
  INFO(s.error);
  CHECK(s.phase == "stopped");
  CHECK(s.partial);
  CHECK(job.result_serial() == 1);
  const auto report = job.result();
  REQUIRE(report);
  CHECK(report->partial);
  CHECK(report->sentences >= 3);
  CHECK(report->sentences < 2000);
  CHECK(report->heads[0].queries > 0);
  CHECK(s.done == report->sentences + report->skipped);
}

TEST_CASE("a new start replaces the run in flight, whose result is dropped", "[dataset-job]") {
  test::TempDir dir("dataset-job-restart");
  app::DatasetRequest long_run;
  long_run.model_folder = kModel;
  long_run.files = {long_dataset(dir, 20)};
  long_run.metrics = {"confidence", "positional"};
  app::DatasetJob job;
  job.start(long_run);
  REQUIRE(wait_for(job, [](const app::DatasetJobStatus& st) { return st.done >= 2; }).done >= 2);
  app::DatasetRequest short_run = long_run;
  short_run.files = {kUd};
  short_run.limit = 5;
  job.start(short_run);
  const auto s = wait_until_finished(job);
  INFO(s.error);
  CHECK(s.phase == "done");
  CHECK(s.total == 5);
  CHECK(job.result_serial() == 1);  // the replaced run published nothing
  const auto report = job.result();
  REQUIRE(report);
  CHECK(report->files == std::vector<std::string>{kUd});
  CHECK(report->sentences == 5);
  CHECK_FALSE(report->partial);
}

TEST_CASE("a malformed CoNLL-U file fails the job with the file and line", "[dataset-job]") {
  test::TempDir dir("dataset-job-bad");
  const std::string path = dir.str("bad.conllu");
  std::ofstream(path) << "# sent_id = s1\n"
                         "1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
                         "2\tcat\tcat\tNOUN\n";
  app::DatasetRequest request;
  request.model_folder = kModel;
  request.files = {path};
  request.metrics = {"confidence"};
  app::DatasetJob job;
  job.start(request);
  const auto s = wait_until_finished(job);
  CHECK(s.phase == "failed");
  CHECK(s.error.find(path + ":3") != std::string::npos);
  CHECK(s.error.find("10 tab-separated columns") != std::string::npos);
  CHECK(job.result() == nullptr);
  CHECK(job.result_serial() == 0);
}

TEST_CASE("a dataset job needs a model folder with a tokenizer", "[dataset-job]") {
  app::DatasetJob job;
  app::DatasetRequest request;
  request.files = {kUd};
  SECTION("no folder (the in-memory random-weight model)") {
    job.start(request);
    const auto s = wait_until_finished(job);
    CHECK(s.phase == "failed");
    CHECK(s.error.find("the dataset runs need a model folder with a tokenizer") != std::string::npos);
  }
  SECTION("a folder without a tokenizer") {
    test::TempDir dir("dataset-job-no-tokenizer");
    auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
    core::save_model(*core::make_random_model(config, 1), dir.str("model"));
    request.model_folder = dir.str("model");
    job.start(request);
    const auto s = wait_until_finished(job);
    CHECK(s.phase == "failed");
    CHECK(s.error.find(dir.str("model") + " has no tokenizer") != std::string::npos);
  }
  SECTION("a folder that is not there") {
    request.model_folder = "/nonexistent/headlab-model";
    job.start(request);
    const auto s = wait_until_finished(job);
    CHECK(s.phase == "failed");
    CHECK(s.error.find("/nonexistent/headlab-model") != std::string::npos);
  }
  CHECK(job.result() == nullptr);
}

TEST_CASE("a dataset job being destroyed stops its run, which ends after its sentence", "[dataset-job]") {
  test::TempDir dir("dataset-job-destroy");
  app::DatasetRequest request;
  request.model_folder = kModel;
  request.files = {long_dataset(dir, 40)};  // far more sentences than run before the job goes
  request.metrics = {"confidence", "positional"};
  // The job on a task system the test keeps, so the task can be watched after the job is gone.
  auto tasks = app::tasks_or_own(nullptr);
  auto job = std::make_unique<app::DatasetJob>(tasks);
  job->start(request);
  REQUIRE(wait_for(*job, [](const app::DatasetJobStatus& st) { return st.done >= 1; }).done >= 1);
  const auto running = tasks->active();
  REQUIRE(running.size() == 1);
  job.reset();
  REQUIRE(tasks->wait_idle(std::chrono::seconds(120)));
  const auto end = running[0]->status();
  CHECK(end.state == app::TaskState::Stopped);  // stopped, not run to the end of the data
  CHECK(end.done < end.total);
}

TEST_CASE("open_report reads a written report and names the path when it cannot", "[dataset-job]") {
  test::TempDir dir("dataset-job-open");
  analysis::HeadReport r;
  r.model = "m";
  r.files = {"x.txt"};
  r.sentences = 3;
  r.settings.metrics = {"confidence"};
  analysis::HeadEntry e;
  e.stack = headlab::core::Stack::Encoder;
  e.queries = 4;
  e.confidence_sum = 2;
  r.heads.push_back(e);
  r.finalize();
  analysis::write_report_files(r, dir.str("report"));
  const auto opened = app::DatasetJob::open_report(dir.str("report"));
  REQUIRE(opened);
  CHECK(opened->heads[0].confidence == 0.5);
  CHECK(analysis::to_json(*opened) == analysis::to_json(r));
  try {
    app::DatasetJob::open_report(dir.str("missing"));
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(dir.str("missing")) != std::string::npos);
  }
  std::ofstream(dir.str("broken.json")) << "{ not json";
  CHECK_THROWS_WITH(app::DatasetJob::open_report(dir.str("broken.json")),
                    Catch::Contains(dir.str("broken.json")) && Catch::Contains("not valid JSON"));
}
