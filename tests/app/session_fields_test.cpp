// Every field of a session survives a save and a load: each one set away from its default and
// compared one by one after loading (a field the file forgets comes back as its default and fails
// here), and the recent-folders list, kept outside sessions, is not written into one.
#include "test_common.h"

#include "app/document/commands.h"
#include "app/document/controller.h"
#include "app/document/controls_edit.h"
#include "app/document/session.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

using namespace headlab::app;
using headlab::core::Stack;

TEST_CASE("every session field comes back from a save and a load, compared one by one", "[app][session]") {
  headlab::test::TempDir dir("session-fields");
  SessionState s;
  s.model_folder = "/models/tiny";
  s.model_hash = "0123456789abcdef";
  s.random_config = "assets/configs/gqa.json";
  s.text = "Ünïcode [MASK] text — with “quotes”";
  s.decoder_text = "<s> Der Hund";
  set_gate(s.controls, Stack::Decoder, 1, 2, 0.25f, 4);
  set_gate(s.controls, Stack::Cross, 0, 1, 0.5f, 4);
  set_mix(s.controls, Stack::Encoder, 0, "post", mix_preset(MixPreset::Blend, 4, 1, 3, 0.3f), 4);
  s.controls.at(Stack::Encoder, 3).ablation = headlab::core::Ablation::Mean;
  s.selection = {Stack::Cross, 1, 2, Stage::W, 4, 5, 6, 1};
  auto& v = s.view;
  v.colormap = "gray";  // not the default
  v.log_scale = true;
  v.auto_range = true;
  v.thumbnail_size = 61.5f;
  v.top_k = 7;
  v.export_scale = 3;
  v.export_dir = "/tmp/figures";
  v.grid_measure = "confidence";
  v.logit_spectra = true;
  v.workspace = "Analyse";
  auto& a = s.analysis;
  a.dataset_files = {"/data/dev.conllu", "/data/more.txt"};
  a.metrics = {"confidence", "syntactic"};
  a.limit = 50;
  a.report_path = "/reports/head_report.json";
  a.report_hash = "fedcba9876543210";
  a.report_embedded = R"({"format":"headlab-head-report","heads":[]})";
  a.sort_by = "positional_share";
  a.sort_descending = false;
  a.filter_role = "syntactic";
  a.filter_layer = 2;
  a.thresholds_edited = true;
  a.positional_threshold = 0.8;
  a.rare_threshold = 0.6;
  a.syntactic_margin = 0.2;
  a.measure_thresholds = {{"induction_threshold", 0.3}, {"copying_threshold", -0.2}};
  a.lrp_enabled = true;
  a.lrp_position = 3;
  a.lrp_token = 17;
  a.lrp_shading = "flow";
  a.syntax_file = "ud/dev.conllu";
  a.syntax_index = 4;
  a.syntax_parse = "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n";
  a.syntax_parse_file = "ud/parse.conllu";
  auto& g = s.generation.settings;
  g.prompt = "Once upon";
  g.max_new = 33;
  g.temperature = 0.7f;
  g.top_k = 40;
  g.top_p = 0.9f;
  g.seed = 12345;
  s.generation.generated = {5, 6, 7};
  s.patching.settings = {"The dog sat", " cat", " dog", "prob", "k"};
  s.patching.take = {{0.0f, 0.5f}, {1.0f}};
  s.patching.ran = true;
  s.patching.measured_text = "The cat sat";
  s.patching.measured_settings = {"The dog sat", " mat", " rug", "logit-diff", "z"};
  set_gate(s.patching.measured_controls, Stack::Encoder, 0, 3, 0.0f, 4);
  s.window.imgui_ini = "[Window][Model]\nPos=0,21\nSize=384,376\n";
  s.window.opened = {"Patching", "Generate"};
  s.window.closed = {"Mixer"};
  s.window.attention_map = {2.5f, 3.25f, 1.5f, 2, 9};
  s.window.head_view = {{1, 3}, 7};
  s.recent_folders = {"/not/in/sessions"};

  const std::string path = dir.str("s.json");
  save_session_file(path, s);
  const auto loaded = load_session_file(path);
  CHECK(loaded.warnings.empty());
  const SessionState& l = loaded.state;
  CHECK(l.model_folder == s.model_folder);
  CHECK(l.model_hash == s.model_hash);
  CHECK(l.random_config == s.random_config);
  CHECK(l.text == s.text);
  CHECK(l.decoder_text == s.decoder_text);
  CHECK((l.controls.encoder_self == s.controls.encoder_self));
  CHECK((l.controls.decoder_self == s.controls.decoder_self));
  CHECK((l.controls.decoder_cross == s.controls.decoder_cross));
  CHECK(l.selection.stack == Stack::Cross);
  CHECK(l.selection.layer == 1);
  CHECK(l.selection.head == 2);
  CHECK(l.selection.stage == Stage::W);
  CHECK(l.selection.query == 4);
  CHECK(l.selection.key == 5);
  CHECK(l.selection.output_position == 6);
  CHECK(l.selection.mixer_layer == 1);
  CHECK(l.view.colormap == v.colormap);
  CHECK(l.view.log_scale == v.log_scale);
  CHECK(l.view.auto_range == v.auto_range);
  CHECK(l.view.thumbnail_size == v.thumbnail_size);
  CHECK(l.view.top_k == v.top_k);
  CHECK(l.view.export_scale == v.export_scale);
  CHECK(l.view.export_dir == v.export_dir);
  CHECK(l.view.grid_measure == v.grid_measure);
  CHECK(l.view.logit_spectra == v.logit_spectra);
  CHECK(l.view.workspace == v.workspace);
  CHECK(l.analysis.dataset_files == a.dataset_files);
  CHECK(l.analysis.metrics == a.metrics);
  CHECK(l.analysis.limit == a.limit);
  CHECK(l.analysis.report_path == a.report_path);
  CHECK(l.analysis.report_hash == a.report_hash);
  CHECK(nlohmann::json::parse(l.analysis.report_embedded) == nlohmann::json::parse(a.report_embedded));
  CHECK(l.analysis.sort_by == a.sort_by);
  CHECK(l.analysis.sort_descending == a.sort_descending);
  CHECK(l.analysis.filter_role == a.filter_role);
  CHECK(l.analysis.filter_layer == a.filter_layer);
  CHECK(l.analysis.thresholds_edited == a.thresholds_edited);
  CHECK(l.analysis.positional_threshold == a.positional_threshold);
  CHECK(l.analysis.rare_threshold == a.rare_threshold);
  CHECK(l.analysis.syntactic_margin == a.syntactic_margin);
  CHECK(l.analysis.measure_thresholds == a.measure_thresholds);
  CHECK(l.analysis.lrp_enabled == a.lrp_enabled);
  CHECK(l.analysis.lrp_position == a.lrp_position);
  CHECK(l.analysis.lrp_token == a.lrp_token);
  CHECK(l.analysis.lrp_shading == a.lrp_shading);
  CHECK(l.analysis.syntax_file == a.syntax_file);
  CHECK(l.analysis.syntax_index == a.syntax_index);
  CHECK(l.analysis.syntax_parse == a.syntax_parse);
  CHECK(l.analysis.syntax_parse_file == a.syntax_parse_file);
  CHECK((l.generation.settings == g));
  CHECK(l.generation.generated == s.generation.generated);
  CHECK((l.patching.settings == s.patching.settings));
  CHECK(l.patching.take == s.patching.take);
  CHECK(l.patching.ran);
  CHECK(l.patching.measured_text == s.patching.measured_text);
  CHECK((l.patching.measured_settings == s.patching.measured_settings));
  CHECK((l.patching.measured_controls.encoder_self == s.patching.measured_controls.encoder_self));
  CHECK(l.window.imgui_ini == s.window.imgui_ini);
  CHECK(l.window.opened == s.window.opened);
  CHECK(l.window.closed == s.window.closed);
  CHECK(l.window.attention_map.zoom == 2.5f);
  CHECK(l.window.attention_map.col0 == 3.25f);
  CHECK(l.window.attention_map.row0 == 1.5f);
  CHECK(l.window.attention_map.query_from == 2);
  CHECK(l.window.attention_map.query_to == 9);
  CHECK(l.window.head_view.hidden == std::vector<int>{1, 3});
  CHECK(l.window.head_view.centre == 7);
  CHECK(l.recent_folders.empty());  // recent.json's, never a session's
}

