// The workbench's display-free logic: mixing presets and canonical controls, the session file
// (round trip, versions, bad fields), session → run mapping, scripts, colormaps, figure export.
#include "test_common.h"

#include "gui_test_kit.h"

#include "app/export/figures.h"
#include "app/layout/colormap.h"
#include "app/document/controls_edit.h"
#include "app/document/run_mapping.h"
#include "app/document/script.h"
#include "app/document/session.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <limits>
#include <unistd.h>

using namespace headlab::app;
using headlab::test::TempDir;

TEST_CASE("mixing presets follow L ← L·M over the head axis", "[app][controls]") {
  CHECK(is_identity(mix_preset(MixPreset::Identity, 3), 3));
  auto swap = mix_preset(MixPreset::Swap, 3, 0, 2);
  CHECK(swap == std::vector<float>{0, 0, 1, 0, 1, 0, 1, 0, 0});
  auto blend = mix_preset(MixPreset::Blend, 2, 0, 1, 0.25f);
  // Column 0 (what head 0 receives): 0.75 of head 0 and 0.25 of head 1.
  CHECK(blend == std::vector<float>{0.75f, 0.25f, 0.25f, 0.75f});
  for (float v : mix_preset(MixPreset::Uniform, 4)) CHECK(v == Approx(0.25f));
  CHECK(is_identity(mix_preset(MixPreset::Swap, 3, 1, 1), 3));  // a == b: nothing to swap
}

TEST_CASE("controls stay canonical so untouched layers compare default", "[app][controls]") {
  headlab::core::ModelControls c;
  set_gate(c, headlab::core::Stack::Encoder, 2, 1, 0.0f, 4);
  REQUIRE(c.encoder_self.size() == 3);
  CHECK(c.encoder_self[2].gates == std::vector<float>{1, 0, 1, 1});
  CHECK(c.encoder_self[0].is_default());
  CHECK(first_changed_layer(c, {}, headlab::core::Stack::Encoder, 4) == 2);
  set_gate(c, headlab::core::Stack::Encoder, 2, 1, 1.0f, 4);
  CHECK(c.is_default());
  CHECK(c.encoder_self.empty());
  set_mix(c, headlab::core::Stack::Encoder, 1, "pre", mix_preset(MixPreset::Swap, 4, 0, 1), 4);
  CHECK(!c.is_default());
  set_mix(c, headlab::core::Stack::Encoder, 1, "pre", mix_preset(MixPreset::Identity, 4), 4);
  CHECK(c.is_default());
  set_gate(c, headlab::core::Stack::Decoder, 0, 0, 2.0f, 2);  // clamped to [0, 1]
  CHECK(c.is_default());
  set_gate(c, headlab::core::Stack::Cross, 1, 1, 0.3f, 2);
  reset_layer(c, headlab::core::Stack::Cross, 1);
  CHECK(c.is_default());
}

namespace {

SessionState sample_session() {
  SessionState s;
  s.model_folder = "/models/tiny";
  s.model_hash = "0123456789abcdef";
  s.text = "Ünïcode [MASK] text — with “quotes”";
  set_gate(s.controls, headlab::core::Stack::Encoder, 1, 2, 0.25f, 4);
  set_mix(s.controls, headlab::core::Stack::Encoder, 0, "post", mix_preset(MixPreset::Blend, 4, 1, 3, 0.3f), 4);
  s.controls.at(headlab::core::Stack::Encoder, 3).ablation = headlab::core::Ablation::Mean;
  s.selection.layer = 1;
  s.selection.head = 2;
  s.selection.stage = Stage::L;
  s.selection.query = 4;
  s.view.log_scale = true;
  s.view.thumbnail_size = 61.3f;
  s.window.imgui_ini = "[Window][Model]\nPos=0,21\nSize=384,376\n";
  s.view.grid_measure = "confidence";
  s.analysis.dataset_files = {"/data/dev.conllu"};
  s.analysis.metrics = {"confidence", "syntactic"};
  s.analysis.limit = 50;
  s.analysis.sort_by = "positional_share";
  s.analysis.sort_descending = false;
  s.analysis.filter_role = "syntactic";
  s.analysis.filter_layer = 2;
  s.analysis.thresholds_edited = true;
  s.analysis.positional_threshold = 0.8;
  s.analysis.lrp_enabled = true;
  s.analysis.lrp_position = 3;
  s.analysis.lrp_token = 17;
  s.analysis.syntax_file = "ud/dev.conllu";
  s.analysis.syntax_index = 4;
  s.analysis.syntax_parse = "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n";
  s.analysis.report_embedded = R"({"format":"headlab-head-report","heads":[]})";
  return s;
}

}  // namespace

