// The window under Xvfb never shows a picture that is not true: a report measured on one model is
// not applied to the next model's heads; a uniform head is drawn as faint as it is on the default
// 0–1 scale, with the scale shown; an error goes once the same action succeeds; a refused input
// leaves the views marked as showing the last accepted one.
#include "test_common.h"

#include "gui_test_kit.h"

#include "app/layout/colormap.h"
#include "core/config.h"
#include "core/model/model.h"

#include <cairo.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using headlab::test::run_command;
using headlab::test::TempDir;
using headlab::test::have_xvfb;
using headlab::test::share_near;
using nlohmann::json;

namespace {

std::string gui(const TempDir& dir, const std::string& args, const std::string& screen = "1600x1000") {
  return "XDG_STATE_HOME=" + dir.str("state") + " xvfb-run -a -s '-screen 0 " + screen + "x24' " + HEADLAB_BINARY + " " + args;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}


void write_script(const std::string& path, const json& actions) {
  std::ofstream(path) << json{{"actions", actions}}.dump(2);
}

}  // namespace

TEST_CASE("after another model opens, no view applies the old report to its heads", "[app][gui][report]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI report test skipped");
  TempDir dir("gui-foreign-report");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string gpt2 = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/gpt2";
  const std::string data = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";
  write_script(dir.str("script.json"),
               json::array({
                   {{"action", "open_model"}, {"folder", model}},
                   {{"action", "run_dataset"}, {"files", {data}}, {"metrics", {"confidence", "positional"}}, {"limit", 10}},
                   {{"action", "export"}, {"view", "head_table"}, {"path", dir.str("default.csv")}},
                   {{"action", "set_view"}, {"grid_measure", "confidence"}},
                   {{"action", "open_model"}, {"folder", gpt2}},
                   // The head table has nothing of the open model to export: the report is another model's.
                   {{"action", "export"}, {"view", "head_table"}, {"path", dir.str("gpt2.csv")}},
                   {{"action", "expect_error"}, {"contains", "no head report"}},
                   {{"action", "select_view"}, {"view", "Head table"}},
                   {{"action", "screenshot"}, {"path", dir.str("analyse.png")}},
                   {{"action", "set_view"}, {"workspace", "Explore"}},
                   {{"action", "export"}, {"view", "heads_grid"}, {"path", dir.str("grid.png")}, {"figure_only", true}},
                   {{"action", "save_session"}, {"path", dir.str("gpt2-session.json")}},
                   // Back to the model it was measured on: it applies again.
                   {{"action", "open_model"}, {"folder", model}},
                   {{"action", "export"}, {"view", "head_table"}, {"path", dir.str("default-again.csv")}},
                   {{"action", "quit"}},
               }));
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("script.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(slurp(dir.str("default.csv")).find("encoder,3,") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.str("gpt2.csv")));
  CHECK(slurp(dir.str("default-again.csv")) == slurp(dir.str("default.csv")));
  // The grid of GPT-2 shows its maps (many colours), not a heatmap of the default model's measure.
  CHECK(std::filesystem::exists(dir.str("grid.png")));
  // The session of GPT-2 still names the default model's report, which it keeps apart.
  const auto session = json::parse(slurp(dir.str("gpt2-session.json")));
  CHECK(session["model"]["folder"] == gpt2);
  CHECK(session["analysis"]["report_embedded"]["model"] == model);
}

