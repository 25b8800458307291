// Where a model runs: the device names, --device on the command line, the model store's device and
// the window's device choice. On a build without CUDA (Debian's LibTorch) or a machine without a
// card, every request for a card is refused in one line that says why, and nothing is lost: the
// model stays open on the CPU. With a card, tests/gpu holds the card's numbers against the CPU's.
#include "test_common.h"

#include "settle.h"

#include "app/document/controller.h"
#include "core/config.h"
#include "core/model/device.h"
#include "core/model/model.h"
#include "core/model/model_store.h"
#include "core/model/run.h"
#include "core/precision.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace headlab;
using Catch::Matchers::Contains;
using headlab::test::TempDir;

namespace {

const std::string kLlama = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama";

}  // namespace

TEST_CASE("device names: cpu, cuda and cuda:N, and why a card cannot be used", "[device]") {
  CHECK(core::parse_device("cpu") == torch::Device(torch::kCPU));
  CHECK(core::device_name(torch::kCPU) == "cpu");
  for (const char* bad : {"gpu", "", "CPU", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cuda0"})
    CHECK_THROWS_WITH(core::parse_device(bad), Contains("expected cpu, cuda or cuda:N") && Contains(std::string("'") + bad + "'"));
  if (!core::built_with_cuda()) {
    CHECK(core::cuda_device_count() == 0);
    for (const char* card : {"cuda", "cuda:0", "cuda:3"})
      CHECK_THROWS_WITH(core::parse_device(card), Contains("without CUDA") && Contains("GPU build"));
  } else if (core::cuda_device_count() == 0) {
    CHECK_THROWS_WITH(core::parse_device("cuda"), Contains("no CUDA card"));
  } else {
    CHECK(core::parse_device("cuda") == torch::Device(torch::kCUDA, 0));
    CHECK(core::device_name(core::parse_device("cuda")) == "cuda:0");
    const std::string beyond = "cuda:" + std::to_string(core::cuda_device_count());
    CHECK_THROWS_WITH(core::parse_device(beyond), Contains("this machine has"));
  }
}

TEST_CASE("the --device option refuses a card this process cannot use in one line, before the model loads", "[device][cli]") {
  TempDir dir("device-cli");
  const std::string out = dir.str("maps.safetensors");
  std::string output;
  const std::string base = std::string(HEADLAB_BINARY) + " run --model " + kLlama + " --ids 1,2,3 --out " + out + " --device ";
  int rc = headlab::test::run_command(base + "gpu", output);
  CHECK(rc == 2);
  CHECK_THAT(output, Contains("--device: device 'gpu': expected cpu, cuda or cuda:N"));
  CHECK_FALSE(std::filesystem::exists(out));
  rc = headlab::test::run_command(base + "cuda", output);
  if (core::cuda_device_count() == 0) {
    CHECK(rc == 2);
    CHECK_THAT(output, Contains("--device: device 'cuda': "));
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);  // one line
    CHECK_FALSE(std::filesystem::exists(out));
  } else {
    CHECK(rc == 0);
    CHECK(std::filesystem::exists(out));
  }
  rc = headlab::test::run_command(base + "cpu", output);
  CHECK(rc == 0);
  CHECK(std::filesystem::exists(out));
}

TEST_CASE("train, prune and convert --device refuse a card this process cannot use in one line, before reading data", "[device][cli]") {
  SKIP_UNLESS(core::cuda_device_count() == 0, "a card is here: the card tests train on it");
  TempDir dir("device-train");
  std::string output;
  const std::string cmd = std::string(HEADLAB_BINARY) + " train --config " + HEADLAB_SOURCE_DIR +
                          "/assets/configs/mha.json --data " + dir.str("absent.txt") + " --tokenizer " +
                          dir.str("absent.json") + " --steps 1 --out " + dir.str("out") + " --device cuda";
  CHECK(headlab::test::run_command(cmd, output) == 2);
  CHECK_THAT(output, Contains("--device: device 'cuda': "));
  CHECK(std::count(output.begin(), output.end(), '\n') == 1);  // one line: not the missing files
  CHECK_FALSE(std::filesystem::exists(dir.str("out")));
  // prune alike, before its model loads.
  const std::string prune = std::string(HEADLAB_BINARY) + " prune --model " + HEADLAB_SOURCE_DIR +
                            "/assets/models/default --data " + dir.str("absent.txt") + " --out " + dir.str("pruned") +
                            " --device cuda";
  CHECK(headlab::test::run_command(prune, output) == 2);
  CHECK_THAT(output, Contains("--device: device 'cuda': "));
  CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(dir.str("pruned")));
  // convert alike.
  const std::string convert = std::string(HEADLAB_BINARY) + " convert --model " + HEADLAB_SOURCE_DIR +
                              "/assets/models/default --to gqa --groups 2 --out " + dir.str("converted") + " --device cuda";
  CHECK(headlab::test::run_command(convert, output) == 2);
  CHECK_THAT(output, Contains("--device: device 'cuda': "));
  CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  CHECK_FALSE(std::filesystem::exists(dir.str("converted")));
}