TEST_CASE("a session round-trips to identical JSON", "[app][session]") {
  TempDir dir("session");
  const SessionState s = sample_session();
  const std::string path = dir.str("s.json");
  save_session_file(path, s);
  CHECK(headlab::test::temp_files_of(path).empty());
  auto loaded = load_session_file(path);
  CHECK(loaded.warnings.empty());
  CHECK(loaded.state.controls.get(headlab::core::Stack::Encoder, 1).gates == std::vector<float>{1, 1, 0.25f, 1});
  CHECK(loaded.state.controls.get(headlab::core::Stack::Encoder, 3).ablation == headlab::core::Ablation::Mean);
  CHECK(loaded.state.selection.stage == Stage::L);
  CHECK(loaded.state.text == s.text);
  CHECK(loaded.state.analysis.sort_by == "positional_share");
  CHECK(!loaded.state.analysis.sort_descending);
  CHECK(loaded.state.analysis.positional_threshold == 0.8);
  CHECK(loaded.state.analysis.lrp_token == 17);
  CHECK(loaded.state.analysis.syntax_file == "ud/dev.conllu");
  CHECK(loaded.state.analysis.syntax_index == 4);
  CHECK(loaded.state.analysis.syntax_parse == "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n");
  CHECK(loaded.state.analysis.syntax_parse_file.empty());
  CHECK(loaded.state.analysis.dataset_files == s.analysis.dataset_files);
  CHECK(loaded.state.view.grid_measure == "confidence");
  CHECK(nlohmann::json::parse(loaded.state.analysis.report_embedded) == nlohmann::json::parse(s.analysis.report_embedded));
  CHECK(session_text(loaded.state) == session_text(s));
  save_session_file(dir.str("again.json"), loaded.state);
  std::ifstream a(path), b(dir.str("again.json"));
  CHECK(std::string(std::istreambuf_iterator<char>(a), {}) == std::string(std::istreambuf_iterator<char>(b), {}));
}

TEST_CASE("a session written before the analyses existed still loads, with their defaults", "[app][session]") {
  auto j = session_to_json(sample_session());
  j.erase("analysis");
  j["view"].erase("grid_measure");
  auto loaded = session_from_json(j);
  CHECK(loaded.warnings.empty());
  CHECK(loaded.state.analysis.sort_by.empty());
  CHECK(!loaded.state.analysis.lrp_enabled);
  CHECK(loaded.state.analysis.report_embedded.empty());
  CHECK(loaded.state.analysis.syntax_file.empty());
  CHECK(loaded.state.analysis.syntax_index == 0);
  CHECK(loaded.state.analysis.syntax_parse.empty());
  CHECK(loaded.state.view.grid_measure == "maps");
  CHECK(loaded.state.selection.layer == 1);
}

TEST_CASE("a session from a newer version or with bad fields keeps what it can", "[app][session]") {
  auto j = session_to_json(sample_session());
  j["version"] = kSessionVersion + 1;
  j["selection"]["layer"] = "three";  // wrong type: warned, default kept
  j["future_feature"] = {{"x", 1}};
  auto loaded = session_from_json(j);
  REQUIRE(loaded.warnings.size() == 2);
  CHECK(loaded.warnings[0].find("newer HeadLab") != std::string::npos);
  CHECK(loaded.warnings[1].find("selection.layer") != std::string::npos);
  CHECK(loaded.state.selection.layer == 0);
  CHECK(loaded.state.text == sample_session().text);
  CHECK_THROWS_WITH(session_from_json(nlohmann::json{{"hello", 1}}), Catch::Contains("not a HeadLab session"));
  TempDir dir("session-bad");
  std::ofstream(dir.str("x.json")) << "{ not json";
  CHECK_THROWS_WITH(load_session_file(dir.str("x.json")), Catch::Contains(dir.str("x.json")));
}

