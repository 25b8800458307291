// The workbench's commands: every script action is exactly one command (same name, same fields)
// and round-trips through JSON; the Controller applies them headless — selection clamped, controls
// changed and re-run, role thresholds re-derived from a report's counts, sessions keeping it all.
#include "test_common.h"

#include "settle.h"

#include "analysis/head_report.h"
#include "app/document/controller.h"
#include "app/document/script.h"
#include "core/config.h"
#include "core/file_hash.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>
#include <thread>

using namespace headlab::app;
using headlab::test::TempDir;
using nlohmann::json;

namespace {

// One valid action per command name, with every required field.
json minimal_action(const std::string& name) {
  static const std::map<std::string, std::string> required = {
      {"open_model", R"({"folder": "/m"})"},
      {"set_text", R"({"text": "a b"})"},
      {"set_output_position", R"({"position": 2})"},
      {"select_head", R"({"layer": 1, "head": 2, "stage": "J"})"},
      {"set_gate", R"({"layer": 0, "head": 1, "value": 0.5})"},
      {"set_ablation", R"({"layer": 0, "mode": "mean"})"},
      {"set_mix", R"({"layer": 0, "which": "pre", "matrix": [1, 0, 0, 1]})"},
      {"run_dataset", R"({"files": ["a.conllu"], "limit": 5})"},
      {"set_dataset", R"({"files": ["a.conllu", "b.txt"]})"},
      {"select_sentence", R"({"file": "a.conllu", "index": 2})"},
      {"set_parse", R"({"conllu": "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n", "file": ""})"},
      {"open_report", R"({"path": "r.json"})"},
      {"sort_heads", R"({"by": "confidence"})"},
      {"set_lrp_target", R"({"position": 3, "token": 7})"},
      {"save_session", R"({"path": "s.json"})"},
      {"open_session", R"({"path": "s.json"})"},
      {"export", R"({"view": "Spectra", "path": "x.svg", "ask": true})"},
      {"screenshot", R"({"path": "x.png"})"},
      {"show_view", R"({"view": "Syntax"})"},
      {"select_view", R"({"view": "Relevance"})"},
      {"wait_frames", R"({"frames": 3})"},
      {"set_map_view", R"({"zoom": 4.0, "query_from": 10, "query_to": 40})"},
      {"set_head_view", R"({"hidden": [0, 1, 5]})"},
      {"answer_dialog", R"({"button": "Cancel"})"},
      {"generate", R"({"prompt": "The cat", "max_new": 5, "temperature": 0.5, "top_k": 3, "top_p": 0.75, "seed": 4})"},
      {"convert_model", R"({"to": "gqa", "groups": 2, "out": "/tmp/x", "open": false})"},
      {"set_patching", R"({"counterfactual": "a c", "answer": " b", "wrong": "7", "metric": "prob", "site": "v"})"},
      {"take_from_counterfactual", R"({"layer": 1, "head": 3, "weight": 0.5, "reset": false})"},
      {"set_device", R"({"device": "cuda:0"})"}, {"set_precision", R"({"precision": "fast"})"}};
  json j = required.count(name) ? json::parse(required.at(name)) : json::object();
  j["action"] = name;
  return j;
}

using headlab::test::settle;

// A report of the model in `folder` (2 layers × 4 heads, as analyze writes it for that model): head
// 0 puts 93% of its argmax at offset −1, the others spread it.
headlab::analysis::HeadReport positional_report(const std::string& folder) {
  headlab::analysis::HeadReport r;
  r.model = folder;
  r.model_weights = headlab::core::weights_identity(folder);
  r.settings.metrics = {"confidence", "positional"};
  r.sentences = 10;
  for (int i = 0; i < 8; ++i) {
    headlab::analysis::HeadEntry e;
    e.stack = headlab::core::Stack::Encoder;
    e.layer = i / 4;
    e.head = i % 4;
    e.queries = 100;
    e.confidence_sum = i == 0 ? 80 : 40;
    e.offsets = i == 0 ? std::map<int, int64_t>{{-1, 93}, {0, 7}} : std::map<int, int64_t>{{-1, 30}, {1, 70}};
    r.heads.push_back(e);
  }
  r.finalize();
  return r;
}

}  // namespace

