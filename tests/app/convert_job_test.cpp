// The Model view's conversion: the job writes a normal model folder off the UI thread, refuses bad
// requests with a message, stops when told (writing nothing), and the controller opens the
// converted model so that every view runs on it.
#include "test_common.h"

#include "settle.h"

#include "app/work/convert_job.h"
#include "app/document/controller.h"
#include "core/config.h"
#include "core/model/device.h"
#include "core/model/model.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

using namespace headlab;
using namespace headlab::app;

namespace {

// A random-weight model of assets/configs/<name>.json saved as a folder.
std::string saved_model(const test::TempDir& dir, const std::string& name) {
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  auto model = core::make_random_model(config, 5);
  core::save_model(*model, dir.str(name));
  return dir.str(name);
}

ConvertJobStatus wait(const ConvertJob& job) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (job.status().running && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return job.status();
}

}  // namespace

TEST_CASE("the conversion job writes a model folder and reports what it did", "[app][convert]") {
  test::TempDir dir("convert_job");
  const std::string mha = saved_model(dir, "mha");  // 4 heads of 16, 2 layers
  ConvertJob job;
  job.start({mha, "gqa", 2, 0, 200, dir.str("gqa")});
  auto st = wait(job);
  INFO(st.error);
  REQUIRE(st.phase == "done");
  CHECK(st.serial == 1);
  CHECK(st.out == dir.str("gqa"));
  CHECK(st.fraction == 1.0);
  const auto gqa = core::load_model(dir.str("gqa"));
  CHECK(gqa->config.encoder->attention.kv_heads == 2);
  CHECK(gqa->config.name.find("GQA 2") != std::string::npos);

  job.start({mha, "collaborative", 0, 64, 50, dir.str("collab")});
  st = wait(job);
  REQUIRE(st.phase == "done");
  CHECK(st.serial == 2);
  // D̃k = h·d_k = 64: exact, each layer's error ~0.
  CHECK(st.summary.find("E0 0.0000") != std::string::npos);
  CHECK(st.summary.find("E1 0.0000") != std::string::npos);
  CHECK(core::load_model(dir.str("collab"))->config.encoder->attention.collaborative->shared_key_size == 64);

  // Refusals say what to give; a folder that holds a model is never replaced.
  CHECK_THROWS_WITH(job.start({mha, "gqa", 0, 0, 200, dir.str("x")}), Catch::Contains("groups"));
  CHECK_THROWS_WITH(job.start({mha, "collaborative", 0, 0, 200, dir.str("x")}), Catch::Contains("shared key size"));
  CHECK_THROWS_WITH(job.start({mha, "talking", 0, 0, 200, dir.str("x")}), Catch::Contains("gqa, mqa or collaborative"));
  CHECK_THROWS_WITH(job.start({mha, "mqa", 0, 0, 200, dir.str("gqa")}), Catch::Contains("already holds a model"));
  CHECK_THROWS_WITH(job.start({"", "mqa", 0, 0, 200, dir.str("x")}), Catch::Contains("model folder"));

  // An engine refusal arrives as the job's error, naming the model.
  job.start({mha, "gqa", 3, 0, 200, dir.str("bad")});
  st = wait(job);
  CHECK(st.phase == "failed");
  CHECK(st.error.find(mha) != std::string::npos);
  CHECK(st.error.find("divide") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.str("bad") + "/config.json"));

  // The ALS sweeps run on the request's device (the view's): a card this build or machine cannot use
  // is the job's error, and nothing is written.
  if (core::cuda_device_count() == 0) {
    ConvertRequest card{mha, "collaborative", 0, 32, 50, dir.str("on-card")};
    card.device = "cuda";
    job.start(card);
    st = wait(job);
    CHECK(st.phase == "failed");
    CHECK(st.error.find("device 'cuda'") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.str("on-card") + "/config.json"));
  }

  // Stopped during the ALS sweeps: nothing is written.
  job.start({mha, "collaborative", 0, 8, 100000, dir.str("stopped")});
  job.stop();
  st = wait(job);
  CHECK(st.phase == "stopped");
  CHECK_FALSE(std::filesystem::exists(dir.str("stopped") + "/config.json"));
}

TEST_CASE("convert_model converts the open model and opens the result", "[app][convert][commands]") {
  test::TempDir dir("convert_controller");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  const std::string mha = saved_model(dir, "mha");
  Controller c;
  auto settle = [&] { test::settle(c); };
  c.execute(cmd::OpenModel{""});
  settle();
  CHECK_THROWS_WITH(c.execute(cmd::ConvertModel{"mqa", 0, 0, dir.str("m"), true}), Catch::Contains("model folder"));
  c.execute(cmd::OpenModel{mha});
  settle();
  c.execute(cmd::ConvertModel{"mqa", 0, 0, dir.str("mqa"), true});
  CHECK(c.doc().convert.running);
  CHECK_FALSE(c.idle());
  settle();
  CHECK(c.doc().last_error().empty());
  REQUIRE(c.doc().model);
  CHECK(c.doc().model->folder == dir.str("mqa"));
  CHECK(c.doc().model->attentions.at(0).kv_heads == 1);
  REQUIRE(c.doc().snapshot);  // the views run on the converted model
  REQUIRE_FALSE(c.doc().notices.empty());
  CHECK(c.doc().notices.back().find("Converted into " + dir.str("mqa")) != std::string::npos);

  // Without `open` the model stays; a failed conversion becomes the status line's error.
  c.execute(cmd::ConvertModel{"gqa", 3, 0, dir.str("bad"), false});
  settle();
  CHECK(c.doc().model->folder == dir.str("mqa"));
  CHECK(c.doc().last_error().find("divide") != std::string::npos);
}