// Found by fuzzing (fuzz_json_documents): numbers too large for an int were cast to int (undefined
// behaviour). They are now a warning naming the field, and the default is kept.
TEST_CASE("session numbers beyond an int are warned about, not cast", "[app][session]") {
  nlohmann::json j = session_to_json(sample_session());
  j["version"] = 2.2e22;
  j["selection"]["layer"] = 1e30;
  j["selection"]["head"] = int64_t(1) << 40;
  const auto loaded = session_from_json(j);
  REQUIRE(loaded.warnings.size() == 3);
  CHECK_THAT(loaded.warnings[0], Catch::Contains("version"));
  CHECK_THAT(loaded.warnings[1], Catch::Contains("selection.layer"));
  CHECK_THAT(loaded.warnings[2], Catch::Contains("selection.head") && Catch::Contains("out of range"));
  CHECK(loaded.state.selection.layer == 0);
  CHECK(loaded.state.selection.head == 0);
}

TEST_CASE("the session decides what runs", "[app][session]") {
  SessionState s = sample_session();
  auto in = make_run_input(s);
  CHECK(in.all_stages);  // stage L needs the logits captured
  CHECK((in.controls.get(headlab::core::Stack::Encoder, 1) == s.controls.get(headlab::core::Stack::Encoder, 1)));
  s.selection.stage = Stage::U;
  CHECK(!make_run_input(s).all_stages);
  // The Output view's position is the only one the LM head computes; -1 leaves it to the engine.
  s.selection.output_position = -1;
  CHECK(make_run_input(s).output_positions.empty());
  s.selection.output_position = 3;
  CHECK(make_run_input(s).output_positions == std::vector<int>{3});

  ModelSummary m;
  AttentionSummary a;
  a.stack = headlab::core::Stack::Decoder;
  a.layers = 2;
  a.logit_heads = a.softmax_heads = a.output_heads = 4;
  m.attentions.push_back(a);
  Selection sel;
  sel.stack = headlab::core::Stack::Encoder;
  sel.layer = 7;
  sel.head = 9;
  clamp_selection(sel, m, nullptr);
  CHECK(sel.stack == headlab::core::Stack::Decoder);
  CHECK(sel.layer == 1);
  CHECK(sel.head == 3);
  m.name = "my model";
  CHECK(figure_basename(m.name, "attention-map", sel) == "my-model_attention-map_decoder_L1_H3_U");
}

TEST_CASE("scripts are checked before they run", "[app][script]") {
  auto ok = parse_script(nlohmann::json::parse(R"([{"action":"set_text","text":"a"},{"action":"quit"}])"), "s.json");
  CHECK(ok.size() == 2);
  CHECK(command_name(ok[0].command) == "set_text");
  CHECK_THROWS_WITH(parse_script(nlohmann::json::parse(R"({"actions":[{"action":"quit"},{"action":"fly"}]})"), "s.json"),
                    Catch::Contains("s.json: action 1: unknown action 'fly'"));
  CHECK_THROWS_WITH(parse_script(nlohmann::json::parse(R"([{"action":"set_gate","layer":0,"head":1}])"), "s.json"),
                    Catch::Contains("set_gate: \"value\" is missing"));
}