TEST_CASE("the model store keeps a folder once per device and refuses a device it cannot use before loading",
          "[device][model_store]") {
  core::ModelStore store;
  CHECK(store.device() == "cpu");
  const auto cpu = store.get(kLlama);
  CHECK(core::model_device(*cpu) == torch::Device(torch::kCPU));
  CHECK(store.loads() == 1);
  store.set_device("gpu");
  CHECK_THROWS_WITH(store.get(kLlama), Contains("expected cpu, cuda or cuda:N"));
  CHECK(store.loads() == 1);  // refused before anything was read
  if (core::cuda_device_count() == 0) {
    store.set_device("cuda");
    CHECK_THROWS_AS(store.get(kLlama), std::invalid_argument);
    CHECK(store.loads() == 1);
  } else {
    store.set_device("cuda:0");
    const auto card = store.get(kLlama);
    CHECK(card.get() != cpu.get());  // its own copy, on the card
    CHECK(core::model_device(*card).is_cuda());
    CHECK(store.loads() == 2);
  }
  CHECK(store.get(kLlama, "cpu").get() == cpu.get());  // a task that names its device gets it, whatever the store's
  store.set_device("cpu");
  CHECK(store.get(kLlama).get() == cpu.get());  // the CPU's copy again, not read a second time
}

