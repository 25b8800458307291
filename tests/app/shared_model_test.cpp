// One copy of each model's weights: the model store hands a loaded folder out again, the window's
// live engine and its background tasks (dataset run, Syntax view, generation) all share it — the
// weights are read once and memory grows by one copy — and two tasks running at once on it give
// exactly what the same two give one after the other.
#include "test_common.h"

#include "settle.h"

#include "analysis/head_report.h"
#include "app/work/dataset_job.h"
#include "app/work/syntax_job.h"
#include "app/document/controller.h"
#include "app/tasks/task_manager.h"
#include "core/config.h"
#include "core/model/model.h"
#include "core/model/model_store.h"
#include "core/model/system_info.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace headlab;
using namespace headlab::app;
using headlab::test::settle;
using headlab::test::TempDir;

namespace {

const std::string kDefault = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
const std::string kUd = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";

// A causal model with the default model's tokenizer, ~36 M parameters (~145 MB in float32): large
// enough that a second copy of its weights shows plainly in the process's memory.
std::string big_causal_model(const TempDir& dir, int64_t* weight_bytes) {
  auto c = core::load_model_config(kDefault + "/config.json");
  c.kind = core::StackKind::Decoder;
  c.objective = "causal";
  c.decoder = c.encoder;
  c.encoder.reset();
  // The default's layer 3 has no positions and its layer 4 a sliding window; this model is uniform.
  c.decoder->nope_layers.clear();
  c.decoder->local.reset();
  c.hidden_size = 768;
  c.ffn.inner_size = 3072;
  c.decoder->layers = 4;
  c.decoder->attention.key_size = c.decoder->attention.value_size = 96;
  const std::string folder = dir.str("big");
  core::save_model(*core::make_random_model(c, 4), folder, "F32", kDefault + "/tokenizer.json");
  *weight_bytes = static_cast<int64_t>(std::filesystem::file_size(folder + "/model.safetensors"));
  return folder;
}

}  // namespace

TEST_CASE("the model store reads a folder once and frees a model nobody holds", "[app][shared-model]") {
  TempDir dir("model-store");
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  core::save_model(*core::make_random_model(config, 1), dir.str("m"));
  core::ModelStore store;
  auto a = store.get(dir.str("m"));
  auto b = store.get(dir.str("m") + "/.");  // the same folder spelt otherwise
  CHECK(a == b);
  CHECK(store.loads() == 1);
  CHECK(store.resident() == 1);
  // Many tasks asking at once: one read.
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<core::Model>> got(8);
  for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { got[size_t(i)] = store.get(dir.str("m")); });
  for (auto& t : threads) t.join();
  CHECK(std::all_of(got.begin(), got.end(), [&](const auto& m) { return m == a; }));
  CHECK(store.loads() == 1);
  // Nobody holds it: gone, and read again when asked.
  a.reset(), b.reset(), got.clear();
  CHECK(store.resident() == 0);
  auto c = store.get(dir.str("m"));
  CHECK(store.loads() == 2);
  // Weights rewritten in the folder (retrained, converted into it): read afresh, not the old copy.
  core::save_model(*core::make_random_model(config, 2), dir.str("m"));
  auto d = store.get(dir.str("m"));
  CHECK(d != c);
  CHECK(store.loads() == 3);
  CHECK_THROWS_WITH(store.get(dir.str("absent")), Catch::Contains(dir.str("absent")));
}

TEST_CASE("two tasks at once on one model give what they give one after the other", "[app][shared-model]") {
  auto tasks = std::make_shared<TaskManager>([](int threads) { core::use_interactive_threads(threads); });
  auto models = std::make_shared<core::ModelStore>();
  DatasetRequest dataset;
  dataset.model_folder = kDefault;
  dataset.files = {kUd};
  dataset.metrics = {"confidence", "positional", "syntactic"};
  dataset.limit = 12;
  SyntaxRequest sentence;
  sentence.model_folder = kDefault;
  sentence.file = kUd;
  sentence.index = 3;

  auto run_both = [&](bool together) {
    DatasetJob d(tasks, models);
    SyntaxJob s(tasks, models);
    d.start(dataset);
    if (!together) REQUIRE(tasks->wait_idle(std::chrono::minutes(5)));
    s.start(sentence);
    REQUIRE(tasks->wait_idle(std::chrono::minutes(5)));
    REQUIRE(d.result());
    REQUIRE(s.result());
    return std::make_pair(analysis::to_json(*d.result()), s.result()->argmax);
  };
  const auto one_after_other = run_both(false);
  const int64_t before = models->loads();
  // A copy held while both run (as the window's live model holds one), so that a job that ends
  // before the other starts cannot release it: both must use that one read of the folder.
  const auto held = models->get(kDefault);
  const auto at_once = run_both(true);
  CHECK(one_after_other.first == at_once.first);
  CHECK(one_after_other.second == at_once.second);
  CHECK(models->loads() - before == 1);  // together, one read of the folder for both
}

TEST_CASE("the window's work shares one copy of the weights", "[app][shared-model]") {
  TempDir dir("shared-model");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  int64_t weight_bytes = 0;
  const std::string folder = big_causal_model(dir, &weight_bytes);
  REQUIRE(weight_bytes > 100'000'000);
  Controller c;
  const int64_t before = core::process_memory("VmRSS");
  c.execute(cmd::OpenModel{folder});
  settle(c, 300);
  REQUIRE(c.doc().model);
  CHECK(c.models().loads() == 1);
  const int64_t open = core::process_memory("VmRSS");
  INFO("open: +" << (open - before) / 1e6 << " MB for " << weight_bytes / 1e6 << " MB of weights");

  // A dataset run, a generation and the Syntax view's sentence at once, on the model already open.
  c.execute(cmd::RunDataset{{kUd}, {"confidence", "positional"}, 6});
  GenerationSettings g;
  g.prompt = "the cat sat on the";
  g.max_new = 4;
  c.execute(cmd::Generate{g});
  c.execute(cmd::SelectSentence{kUd, 2});
  int64_t peak = core::process_memory("VmRSS");
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < until) {
    c.poll();
    peak = std::max(peak, core::process_memory("VmRSS"));
    if (c.idle() && c.tasks().idle()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(c.tasks().idle());
  INFO(c.doc().last_error() << " / " << c.doc().dataset.error << " / " << c.doc().syntax_job.error << " / "
                            << c.doc().generation_job.error);
  REQUIRE(c.doc().report);
  REQUIRE(c.doc().syntax);
  REQUIRE(c.doc().generation);
  CHECK(c.doc().generation->steps.size() == 4);
  // Not one load more: every task took the live engine's copy.
  CHECK(c.models().loads() == 1);
  INFO("peak while the three ran: +" << (peak - open) / 1e6 << " MB over the open model");
  // Their own buffers (maps, caches) are small next to a second copy of the weights.
  CHECK(peak - open < weight_bytes / 2);
  ::unsetenv("XDG_STATE_HOME");
}