TEST_CASE("a uniform head is drawn dark on the default 0–1 scale, bright only with auto range", "[app][gui][scale]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI colour-scale test skipped");
  TempDir dir("gui-scale");
  // A model whose queries are all zero: every weight is exactly 1/T, a perfectly uniform head.
  auto config = headlab::core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  auto m = headlab::core::make_random_model(config, 3);
  {
    torch::NoGradGuard no_grad;
    for (auto& item : m->module->named_parameters())
      if (item.key().find("attn.q.") != std::string::npos) item.value().zero_();
  }
  headlab::core::save_model(*m, dir.str("uniform"));
  // 8 words, 8 keys: 0.125 everywhere.
  const json base = json::array({
      {{"action", "open_model"}, {"folder", dir.str("uniform")}},
      {{"action", "set_text"}, {"text", "one two three four five six seven eight"}},
      {{"action", "select_head"}, {"layer", 1}, {"head", 2}},
  });
  json dark = base, bright = base;
  dark.push_back({{"action", "export"}, {"view", "attention_map"}, {"path", dir.str("dark.png")}, {"figure_only", true}});
  dark.push_back({{"action", "save_session"}, {"path", dir.str("dark.json")}});
  dark.push_back({{"action", "quit"}});
  bright.push_back({{"action", "set_view"}, {"auto_range", true}});
  bright.push_back({{"action", "export"}, {"view", "attention_map"}, {"path", dir.str("bright.png")}, {"figure_only", true}});
  bright.push_back({{"action", "save_session"}, {"path", dir.str("bright.json")}});
  bright.push_back({{"action", "quit"}});
  write_script(dir.str("dark-script.json"), dark);
  write_script(dir.str("bright-script.json"), bright);
  std::string out;
  int rc = run_command(gui(dir, "gui --script " + dir.str("dark-script.json")), out);
  {
    INFO(out);
    REQUIRE(rc == 0);
  }
  rc = run_command(gui(dir, "gui --script " + dir.str("bright-script.json")), out);
  {
    INFO(out);
    REQUIRE(rc == 0);
  }
  using headlab::app::Colormap;
  const auto weight_colour = headlab::app::colormap_rgb(Colormap::Viridis, 0.125f);  // 1/8 on 0–1
  const auto top_colour = headlab::app::colormap_rgb(Colormap::Viridis, 1.0f);
  const double dark_cells = share_near(dir.str("dark.png"), weight_colour);
  const double bright_cells = share_near(dir.str("bright.png"), top_colour);
  INFO("map pixels in viridis(0.125) at 0–1: " << dark_cells << "; in viridis(1) with auto range: " << bright_cells);
  CHECK(dark_cells > 0.2);                                             // the map is the colour of 0.125 …
  CHECK(share_near(dir.str("dark.png"), top_colour) < 0.02);           // … not the colour of 1 (only the bar's end)
  CHECK(share_near(dir.str("dark.png"), top_colour) > 0.0);            // the colour bar, 0 to 1, is in the figure
  CHECK(bright_cells > 0.15);                                          // auto range: the same map drawn hot
  CHECK(share_near(dir.str("bright.png"), weight_colour) < 0.02);
  // The choice is remembered.
  CHECK(json::parse(slurp(dir.str("dark.json")))["view"]["auto_range"] == false);
  CHECK(json::parse(slurp(dir.str("bright.json")))["view"]["auto_range"] == true);
}

TEST_CASE("a sharp head drawn smaller than its map keeps its weight's colour", "[app][gui][scale]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI minification test skipped");
  TempDir dir("gui-minify");
  // The default's L4 H6 (in the layer whose heads see 2 tokens either side) puts most of each row's
  // weight on one key near the diagonal. At ~300 tokens the map view fits the map into fewer pixels
  // than it has cells; averaging would draw that one-cell band at a fraction of its weight (a faint
  // line), the max-pooled levels at its own.
  std::string text;
  for (int i = 0; i < 12; ++i) text += "The old man looked at the sea and the sky, and the sea was calm and blue that morning. ";
  write_script(dir.str("script.json"),
               json::array({{{"action", "set_text"}, {"text", text}},
                            {{"action", "select_head"}, {"layer", 4}, {"head", 6}},
                            {{"action", "export"}, {"view", "attention_map"}, {"path", dir.str("map.png")}, {"figure_only", true}},
                            {{"action", "quit"}}}));
  std::string out;
  int rc = run_command(gui(dir, "gui --script " + dir.str("script.json"), "1000x900"), out);
  INFO(out);
  REQUIRE(rc == 0);
  cairo_surface_t* s = cairo_image_surface_create_from_png(dir.str("map.png").c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  INFO("figure " << w << " x " << h);
  // The figure is smaller than the 300 × 300 map: the case that minifies.
  CHECK(h < 600);
  // Pixels in the colours of weights 0.7–1, above the colour bar (the figure's last 40 rows).
  std::vector<headlab::app::Rgb> hot;
  for (float t = 0.7f; t <= 1.0f; t += 0.025f) hot.push_back(headlab::app::colormap_rgb(headlab::app::Colormap::Viridis, t));
  int hot_pixels = 0;
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  for (int y = 0; y < h - 40; ++y)
    for (int x = 0; x < w; ++x) {
      const uint32_t c = reinterpret_cast<const uint32_t*>(data + y * stride)[x];
      const int r = (c >> 16) & 255, g = (c >> 8) & 255, b = c & 255;
      for (const auto& rgb : hot)
        if (std::abs(r - rgb.r) + std::abs(g - rgb.g) + std::abs(b - rgb.b) < 24) {
          ++hot_pixels;
          break;
        }
    }
  cairo_surface_destroy(s);
  // The band spans ~200 rows of pixels, most with a hot pixel or two. Drawn by GL's linear
  // minification instead, not one pixel of it reaches the colour of 0.7.
  INFO(hot_pixels << " pixels in the colours of weights ≥ 0.7");
  CHECK(hot_pixels > 150);
}

