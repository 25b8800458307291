// The document never tells the views something untrue: a head report is applied only to the model
// it was measured on (another model's is kept apart), an error lasts until the same kind of action
// succeeds, and a refused input leaves the last accepted one on show, marked — with a cut of a long
// text to the model's positions on offer.
#include "test_common.h"

#include "settle.h"

#include "analysis/head_report.h"
#include "app/document/controller.h"
#include "app/document/report_match.h"
#include "app/document/run_mapping.h"
#include "core/config.h"
#include "core/file_hash.h"
#include "core/model/model.h"

#include <cstdlib>
#include <filesystem>
#include <string>

using namespace headlab;
using namespace headlab::app;
using headlab::test::settle;
using headlab::test::TempDir;

namespace {

// A model folder of assets/configs/mha.json with `layers` layers (random weights, `seed`).
std::string make_folder(const TempDir& dir, const std::string& name, int layers, uint64_t seed) {
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  config.encoder->layers = layers;
  const std::string folder = dir.str(name);
  core::save_model(*core::make_random_model(config, seed), folder);
  return folder;
}

// A report of every head of `folder`'s encoder (layers × 4 heads), as analyze writes it: head
// (0, 0) positional, the rest diffuse.
analysis::HeadReport report_of(const std::string& folder, int layers, const std::string& weights) {
  analysis::HeadReport r;
  r.model = folder;
  r.model_weights = weights;
  r.settings.metrics = {"confidence", "positional"};
  r.sentences = 10;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < 4; ++h) {
      analysis::HeadEntry e;
      e.stack = headlab::core::Stack::Encoder;
      e.layer = l;
      e.head = h;
      e.queries = 100;
      e.confidence_sum = 50;
      e.offsets = l == 0 && h == 0 ? std::map<int, int64_t>{{-1, 95}, {0, 5}} : std::map<int, int64_t>{{-1, 40}, {1, 60}};
      r.heads.push_back(e);
    }
  r.finalize();
  return r;
}

struct Env {
  TempDir dir{"document-truth"};
  Env() {
    ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
    ::setenv("HEADLAB_ASSETS", (std::string(HEADLAB_SOURCE_DIR) + "/assets").c_str(), 1);
  }
  ~Env() { ::unsetenv("HEADLAB_ASSETS"); }
};

}  // namespace

TEST_CASE("report_mismatch: the weights decide, else the folder, and the heads must be the model's", "[app][report]") {
  ModelSummary m;
  m.folder = "/models/a";
  m.name = "a";
  m.weights_hash = "s1-aaaa";
  AttentionSummary att;
  att.stack = headlab::core::Stack::Encoder;
  att.layers = 2;
  att.output_heads = att.softmax_heads = 4;
  m.attentions = {att};
  analysis::HeadReport r = report_of("/models/a", 2, "s1-aaaa");
  CHECK(report_mismatch(r, m).empty());
  // Same weights elsewhere (a copy of the folder, a colleague's path): still this model's.
  r.model = "/elsewhere/a";
  CHECK(report_mismatch(r, m).empty());
  // Other weights in the same folder (retrained since): not this model's any more.
  r.model = "/models/a";
  r.model_weights = "s1-bbbb";
  CHECK_THAT(report_mismatch(r, m), Catch::Contains("weights have changed"));
  // A report without the weights' identity: the folder decides (as canonical paths).
  r.model_weights.clear();
  r.model = "/models/./a";
  CHECK(report_mismatch(r, m).empty());
  r.model = "/models/b";
  CHECK_THAT(report_mismatch(r, m), Catch::Contains("measured on /models/b") && Catch::Contains("the open model is /models/a"));
  // Right folder, other shape: never applied by position.
  analysis::HeadReport small = report_of("/models/a", 1, "s1-aaaa");
  CHECK_THAT(report_mismatch(small, m), Catch::Contains("1 × 4 encoder heads") && Catch::Contains("2 × 4"));
  // A random-weight model has no folder: no report is its.
  ModelSummary random = m;
  random.folder.clear();
  random.weights_hash.clear();
  CHECK(!report_mismatch(report_of("", 2, ""), random).empty());
}