TEST_CASE("viridis and the map scaling", "[app][colormap]") {
  const Rgb lo = colormap_rgb(Colormap::Viridis, 0), hi = colormap_rgb(Colormap::Viridis, 1);
  CHECK(std::abs(lo.r - 68) <= 4);  // #440154
  CHECK(std::abs(lo.b - 84) <= 4);
  CHECK(std::abs(hi.r - 253) <= 4);  // #fde725
  CHECK(std::abs(hi.g - 231) <= 4);
  const float weights[] = {0.0f, 0.001f, 0.5f};
  auto lin = map_range(weights, 3, false, false, false);
  CHECK(lin.normalize(0.5f) == Approx(1.0f));
  CHECK(lin.normalize(0.25f) == Approx(0.5f));
  auto log = map_range(weights, 3, false, true, false);
  CHECK(log.normalize(0.5f) == Approx(1.0f));
  CHECK(log.normalize(0.005f) == Approx(0.5f));
  CHECK(log.normalize(0.0f) == 0.0f);
  const float logits[] = {-2.0f, 2.0f, -std::numeric_limits<float>::infinity()};
  auto lr = map_range(logits, 3, true, true, false);
  CHECK(!lr.log);
  CHECK(lr.normalize(0.0f) == Approx(0.5f));
  CHECK(lr.normalize(logits[2]) == 0.0f);
}

TEST_CASE("a mixed head's negative or above-1 weights keep their place on the scale", "[app][colormap]") {
  // Talking heads' post-softmax mix (and a Mixer matrix) gives weights below 0 and above 1: drawn on
  // 0–1 they would read as no attention, or as exactly 1.
  const float mixed[] = {-0.25f, 0.0f, 0.5f, 1.25f};
  const auto fixed = map_range(mixed, 4, false, false, true);
  CHECK(fixed.lo == -0.25f);
  CHECK(fixed.hi == 1.25f);
  CHECK(fixed.normalize(-0.25f) == 0.0f);
  CHECK(fixed.normalize(0.0f) == Approx(0.25 / 1.5));  // zero is no longer the bottom of the bar
  CHECK(fixed.normalize(1.0f) < 1.0f);
  const auto own = map_range(mixed, 3, false, false, false);  // −0.25 … 0.5
  CHECK(own.lo == -0.25f);
  CHECK(own.hi == 0.5f);
  const auto log = map_range(mixed, 4, false, true, true);
  CHECK(!log.log);  // no log scale for a negative weight
  const float negative[] = {-0.5f, -0.1f};
  const auto below = map_range(negative, 2, false, false, false);
  CHECK(below.lo == -0.5f);
  CHECK(below.hi == 0.0f);
  // Softmax weights keep the scale they had: 0 to 1.
  const float softmax[] = {0.0f, 0.2f, 0.8f};
  const auto plain = map_range(softmax, 3, false, false, true);
  CHECK(plain.lo == 0.0f);
  CHECK(plain.hi == 1.0f);
}

TEST_CASE("a map whose head's output comes from the counterfactual or a mix says so in the figure", "[app][export]") {
  TempDir dir("figure-cf");
  const int T = 4;
  std::vector<float> map(T * T, 0.25f);
  FigureMap fm;
  fm.data = map.data();
  fm.range = map_range(map.data(), map.size(), false, false, false);
  FigureTokens tokens{{"a", "b", "c", "d"}, {"a", "b", "c", "d"}};
  write_attention_map(dir.str("own.png"), "head", fm, T, T, tokens, Colormap::Gray, "subtitle");
  fm.taken = 1.0f;
  write_attention_map(dir.str("taken.png"), "head", fm, T, T, tokens, Colormap::Gray, "subtitle");
  const headlab::app::Rgb amber{179, 107, 0};
  CHECK(headlab::test::share_near(dir.str("own.png"), amber, 60) == 0.0);
  CHECK(headlab::test::share_near(dir.str("taken.png"), amber, 60) > 1e-4);
  // A head a Mixer matrix combines with others says so in blue.
  fm.taken = 0.0f;
  fm.mixed = true;
  write_attention_map(dir.str("mixed.png"), "head", fm, T, T, tokens, Colormap::Gray, "subtitle");
  const headlab::app::Rgb blue{26, 115, 179};
  CHECK(headlab::test::share_near(dir.str("own.png"), blue, 60) == 0.0);
  CHECK(headlab::test::share_near(dir.str("mixed.png"), blue, 60) > 1e-4);
  CHECK(headlab::test::share_near(dir.str("mixed.png"), amber, 60) == 0.0);
}