TEST_CASE("a script fails when an export's task fails, unless the next action expects it", "[app][gui][errors]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI export-failure test skipped");
  TempDir dir("gui-export-fails");
  std::ofstream(dir.str("file")) << "a file, not a folder";
  const std::string path = dir.str("file") + "/map.svg";  // cannot be created
  const json run = {{"action", "set_text"}, {"text", "The old man looked at the sea."}};
  const json exported = {{"action", "export"}, {"view", "attention_map"}, {"path", path}};
  write_script(dir.str("fails.json"), json::array({run, exported, {{"action", "quit"}}}));
  write_script(dir.str("last.json"), json::array({run, exported}));  // the export is the script's last action
  write_script(dir.str("expected.json"),
               json::array({run, exported, {{"action", "expect_error"}, {"contains", "map.svg"}}, {{"action", "quit"}}}));
  std::string out;
  int rc = run_command(gui(dir, "gui --script " + dir.str("fails.json")), out);
  {
    INFO(out);
    CHECK(rc == 1);
    CHECK_THAT(out, Catch::Contains("(export)") && Catch::Contains("map.svg"));
  }
  rc = run_command(gui(dir, "gui --script " + dir.str("last.json")), out);
  {
    INFO(out);
    CHECK(rc == 1);
  }
  rc = run_command(gui(dir, "gui --script " + dir.str("expected.json")), out);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("expected error"));
}

TEST_CASE("a refused input marks the views and its error clears after a success", "[app][gui][errors]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI refusal test skipped");
  TempDir dir("gui-refused");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  std::string long_text;
  for (int i = 0; i < 700; ++i) long_text += "cat ";
  write_script(dir.str("script.json"),
               json::array({
                   {{"action", "open_model"}, {"folder", model}},
                   {{"action", "set_text"}, {"text", "the cat sat on the [MASK] ."}},
                   {{"action", "screenshot"}, {"path", dir.str("before.png")}},
                   {{"action", "set_text"}, {"text", long_text}},
                   {{"action", "screenshot"}, {"path", dir.str("refused.png")}},
                   {{"action", "export"}, {"view", "attention_map"}, {"path", dir.str("refused-map.png")}},
                   {{"action", "trim_input"}, {"keep", "first"}},
                   {{"action", "screenshot"}, {"path", dir.str("trimmed.png")}},
                   {{"action", "save_session"}, {"path", dir.str("trimmed.json")}},
                   {{"action", "open_model"}, {"folder", dir.str("not-a-folder")}},
                   {{"action", "expect_error"}, {"contains", "not a folder"}},
                   {{"action", "open_model"}, {"folder", dir.str("not-a-folder")}},
                   {{"action", "screenshot"}, {"path", dir.str("error.png")}},
                   {{"action", "open_model"}, {"folder", model}},
                   {{"action", "screenshot"}, {"path", dir.str("cleared.png")}},
                   {{"action", "quit"}},
               }));
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("script.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  // The refusal's mark is drawn in amber (255, 178, 64) in the views showing maps; gone once cut to fit.
  const headlab::app::Rgb amber{255, 178, 64};
  CHECK(share_near(dir.str("before.png"), amber, 40) < 1e-4);
  CHECK(share_near(dir.str("refused.png"), amber, 40) > 5e-4);
  CHECK(share_near(dir.str("refused-map.png"), amber, 40) > 3e-4);
  CHECK(share_near(dir.str("trimmed.png"), amber, 40) < 1e-4);
  const auto session = json::parse(slurp(dir.str("trimmed.json")));
  const std::string text = session["input"]["text"];
  CHECK(text.size() < long_text.size());
  CHECK(text.rfind("cat cat", 0) == 0);
  // The status bar's red error: there while the folder cannot open, gone after a good one.
  const headlab::app::Rgb red{255, 102, 102};
  CHECK(share_near(dir.str("error.png"), red, 40) > 4e-5);
  CHECK(share_near(dir.str("cleared.png"), red, 40) < 1e-5);
}