TEST_CASE("a head report is shown only with the model it was measured on", "[app][report]") {
  Env env;
  const std::string a = make_folder(env.dir, "a", 2, 1), b = make_folder(env.dir, "b", 3, 2);
  Controller c;
  c.execute(cmd::OpenModel{a});
  settle(c);
  REQUIRE(c.doc().model);
  analysis::write_report_files(report_of(a, 2, core::weights_identity(a)), env.dir.str("report-a"));
  c.execute(cmd::OpenReport{env.dir.str("report-a/head_report.json")});
  REQUIRE(c.doc().report);
  CHECK(!c.doc().foreign_report);
  CHECK(c.doc().report->heads[0].positional);

  // Another model opens: the report is kept apart, named, and applied to none of its heads.
  c.execute(cmd::OpenModel{b});
  settle(c);
  REQUIRE(c.doc().model->folder == b);
  CHECK(!c.doc().report);
  REQUIRE(c.doc().foreign_report);
  CHECK(c.doc().foreign_report->model == a);
  CHECK_THAT(c.doc().foreign_reason, Catch::Contains("measured on " + a));
  // Threshold edits still act on it, apart.
  c.execute(cmd::SetThresholds{0.99, std::nullopt, std::nullopt});
  CHECK(!c.doc().report);
  REQUIRE(c.doc().foreign_report);
  CHECK(!c.doc().foreign_report->heads[0].positional);
  c.execute(cmd::SetThresholds{std::nullopt, std::nullopt, std::nullopt, true});

  // Its model again: the report is the open model's once more.
  c.execute(cmd::OpenModel{a});
  settle(c);
  REQUIRE(c.doc().report);
  CHECK(!c.doc().foreign_report);
  CHECK(c.doc().report->heads[0].positional);

  // A session of model b that still names the report keeps it apart when loaded.
  c.execute(cmd::OpenModel{b});
  settle(c);
  c.execute(cmd::SaveSession{env.dir.str("b.json")});
  Controller again;
  again.execute(cmd::OpenSession{env.dir.str("b.json")});
  settle(again);
  CHECK(!again.doc().report);
  CHECK(again.doc().foreign_report);

  // Closed: gone, and the session forgets it.
  c.execute(cmd::CloseReport{});
  CHECK(!c.doc().report);
  CHECK(!c.doc().foreign_report);
  CHECK(c.doc().session.analysis.report_path.empty());
  c.execute(cmd::OpenModel{a});
  settle(c);
  CHECK(!c.doc().report);

  // Weights rewritten in place since the report: not the same model.
  make_folder(env.dir, "a", 2, 7);
  c.execute(cmd::OpenModel{a});
  settle(c);
  c.execute(cmd::OpenReport{env.dir.str("report-a/head_report.json")});
  CHECK(!c.doc().report);
  REQUIRE(c.doc().foreign_report);
  CHECK_THAT(c.doc().foreign_reason, Catch::Contains("weights have changed"));
}

TEST_CASE("an error lasts until the same kind of action succeeds", "[app][errors]") {
  Env env;
  const std::string good = make_folder(env.dir, "good", 2, 1);
  Controller c;
  c.execute(cmd::OpenModel{good});
  settle(c);
  REQUIRE(c.doc().errors.empty());

  // Not a folder: one message, the path named once.
  const std::string missing = env.dir.str("no-such-folder");
  c.execute(cmd::OpenModel{missing});
  settle(c);
  REQUIRE(c.doc().errors.size() == 1);
  CHECK(c.doc().errors[0].kind == "open_model");
  const std::string text = c.doc().last_error();
  CHECK_THAT(text, Catch::Contains("not a folder"));
  CHECK(text.find(missing) != std::string::npos);
  CHECK(text.find(missing) == text.rfind(missing));  // not "opening X: X: not a folder"
  CHECK(c.doc().model->folder == good);  // the model open before stays

  // Another kind of failure joins it; a success of one kind clears only that kind.
  c.apply(cmd::SetGate{headlab::core::Stack::Cross, 0, 0, 0.0f});
  REQUIRE(c.doc().errors.size() == 2);
  c.execute(cmd::SetGate{headlab::core::Stack::Encoder, 0, 0, 0.5f});
  settle(c);
  REQUIRE(c.doc().errors.size() == 1);
  CHECK(c.doc().errors[0].kind == "open_model");
  c.execute(cmd::OpenModel{good});
  settle(c);
  CHECK(c.doc().errors.empty());
}