TEST_CASE("every script action is one command and round-trips through JSON", "[app][commands]") {
  const auto& names = command_names();
  CHECK(names.size() == std::variant_size_v<Command>);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  for (const auto& name : names) {
    INFO(name);
    const Command c = command_from_json(minimal_action(name));
    CHECK(command_name(c) == name);
    const json once = command_to_json(c);
    CHECK(command_to_json(command_from_json(once)) == once);
    const json given = minimal_action(name);
    for (const auto& [key, value] : given.items()) CHECK(once.at(key) == value);
  }
  CHECK(is_window_command(command_from_json(minimal_action("export"))));
  CHECK(!is_window_command(command_from_json(minimal_action("run_dataset"))));
}

TEST_CASE("a bad action names the field and what is wrong with it", "[app][commands]") {
  CHECK_THROWS_WITH(command_from_json(json{{"action", "select_head"}, {"layer", 1}}),
                    Catch::Contains("select_head: \"head\" is missing"));
  CHECK_THROWS_WITH(command_from_json(json{{"action", "select_head"}, {"layer", "one"}, {"head", 0}}),
                    Catch::Contains("\"layer\" has the wrong type (string)"));
  CHECK_THROWS_WITH(command_from_json(json{{"action", "select_head"}, {"layer", 0}, {"head", 0}, {"stage", "Q"}}),
                    Catch::Contains("unknown stage 'Q'"));
  CHECK_THROWS_WITH(command_from_json(json{{"action", "set_ablation"}, {"layer", 0}, {"mode", "half"}}),
                    Catch::Contains("\"zero\" or \"mean\""));
  CHECK_THROWS_WITH(command_from_json(json{{"action", "fly"}}), Catch::Contains("unknown action 'fly'"));
  CHECK_THROWS_WITH(parse_script(json::parse(R"([{"action":"run"},{"action":"sort_heads"}])"), "s.json"),
                    Catch::Contains("s.json: action 1: sort_heads: \"by\" is missing"));
}