TEST_CASE("a session written before the colour-scale and report changes still loads", "[app][gui][session]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI old-session test skipped");
  TempDir dir("gui-old-session");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  // As the window wrote it before: "fixed_range" (auto range was the default) and a report embedded
  // without the weights' identity.
  json old = {
      {"format", "headlab-session"},
      {"version", 1},
      {"model", {{"folder", model}, {"weights_hash", ""}, {"random_config", ""}}},
      {"input", {{"text", "the cat sat on the [MASK] ."}, {"decoder_text", ""}}},
      {"controls", {{"encoder", json::array({{{"layer", 2}, {"ablation", "zero"}, {"gates", {1, 1, 1, 0, 1, 1, 1, 1}}}})}}},
      {"selection", {{"stack", "encoder"}, {"layer", 3}, {"head", 2}, {"stage", "U"}, {"query", 1}, {"key", -1},
                     {"output_position", -1}, {"mixer_layer", 2}}},
      {"view", {{"colormap", "viridis"}, {"log_scale", false}, {"fixed_range", false}, {"thumbnail_size", 84}, {"top_k", 10},
                {"export_scale", 1}, {"export_dir", ""}, {"grid_measure", "maps"}, {"workspace", "Explore"},
                {"logit_spectra", false}}},
      {"analysis", {{"dataset_files", json::array()}, {"metrics", json::array()}, {"limit", 0}, {"report_path", ""},
                    {"report_hash", ""}, {"sort_by", ""}, {"sort_descending", true}, {"filter_role", ""}, {"filter_layer", -1},
                    {"thresholds_edited", false}, {"positional_threshold", 0.9}, {"rare_threshold", 0.5},
                    {"syntactic_margin", 0.1}, {"lrp_enabled", false}, {"lrp_position", -1}, {"lrp_token", -1},
                    {"lrp_shading", "lrp"}, {"syntax_file", ""}, {"syntax_index", 0}, {"syntax_parse", ""},
                    {"syntax_parse_file", ""}}},
      {"generation", {{"prompt", ""}, {"max_new", 20}, {"temperature", 0.0}, {"top_k", 0}, {"top_p", 1.0}, {"seed", 0},
                      {"generated", json::array()}}},
      {"layout", {{"imgui_ini", ""}}},
  };
  std::ofstream(dir.str("old.json")) << old.dump(2);
  write_script(dir.str("script.json"), json::array({
                                           {{"action", "save_session"}, {"path", dir.str("resaved.json")}},
                                           {{"action", "screenshot"}, {"path", dir.str("old.png")}},
                                           {{"action", "quit"}},
                                       }));
  std::string out;
  const int rc = run_command(gui(dir, "gui --session " + dir.str("old.json") + " --script " + dir.str("script.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("Session") == std::string::npos);  // no warning: everything it holds was read
  const auto resaved = json::parse(slurp(dir.str("resaved.json")));
  CHECK(resaved["input"]["text"] == "the cat sat on the [MASK] .");
  REQUIRE(resaved["controls"]["encoder"].size() == 1);
  CHECK(resaved["controls"]["encoder"][0]["layer"] == 2);
  CHECK(resaved["controls"]["encoder"][0]["gates"][3] == 0);
  CHECK(resaved["selection"]["layer"] == 3);
  CHECK(resaved["selection"]["head"] == 2);
  CHECK(resaved["view"]["auto_range"] == false);  // the 0–1 scale, as every view now defaults to
  CHECK(!resaved["view"].contains("fixed_range"));
}

TEST_CASE("a reopened session shows the map's zoom and query range, the Head view's heads and the views open as saved", "[app][gui][session]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI session window test skipped");
  TempDir dir("gui-session-window");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string text =
      "the old man walked slowly along the river bank and watched the boats go by while the sun went down over the hills .";
  auto export_both = [&](const std::string& tag) {
    return json::array({{{"action", "wait_frames"}, {"frames", 5}},
                        {{"action", "export"}, {"view", "attention_map"}, {"path", dir.str("map" + tag + ".svg")}},
                        {{"action", "export"}, {"view", "head_view"}, {"path", dir.str("heads" + tag + ".svg")}}});
  };
  json first = json::array({{{"action", "open_model"}, {"folder", model}}, {{"action", "set_text"}, {"text", text}}});
  for (const auto& a : export_both("0")) first.push_back(a);  // the whole map, every head
  for (const json& a : json::array({{{"action", "set_map_view"}, {"zoom", 3}, {"query_from", 2}, {"query_to", 20}},
                                    {{"action", "set_head_view"}, {"hidden", {1, 3}}},
                                    {{"action", "show_view"}, {"view", "Patching"}, {"open", true}},
                                    {{"action", "show_view"}, {"view", "Mixer"}, {"open", false}}}))
    first.push_back(a);
  for (const auto& a : export_both("1")) first.push_back(a);
  first.push_back({{"action", "save_session"}, {"path", dir.str("s1.json")}});
  first.push_back({{"action", "quit"}});
  write_script(dir.str("first.json"), first);
  json second = export_both("2");
  second.push_back({{"action", "save_session"}, {"path", dir.str("s2.json")}});
  second.push_back({{"action", "quit"}});
  write_script(dir.str("second.json"), second);

  std::string out;
  int rc = run_command(gui(dir, "gui --script " + dir.str("first.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  rc = run_command(gui(dir, "gui --session " + dir.str("s1.json") + " --script " + dir.str("second.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  // The zoom and the hidden heads change the figures; the reopened session draws them as saved
  // (the same SVG but for the numbers cairo gives its surfaces and glyphs in each process).
  auto figure = [&](const std::string& name) {
    return std::regex_replace(slurp(dir.str(name)), std::regex("(surface|glyph|clip|image|pattern|mask)[0-9-]+"), "$1");
  };
  CHECK(figure("map0.svg") != figure("map1.svg"));
  CHECK(figure("heads0.svg") != figure("heads1.svg"));
  CHECK(figure("map1.svg") == figure("map2.svg"));
  CHECK(figure("heads1.svg") == figure("heads2.svg"));
  const auto s1 = json::parse(slurp(dir.str("s1.json")));
  const auto s2 = json::parse(slurp(dir.str("s2.json")));
  CHECK(s1["layout"]["opened"] == json::array({"Patching"}));
  CHECK(s1["layout"]["closed"] == json::array({"Mixer"}));
  CHECK(s1["layout"]["attention_map"]["zoom"] == 3.0);
  CHECK(s1["layout"]["attention_map"]["query_from"] == 2);
  CHECK(s1["layout"]["attention_map"]["query_to"] == 20);
  CHECK(s1["layout"]["head_view"]["hidden"] == json::array({1, 3}));
  for (const char* key : {"opened", "closed", "attention_map", "head_view"}) {
    INFO(key);
    CHECK(s2["layout"][key] == s1["layout"][key]);
  }
}