TEST_CASE("the window's device choice: refused with its reason, kept in sessions, and a session from a card "
          "opens on the CPU where there is none", "[device][app][commands]") {
  TempDir dir("device-window");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  ::setenv("HEADLAB_ASSETS", (std::string(HEADLAB_SOURCE_DIR) + "/assets").c_str(), 1);
  const std::string folder = dir.str("mha");
  core::save_model(*core::make_random_model(core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json"), 1),
                   folder);
  app::Controller c;
  c.execute(app::cmd::OpenModel{folder});
  headlab::test::settle(c);
  REQUIRE(c.doc().model);
  CHECK(c.doc().model->device == "cpu");
  CHECK(c.doc().session.device == "cpu");
  REQUIRE(!c.doc().model->devices.empty());
  CHECK(c.doc().model->devices.front() == "cpu");
  CHECK(c.doc().model->devices.size() == size_t(1 + core::cuda_device_count()));
  if (core::cuda_device_count() > 0) return;  // the rest is about a machine without a card

  CHECK_FALSE(c.doc().model->no_card.empty());
  c.apply(app::cmd::SetDevice{"cuda:0"});
  CHECK(c.doc().last_error().find("set_device: device 'cuda:0': ") == 0);
  headlab::test::settle(c);
  REQUIRE(c.doc().model);  // nothing lost: the model stays open where it was
  CHECK(c.doc().model->folder == folder);
  CHECK(c.doc().session.device == "cpu");

  // A session saved on a machine with a card: its device is kept in the file …
  c.execute(app::cmd::SaveSession{dir.str("session.json")});
  nlohmann::json session;
  std::ifstream(dir.str("session.json")) >> session;
  REQUIRE(session.contains("model"));
  CHECK(session["model"]["device"] == "cpu");
  session["model"]["device"] = "cuda:0";
  std::ofstream(dir.str("card-session.json")) << session.dump(2);
  // … and opened here, the model opens on the CPU, saying why.
  app::Controller d;
  d.execute(app::cmd::OpenSession{dir.str("card-session.json")});
  headlab::test::settle(d);
  REQUIRE(d.doc().model);
  CHECK(d.doc().model->folder == folder);
  CHECK(d.doc().model->device == "cpu");
  bool told = false;
  for (const auto& e : d.doc().errors) told = told || (e.text.find("set_device: ") == 0 && e.text.find("runs on the CPU") != std::string::npos);
  CHECK(told);
}

TEST_CASE("the window's precision choice: runs the input again at the new precision, kept in sessions, refused "
          "while a task runs, and an unknown one in a session keeps the window's", "[precision][app][commands]") {
  const core::PrecisionScope restore(core::Precision::exact);  // whatever fails below, the tests after run exactly
  TempDir dir("precision-window");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  ::setenv("HEADLAB_ASSETS", (std::string(HEADLAB_SOURCE_DIR) + "/assets").c_str(), 1);
  // The default model in BF16, kept as stored: fast precision changes its products.
  const std::string shipped = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string folder = dir.str("bf16");
  core::save_model(*core::load_model(shipped), folder, "BF16", shipped + "/tokenizer.json");
  ::setenv("HEADLAB_WEIGHTS", "mapped", 1);
  app::Controller c;
  c.execute(app::cmd::OpenModel{folder});
  c.execute(app::cmd::SetText{"the cat sat on the [MASK] near the old door of the house .", std::nullopt, true});
  headlab::test::settle(c);
  ::unsetenv("HEADLAB_WEIGHTS");
  REQUIRE(c.doc().model);
  REQUIRE(c.doc().model->mapped_bytes > 0);
  CHECK(c.doc().session.precision == "exact");
  auto top_p = [&] {
    REQUIRE(c.doc().snapshot);
    REQUIRE(!c.doc().snapshot->outputs.empty());
    REQUIRE(!c.doc().snapshot->outputs[0].top.empty());
    return c.doc().snapshot->outputs[0].top[0].p;
  };
  const float exact_p = top_p();
  // A patching result, measured exactly.
  app::cmd::SetPatching patching;
  patching.counterfactual = "the dog sat on the [MASK] near the old door of the house .";
  patching.answer = "mat";
  patching.wrong = "floor";
  c.execute(patching);
  c.execute(app::cmd::RunPatching{});
  headlab::test::settle(c);
  REQUIRE(c.doc().patching);

  c.apply(app::cmd::SetPrecision{"turbo"});
  CHECK(c.doc().last_error().find("'turbo' is not a precision") != std::string::npos);
  CHECK(c.doc().session.precision == "exact");

  // A dataset analysis running: refused, so that its report has one precision.
  c.execute(app::cmd::RunDataset{{std::string(HEADLAB_SOURCE_DIR) + "/assets/data/en_ewt-dev-100.conllu"}, {"confidence"}, 0});
  c.apply(app::cmd::SetPrecision{"fast"});
  CHECK(c.doc().last_error().find("a task is running") != std::string::npos);
  CHECK(core::current_precision() == core::Precision::exact);
  headlab::test::settle(c);

  c.apply(app::cmd::SetPrecision{"fast"});
  CHECK(c.doc().session.precision == "fast");
  CHECK(core::current_precision() == core::Precision::fast);
  CHECK_FALSE(c.doc().patching);  // measured at the other precision: cleared
  headlab::test::settle(c);
  // The input ran again, from scratch: the prediction is the fast one, not the kept exact trace's.
  const float fast_p = top_p();
  INFO("top-1 probability exact " << exact_p << ", fast " << fast_p);
  CHECK(fast_p != exact_p);
  CHECK(std::abs(fast_p - exact_p) < 2e-2);

  c.execute(app::cmd::SaveSession{dir.str("session.json")});
  nlohmann::json session;
  std::ifstream(dir.str("session.json")) >> session;
  CHECK(session["model"]["precision"] == "fast");
  session["model"]["precision"] = "half";
  std::ofstream(dir.str("odd-session.json")) << session.dump(2);
  session["model"].erase("precision");
  std::ofstream(dir.str("old-session.json")) << session.dump(2);

  c.execute(app::cmd::SetPrecision{"exact"});
  CHECK(core::current_precision() == core::Precision::exact);
  headlab::test::settle(c);
  CHECK(top_p() == exact_p);  // back to exact: the same numbers as before, bit for bit

  // Opened while the window's own model is still loading (as the start-up's recovery offer can be):
  // the load is superseded, so the session's precision applies.
  app::Controller d;
  d.execute(app::cmd::OpenModel{shipped});
  d.execute(app::cmd::OpenSession{dir.str("session.json")});
  headlab::test::settle(d);
  CHECK(d.doc().session.precision == "fast");
  CHECK(core::current_precision() == core::Precision::fast);
  // An unknown precision, and a session from before the choice: the window keeps its own (fast here).
  for (const char* name : {"odd-session.json", "old-session.json"}) {
    app::Controller e;
    e.execute(app::cmd::OpenSession{dir.str(name)});
    headlab::test::settle(e);
    INFO(name);
    CHECK(e.doc().session.precision == "fast");
    CHECK(core::current_precision() == core::Precision::fast);
    bool told = false;
    for (const auto& n : e.doc().notices) told = told || n.find("'half' is not a precision") != std::string::npos;
    CHECK(told == (std::string(name) == "odd-session.json"));
  }
}