TEST_CASE("the controller applies commands to the document", "[app][commands]") {
  TempDir dir("controller");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  ::setenv("HEADLAB_ASSETS", (std::string(HEADLAB_SOURCE_DIR) + "/assets").c_str(), 1);
  Controller c;
  c.execute(cmd::OpenModel{""});  // a random-weight model of assets/configs/mha.json
  settle(c);
  REQUIRE(c.doc().model);
  REQUIRE(c.doc().snapshot);
  const auto& att = c.doc().model->attentions.at(0);

  SECTION("selection is clamped to the model") {
    c.execute(cmd::SelectHead{std::nullopt, 99, 99});
    CHECK(c.doc().session.selection.layer == att.layers - 1);
    CHECK(c.doc().session.selection.head == att.softmax_heads - 1);
    CHECK(c.doc().session.selection.mixer_layer == att.layers - 1);
  }
  SECTION("opening the Analyse workspace brings the weights' spectra without another input") {
    CHECK(!c.doc().snapshot->weight_spectra);  // Explore does not compute them
    cmd::SetView v;
    v.workspace = "Analyse";
    c.execute(v);
    settle(c);
    REQUIRE(c.doc().snapshot->weight_spectra);
    CHECK(c.doc().snapshot->weight_spectra->size() == size_t(att.layers));
  }
  SECTION("a gate changes the controls and re-runs") {
    const uint64_t before = c.doc().snapshot->generation;
    c.execute(cmd::SetGate{std::nullopt, 1, 2, 0.0f});
    settle(c);
    CHECK(c.doc().session.controls.get(att.stack, 1).gate(2) == 0.0f);
    CHECK(c.doc().snapshot->generation > before);
    CHECK(c.doc().snapshot->input.controls.get(att.stack, 1).gate(2) == 0.0f);
    CHECK_THROWS_WITH(c.execute(cmd::SetGate{headlab::core::Stack::Cross, 0, 0, 0.0f}), Catch::Contains("no 'cross' attention"));
    c.apply(cmd::SetGate{headlab::core::Stack::Cross, 0, 0, 0.0f});  // the view's form: the error goes to the status bar
    CHECK(c.doc().last_error().find("set_gate: ") == 0);
    // A script's value outside [0, 1], a NaN, or a head or layer the model lacks is refused by name,
    // and the controls stay as they were (not clamped into a different gate).
    const auto before_refused = c.doc().session.controls.layers(att.stack);
    CHECK_THROWS_WITH(c.execute(cmd::SetGate{std::nullopt, 1, 2, 1.5f}), Catch::Contains("layer 1 head 2: a gate must be in [0, 1]"));
    CHECK_THROWS_WITH(c.execute(cmd::SetGate{std::nullopt, 1, 2, std::nanf("")}), Catch::Contains("a gate must be in [0, 1]"));
    CHECK_THROWS_WITH(c.execute(cmd::SetGate{std::nullopt, 1, 99, 0.0f}), Catch::Contains("head 99 is not in [0, "));
    CHECK_THROWS_WITH(c.execute(cmd::SetGate{std::nullopt, 99, 0, 0.0f}), Catch::Contains("layer 99 is not in [0, "));
    cmd::SetAblation ablation;
    ablation.layer = att.layers;
    CHECK_THROWS_WITH(c.execute(ablation), Catch::Contains("is not in [0, "));
    CHECK((c.doc().session.controls.layers(att.stack) == before_refused));
  }
  SECTION("window commands are the window's") {
    CHECK_THROWS(c.execute(cmd::Quit{}));
  }
  SECTION("thresholds re-derive roles from the report's counts, and sessions keep report and choices") {
    // A report applies to the model it was measured on: a folder of the same config, opened.
    const std::string folder = dir.str("mha");
    headlab::core::save_model(
        *headlab::core::make_random_model(headlab::core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json"), 1),
        folder);
    c.execute(cmd::OpenModel{folder});
    settle(c);
    auto report = positional_report(folder);
    // A copying score for head 1 (a measure with a role threshold of its own, 0.5 by default).
    report.settings.metrics.push_back("copying");
    report.heads[1].values["copying_measured"] = 1;
    report.heads[1].values["copying_score"] = 0.6;
    report.finalize();
    REQUIRE(report.heads[0].positional);
    auto has_role = [](const headlab::analysis::HeadEntry& h, const std::string& role) {
      return std::find(h.roles.begin(), h.roles.end(), role) != h.roles.end();
    };
    REQUIRE(has_role(report.heads[1], "copying"));
    headlab::analysis::write_report_files(report, dir.str("report"));
    c.execute(cmd::OpenReport{dir.str("report/head_report.json")});
    REQUIRE(c.doc().report);
    CHECK(c.doc().report->heads[0].positional);
    c.execute(cmd::SetThresholds{0.95, std::nullopt, std::nullopt});
    CHECK(!c.doc().report->heads[0].positional);
    CHECK(c.doc().report->heads[0].positional_share == Approx(0.93));
    CHECK(c.doc().session.analysis.positional_threshold == 0.95);
    // A measure's own threshold: the copying role goes above the head's score, and stays once the
    // built-in thresholds change again.
    c.execute(cmd::SetThresholds{std::nullopt, std::nullopt, std::nullopt, false, std::string("copying_threshold"), 0.7});
    CHECK_FALSE(has_role(*c.doc().report->find(headlab::core::Stack::Encoder, 0, 1), "copying"));
    CHECK(c.doc().session.analysis.measure_thresholds.at("copying_threshold") == 0.7);
    c.execute(cmd::SetThresholds{0.95, std::nullopt, std::nullopt});
    CHECK_FALSE(has_role(*c.doc().report->find(headlab::core::Stack::Encoder, 0, 1), "copying"));
    CHECK_THROWS_WITH(c.execute(cmd::SetThresholds{std::nullopt, std::nullopt, std::nullopt, false, std::string("no_such"), 0.1}),
                      Catch::Contains("no measure has a threshold 'no_such'"));
    c.execute(cmd::SortHeads{"positional_share", false});
    CHECK_THROWS_WITH(c.execute(cmd::SortHeads{"no_such_column", true}), Catch::Contains("no_such_column"));
    CHECK(c.doc().session.analysis.sort_by == "positional_share");

    c.execute(cmd::SaveSession{dir.str("s.json")});
    Controller again;
    again.execute(cmd::OpenSession{dir.str("s.json")});
    settle(again);
    REQUIRE(again.doc().report);
    CHECK(!again.doc().report->heads[0].positional);  // the edited threshold came back with it
    CHECK_FALSE(has_role(again.doc().report->heads[1], "copying"));  // so did the measure's
    CHECK(again.doc().session.analysis.sort_by == "positional_share");
    CHECK(again.doc().notices.empty());
    again.execute(cmd::SetThresholds{std::nullopt, std::nullopt, std::nullopt, true});
    CHECK(again.doc().report->heads[0].positional);
    CHECK(has_role(again.doc().report->heads[1], "copying"));
  }
  SECTION("a dataset run needs a model folder") {
    CHECK_THROWS_WITH(c.execute(cmd::RunDataset{{"x.conllu"}, {}, 0}), Catch::Contains("model folder"));
  }
  ::unsetenv("HEADLAB_ASSETS");
}

TEST_CASE("select_sentence runs the Syntax view's sentence and follows the controls", "[app][commands][syntax-job]") {
  TempDir dir("controller-syntax");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string ud = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";
  Controller c;
  c.execute(cmd::OpenModel{model});
  settle(c);
  CHECK(!c.doc().syntax);  // no CoNLL-U file chosen: nothing runs
  CHECK_THROWS_WITH(c.execute(cmd::SelectSentence{std::nullopt, 1}), Catch::Contains("no CoNLL-U file"));
  CHECK_THROWS_WITH(c.execute(cmd::SelectSentence{std::string("notes.txt"), 0}), Catch::Contains("not a CoNLL-U file"));

  // The dataset's first CoNLL-U file is the default.
  c.execute(cmd::SetDatasetChoices{{dir.str("plain.txt"), ud}, {}, 10});
  c.execute(cmd::SelectSentence{std::nullopt, 3});
  CHECK(!c.idle());  // a script waits for the sentence
  settle(c);
  REQUIRE(c.doc().syntax);
  CHECK(c.doc().syntax_job.error.empty());
  CHECK(c.doc().syntax->file == ud);
  CHECK(c.doc().syntax->index == 3);
  CHECK(c.doc().syntax->sentence_count == 100);
  CHECK(c.doc().session.analysis.syntax_index == 3);
  const auto before = c.doc().syntax;

  // A gate is a new run of the same sentence.
  c.execute(cmd::SetGate{headlab::core::Stack::Encoder, 0, 1, 0.0f});
  settle(c);
  REQUIRE(c.doc().syntax);
  CHECK(c.doc().syntax != before);
  CHECK(c.doc().syntax->words == before->words);

  // Past the end: the error names the file's size, and the session keeps the choice.
  c.execute(cmd::SelectSentence{std::nullopt, 250});
  settle(c);
  CHECK(!c.doc().syntax);
  CHECK(c.doc().syntax_job.error.find("has 100 sentences") != std::string::npos);
  c.execute(cmd::SelectSentence{ud, 7});
  settle(c);
  REQUIRE(c.doc().syntax);
  CHECK(c.doc().syntax->index == 7);
  CHECK(c.doc().session.analysis.syntax_file == ud);

  // The typed input with its parse: the text last run, found in the file; typing alone does not re-run.
  const std::string sentence = c.doc().syntax->text;
  CHECK_THROWS_WITH(c.execute(cmd::SetParse{"1\tx\t_\t_\t_\t_\t0\troot\t_\t_\n", ud}), Catch::Contains("not both"));
  CHECK_THROWS_WITH(c.execute(cmd::SetParse{"", dir.str("plain.txt")}), Catch::Contains("not a CoNLL-U file"));
  CHECK_THROWS_WITH(c.execute(cmd::SetParse{"", dir.str("missing.conllu")}), Catch::Contains("no such file"));
  c.execute(cmd::SetText{sentence, std::nullopt, true});
  c.execute(cmd::SetParse{"", ud});
  settle(c);
  REQUIRE(c.doc().syntax);
  CHECK(c.doc().syntax->on_input);
  CHECK(c.doc().syntax->text == sentence);
  CHECK(c.doc().syntax_job.error.empty());
  const auto typed = c.doc().syntax;
  c.execute(cmd::SetText{"The cat", std::nullopt, false});  // a keystroke
  settle(c);
  CHECK(c.doc().syntax == typed);
  c.execute(cmd::SetText{"The cat", std::nullopt, true});  // run: the parse no longer spells it
  settle(c);
  CHECK(!c.doc().syntax);
  CHECK(c.doc().syntax_job.error.find("spells the input") != std::string::npos);

  // Picking a file's sentence leaves the typed input.
  c.execute(cmd::SelectSentence{std::nullopt, 2});
  settle(c);
  REQUIRE(c.doc().syntax);
  CHECK(!c.doc().syntax->on_input);
  CHECK(c.doc().session.analysis.syntax_parse_file.empty());
}