TEST_CASE("figures export as SVG, PDF and PNG with labels", "[app][export]") {
  TempDir dir("figures");
  const int T = 5;
  std::vector<float> map(T * T);
  for (int i = 0; i < T * T; ++i) map[i] = static_cast<float>(i % 7) / 7.0f;
  FigureMap fm;
  fm.data = map.data();
  fm.range = map_range(map.data(), map.size(), false, false, false);
  FigureTokens tokens{{"the", "cat", "sat", "[MASK]", "."}, {"the", "cat", "sat", "[MASK]", "."}};
  for (const char* ext : {"svg", "pdf", "png"}) {
    const std::string path = dir.str(std::string("map.") + ext);
    write_attention_map(path, "test map", fm, T, T, tokens, Colormap::Viridis);
    CHECK(std::filesystem::file_size(path) > 500);
  }
  std::ifstream svg(dir.str("map.svg"));
  const std::string text(std::istreambuf_iterator<char>(svg), {});
  CHECK(text.find("<svg") != std::string::npos);
  // A few cells are rectangles (sharp in every viewer); a large map is one image whose cells are
  // several pixels square, so a viewer that smooths images does not blur them together.
  CHECK(text.find("<image") == std::string::npos);
  {
    const int big = 100;
    std::vector<float> large(big * big);
    for (int i = 0; i < big * big; ++i) large[i] = static_cast<float>(i % 13) / 13.0f;
    FigureMap lm;
    lm.data = large.data();
    lm.range = map_range(large.data(), large.size(), false, false, true);
    FigureTokens many;
    for (int i = 0; i < big; ++i) many.queries.push_back("t" + std::to_string(i)), many.keys.push_back("t" + std::to_string(i));
    write_attention_map(dir.str("large.svg"), "large map", lm, big, big, many, Colormap::Viridis);
    std::ifstream large_svg(dir.str("large.svg"));
    const std::string large_text(std::istreambuf_iterator<char>(large_svg), {});
    const size_t image = large_text.find("<image");
    REQUIRE(image != std::string::npos);
    const size_t width = large_text.find("width=\"", image);
    REQUIRE(width != std::string::npos);
    CHECK(std::stoi(large_text.substr(width + 7)) >= 2 * big);  // ≥ 2 pixels per cell
  }
  write_heads_grid(dir.str("grid.pdf"), "grid", {{fm, fm}, {fm, fm}}, T, T, Colormap::Gray);
  write_head_view(dir.str("heads.svg"), "heads", {map.data(), map.data()}, T, T, tokens);
  CHECK(std::filesystem::file_size(dir.str("grid.pdf")) > 500);
  CHECK(std::filesystem::file_size(dir.str("heads.svg")) > 500);
  // A long title widens the page instead of running off its right edge.
  const std::string long_title(100, 'W');
  write_attention_map(dir.str("long.svg"), long_title, fm, T, T, tokens, Colormap::Viridis);
  std::ifstream long_svg(dir.str("long.svg"));
  const std::string long_text(std::istreambuf_iterator<char>(long_svg), {});
  const size_t at = long_text.find("width=\"");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(long_text.substr(at + 7)) > 100 * 8.0);  // 100 W's at 12 pt are wider than 800 pt
  CHECK(std::stod(text.substr(text.find("width=\"") + 7)) < 400);  // the short title keeps the page small
  CHECK_THROWS_WITH(write_attention_map(dir.str("map.bmp"), "x", fm, T, T, tokens, Colormap::Viridis),
                    Catch::Contains("use .svg, .pdf or .png"));
}

namespace {

// A model of one encoder stack: 2 layers of 4 heads.
ModelSummary two_layer_encoder() {
  ModelSummary m;
  AttentionSummary a;
  a.stack = headlab::core::Stack::Encoder;
  a.layers = 2;
  a.logit_heads = a.softmax_heads = a.output_heads = 4;
  m.attentions.push_back(a);
  return m;
}

}  // namespace