TEST_CASE("a field of the wrong type inside a nested part of a session is named by its whole path", "[app][session]") {
  SessionState s;
  auto j = session_to_json(s);
  j["layout"]["attention_map"]["zoom"] = "wide";
  j["layout"]["head_view"]["hidden"] = {1, "two"};
  const auto loaded = session_from_json(j);
  REQUIRE(loaded.warnings.size() == 2);
  CHECK_THAT(loaded.warnings[0], Catch::StartsWith("layout.attention_map.zoom ignored"));
  CHECK_THAT(loaded.warnings[1], Catch::StartsWith("layout.head_view.hidden ignored"));
  CHECK(loaded.state.window.attention_map.zoom == 1.0f);  // the default: the whole map
  CHECK(loaded.state.window.head_view.hidden.empty());
}

TEST_CASE("a colormap HeadLab does not draw is refused, never drawn as another", "[app][session]") {
  // A session naming one opens on the default, with a warning naming the value.
  SessionState s;
  auto j = session_to_json(s);
  j["view"]["colormap"] = "magma";
  const auto loaded = session_from_json(j);
  CHECK(loaded.state.view.colormap == "viridis");
  REQUIRE(loaded.warnings.size() == 1);
  CHECK_THAT(loaded.warnings[0], Catch::Contains("view.colormap 'magma' ignored"));
  // A script's set_view is refused by name and leaves the view as it was.
  auto parsed = command_from_json(nlohmann::json::parse(R"({"action": "set_view", "colormap": "magma"})"));
  headlab::test::TempDir dir("session-colormap");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  Controller c;
  CHECK_THROWS_WITH(c.execute(parsed), Catch::Contains("unknown colormap 'magma' (viridis or gray)"));
  CHECK(c.doc().session.view.colormap == "viridis");
  c.execute(command_from_json(nlohmann::json::parse(R"({"action": "set_view", "colormap": "gray"})")));
  CHECK(c.doc().session.view.colormap == "gray");
}