TEST_CASE("a folder that does not open at start-up leaves its error on show over the default model", "[app][errors]") {
  Env env;
  Controller c;
  const std::string missing = env.dir.str("no-such-model");
  c.start(missing, "");
  settle(c);
  REQUIRE(c.doc().model);
  // The shipped default opens in its place (not random weights "because no trained model was found"),
  // and the status bar still says why the folder asked for is not the one on show.
  CHECK(c.doc().model->folder == std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  CHECK_FALSE(c.doc().model->random_weights);
  CHECK(c.doc().banner.empty());
  CHECK_THAT(c.doc().last_error(), Catch::Contains(missing) && Catch::Contains("not a folder"));
}

TEST_CASE("a job's error is not shown once another model is open", "[app][errors]") {
  Env env;
  const std::string assets = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/";
  Controller c;
  c.execute(cmd::OpenModel{assets + "default"});
  settle(c);
  c.execute(cmd::SetText{"the ship sailed across the [MASK] ."});
  settle(c);
  cmd::SetPatching p;
  p.counterfactual = "the train rushed across the wide [MASK] .";  // one token more: refused
  p.answer = "sea";
  c.execute(p);
  c.execute(cmd::RunPatching{});
  settle(c);
  REQUIRE_THAT(c.doc().patching_job.error, Catch::Contains("tokens"));
  // The message counted the default model's WordPiece tokens: the induction model was never asked.
  c.execute(cmd::OpenModel{assets + "induction"});
  settle(c);
  CHECK(c.doc().model->folder == assets + "induction");
  CHECK(c.doc().patching_job.error.empty());
}

TEST_CASE("a refused input leaves the last accepted one on show, marked, and can be cut to fit", "[app][errors]") {
  Env env;
  const std::string folder = make_folder(env.dir, "m", 2, 1);  // no tokenizer: words hashed, 256 positions
  Controller c;
  c.execute(cmd::OpenModel{folder});
  settle(c);
  c.execute(cmd::SetText{"the cat sat on the mat", {}, true});
  settle(c);
  REQUIRE(c.doc().snapshot);
  const auto accepted = c.doc().snapshot;
  CHECK(!c.doc().refused);

  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "w" + std::to_string(i) + " ";
  c.execute(cmd::SetText{long_text, {}, true});
  settle(c);
  REQUIRE(c.doc().refused);
  CHECK(c.doc().refused->tokens == 300);
  CHECK(c.doc().refused->limit == 256);
  CHECK(c.doc().refused->text == long_text);
  CHECK_THAT(c.doc().refused->reason, Catch::Contains("300 tokens") && Catch::Contains("at most 256"));
  CHECK(c.doc().snapshot == accepted);  // the views still draw the last accepted input …
  CHECK(c.doc().snapshot->input.text == "the cat sat on the mat");
  CHECK(c.doc().session.text == long_text);  // … while the Input view holds the refused one
  REQUIRE(c.doc().errors.size() == 1);
  CHECK(c.doc().errors[0].kind == "run");

  SECTION("the first tokens") {
    c.execute(cmd::TrimInput{"first", 0});
    settle(c);
    CHECK(!c.doc().refused);
    CHECK(c.doc().errors.empty());
    REQUIRE(c.doc().snapshot);
    CHECK(c.doc().snapshot->tokens.ids.size() == 256);
    CHECK(c.doc().snapshot->tokens.tokens.front() == "w0");
    CHECK(c.doc().snapshot->tokens.tokens.back() == "w255");
    CHECK(c.doc().session.text == c.doc().snapshot->input.text);  // the text is now what was run
    CHECK(c.doc().session.text.rfind("w0 w1 ", 0) == 0);
    CHECK_THAT(c.doc().snapshot->trimmed, Catch::Contains("kept tokens 0–255 of the 300"));
    REQUIRE(!c.doc().notices.empty());
    CHECK_THAT(c.doc().notices.back(), Catch::Contains("cut to fit"));
  }
  SECTION("a window around a token") {
    c.execute(cmd::TrimInput{"around", 250});
    settle(c);
    REQUIRE(c.doc().snapshot);
    const auto& tokens = c.doc().snapshot->tokens.tokens;
    REQUIRE(tokens.size() == 256);
    // 300 tokens, 256 kept around 250: the window cannot centre there and ends at the text's end.
    CHECK(tokens.front() == "w44");
    CHECK(tokens.back() == "w299");
  }
  SECTION("a later success clears the mark") {
    c.execute(cmd::SetText{"a short text again", {}, true});
    settle(c);
    CHECK(!c.doc().refused);
    CHECK(c.doc().errors.empty());
    CHECK(c.doc().snapshot->input.text == "a short text again");
  }
  CHECK_THROWS_WITH(c.execute(cmd::TrimInput{"middle", 0}), Catch::Contains("first") && Catch::Contains("around"));
}

TEST_CASE("a layer kept as thumbnails is fetched whole when a head of it is selected", "[app][thumbnails]") {
  Env env;
  struct Budget {
    Budget() { ::setenv("HEADLAB_FULL_MAPS", "1", 1); }  // any map is over it: thumbnails at 150 tokens
    ~Budget() { ::unsetenv("HEADLAB_FULL_MAPS"); }
  } budget;
  const std::string folder = make_folder(env.dir, "m", 3, 2);
  Controller c;
  c.execute(cmd::OpenModel{folder});
  settle(c);
  std::string text;
  for (int i = 0; i < 150; ++i) text += "w" + std::to_string(i) + " ";
  c.execute(cmd::SetText{text, {}, true});
  settle(c);
  REQUIRE(c.doc().snapshot);
  REQUIRE(c.doc().snapshot->maps.pooled());
  auto layer_pooled = [&](int l) { return c.doc().snapshot->attentions.at(0).layers.at(size_t(l)).pooled(); };
  CHECK(!layer_pooled(0));  // the selected layer
  CHECK(layer_pooled(1));
  CHECK(layer_pooled(2));
  const auto before = c.doc().snapshot->generation;
  c.execute(cmd::SelectHead{std::nullopt, 2, 1});
  settle(c);
  CHECK(c.doc().snapshot->generation > before);
  CHECK(c.doc().snapshot->layers_computed == 1);  // that layer alone
  CHECK(!layer_pooled(2));
  CHECK(layer_pooled(0));
  // A head of the layer already whole asks for nothing.
  const auto now = c.doc().snapshot->generation;
  c.execute(cmd::SelectHead{std::nullopt, 2, 3});
  settle(c);
  CHECK(c.doc().snapshot->generation == now);
  // A head selected while a run is on its way, after a snapshot of whole maps: the run lands with
  // thumbnails of the newly selected layer, which is then fetched without being asked again.
  c.execute(cmd::SetText{"w1 w2 w3", {}, true});
  settle(c);
  REQUIRE(!c.doc().snapshot->maps.pooled());  // short: whole maps
  c.execute(cmd::SelectHead{std::nullopt, 0, 0});
  c.execute(cmd::SetText{text, {}, true});  // asked for with layer 0 open
  c.execute(cmd::SelectHead{std::nullopt, 1, 2});
  settle(c);
  REQUIRE(c.doc().snapshot->maps.pooled());
  CHECK(!layer_pooled(1));
  CHECK(layer_pooled(0));
  // The line is the environment's: 0 keeps every map whole, a size moves it, nonsense keeps the default.
  ::setenv("HEADLAB_FULL_MAPS", "0", 1);
  CHECK(full_maps_budget() == 0);
  ::setenv("HEADLAB_FULL_MAPS", "512M", 1);
  CHECK(full_maps_budget() == int64_t(512) << 20);
  ::setenv("HEADLAB_FULL_MAPS", "lots", 1);
  CHECK(full_maps_budget() == kFullMapsBudget);
}