TEST_CASE("controls from another model are fitted, not failed", "[app][session]") {
  const ModelSummary m = two_layer_encoder();
  headlab::core::ModelControls c;
  set_gate(c, headlab::core::Stack::Encoder, 0, 5, 0.0f, 8);  // 8 gates for a 4-head model
  set_gate(c, headlab::core::Stack::Encoder, 1, 1, 0.5f, 4);  // fits
  set_gate(c, headlab::core::Stack::Encoder, 3, 0, 0.0f, 4);  // no layer 3
  set_gate(c, headlab::core::Stack::Decoder, 0, 0, 0.0f, 4);  // no decoder
  const std::string dropped = fit_controls(c, m);
  CHECK(dropped.find("encoder layer 0 gates (8 for 4 heads)") != std::string::npos);
  CHECK(dropped.find("encoder layer 3") != std::string::npos);
  CHECK(dropped.find("decoder layer 0") != std::string::npos);
  CHECK(c.get(headlab::core::Stack::Encoder, 1).gate(1) == 0.5f);
  CHECK(c.encoder_self.size() == 2);
  CHECK(c.decoder_self.empty());
  CHECK(fit_controls(c, m).empty());
}

TEST_CASE("heads taken from the counterfactual that another model lacks are dropped and named", "[app][session]") {
  ModelSummary m = two_layer_encoder();
  std::vector<std::vector<float>> take = {
      {0.5f, 0, 0, 1, 0, 0, 0.25f, 0},  // 8 heads for a 4-head layer: heads 4–7 hold a weight
      {0, 2.0f, 1},                     // a weight past 1
      {1}};                             // no layer 2
  const std::string dropped = fit_take(take, m);
  CHECK_THAT(dropped, Catch::Contains("layer 0 heads 4–7 (the layer has 4)"));
  CHECK_THAT(dropped, Catch::Contains("layer 1 head 1 (weight 2, not in [0, 1])"));
  CHECK_THAT(dropped, Catch::Contains("layer 2 (not in this model)"));
  CHECK(take == std::vector<std::vector<float>>{{0.5f, 0, 0, 1}, {0, 0, 1}});
  CHECK(fit_take(take, m).empty());
  // Extra zeros are no loss: trimmed without a word.
  std::vector<std::vector<float>> zeros = {{0, 1, 0, 0, 0, 0}, {0}};
  CHECK(fit_take(zeros, m).empty());
  CHECK(zeros == std::vector<std::vector<float>>{{0, 1, 0, 0}});
  // The decoder's heads on a model with both stacks (the Mixer's main stack).
  AttentionSummary decoder = m.attentions[0];
  decoder.stack = headlab::core::Stack::Decoder;
  decoder.output_heads = 2;
  m.attentions.push_back(decoder);
  REQUIRE(take_attention(m) != nullptr);
  CHECK(take_attention(m)->stack == headlab::core::Stack::Decoder);
  CHECK_THAT(fit_take(take, m), Catch::Contains("layer 0 heads 2–3"));
}

TEST_CASE("autosave and recent folders live in the XDG state folder", "[app][session]") {
  TempDir dir("xdg");
  const char* old = std::getenv("XDG_STATE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_STATE_HOME", dir.str().c_str(), 1);
  CHECK(state_dir() == dir.str("headlab"));
  CHECK(autosave_path() == dir.str("headlab/autosave.json"));
  std::vector<std::string> recent;
  for (int i = 0; i < 12; ++i) remember_folder(recent, "/m/" + std::to_string(i));
  remember_folder(recent, "/m/5");
  CHECK(recent.size() == 10);
  CHECK(recent.front() == "/m/5");
  save_recent_folders(recent);
  CHECK(load_recent_folders() == recent);
  // A damaged list is an error naming the file, not silently an empty list.
  headlab::core::write_file_atomic(recent_list_path(), "[\"/m/1\", ");
  CHECK_THROWS_WITH(load_recent_folders(), Catch::Contains(recent_list_path()));
  headlab::core::write_file_atomic(recent_list_path(), "{\"not\": \"a list\"}");
  CHECK_THROWS_WITH(load_recent_folders(), Catch::Contains("recent.json"));
  // An autosave is an ordinary session file: recovery is opening it.
  save_session_file(autosave_path(), sample_session());
  CHECK(session_text(load_session_file(autosave_path()).state) == session_text(sample_session()));
  if (old)
    ::setenv("XDG_STATE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_STATE_HOME");
}
