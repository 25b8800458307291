// The Heads grid, the Attention map and the Head view under Xvfb, on screen and in their SVG/PDF
// figures, draw the run on show as it is: gates that run did not have are not drawn as applied; a
// figure shows what its view shows (the heads on show, the query range and zoom) and marks what the
// screen marks (a gated head at every stage the screen dims it, the keys a layer forbids hatched).
#include "test_common.h"

#include "gui_test_kit.h"

#include "app/layout/colormap.h"

#include <cairo.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using headlab::test::run_command;
using headlab::test::TempDir;
using headlab::test::have_xvfb;
using headlab::test::share_near;
using nlohmann::json;

namespace {

bool have_rsvg() {
  std::string out;
  return run_command("command -v rsvg-convert", out) == 0;
}

std::string gui(const TempDir& dir, const std::string& args) {
  return "XDG_STATE_HOME=" + dir.str("state") + " xvfb-run -a -s '-screen 0 1600x1000x24' " + HEADLAB_BINARY + " " + args;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_script(const std::string& path, const json& actions) {
  std::ofstream(path) << json{{"actions", actions}}.dump(2);
}

void run_script(const TempDir& dir, const json& actions) {
  write_script(dir.str("script.json"), actions);
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("script.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
}

// An SVG's text alternative (<desc>), where cairo's figures say what they draw.
std::string desc(const std::string& svg_path) {
  const std::string svg = slurp(svg_path);
  const auto open = svg.find("<desc>"), close = svg.find("</desc>");
  if (open == std::string::npos || close == std::string::npos) return "";
  return svg.substr(open + 6, close - open - 6);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}


const std::string kModel = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
// The stamp of a gated head on screen ("off", its cross).
const headlab::app::Rgb kGateRed{255, 90, 90};

json export_action(const std::string& view, const std::string& path, bool figure_only = false) {
  json e = {{"action", "export"}, {"view", view}, {"path", path}};
  if (figure_only) e["figure_only"] = true;
  return e;
}

}  // namespace

TEST_CASE("gates set on a refused input are not drawn as applied, on screen or in the figures", "[app][gui][gates]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI gate test skipped");
  TempDir dir("gui-refused-gates");
  std::string long_text;
  for (int i = 0; i < 700; ++i) long_text += "cat ";
  json actions = json::array({
      {{"action", "open_model"}, {"folder", kModel}},
      {{"action", "set_text"}, {"text", "the cat sat on the [MASK] ."}},
      {{"action", "select_head"}, {"layer", 4}, {"head", 4}},
      {{"action", "set_text"}, {"text", long_text}},  // refused: longer than the model's 512 positions
      {{"action", "set_gate"}, {"layer", 4}, {"head", 4}, {"value", 0}},
      {{"action", "set_gate"}, {"layer", 4}, {"head", 6}, {"value", 0}},
  });
  auto exports = [&](const std::string& tag) {
    actions.push_back(export_action("heads_grid", dir.str(tag + "-grid.png"), true));
    actions.push_back(export_action("attention_map", dir.str(tag + "-map.png"), true));
    actions.push_back(export_action("heads_grid", dir.str(tag + "-grid.svg")));
    actions.push_back(export_action("attention_map", dir.str(tag + "-map.svg")));
  };
  exports("refused");
  // Cut to fit, the input runs with the gates: now they are drawn.
  actions.push_back({{"action", "trim_input"}, {"keep", "first"}});
  exports("run");
  actions.push_back({{"action", "quit"}});
  run_script(dir, actions);

  const double refused_grid = share_near(dir.str("refused-grid.png"), kGateRed, 40);
  const double run_grid = share_near(dir.str("run-grid.png"), kGateRed, 40);
  const double refused_map = share_near(dir.str("refused-map.png"), kGateRed, 40);
  const double run_map = share_near(dir.str("run-map.png"), kGateRed, 40);
  INFO("gate-red pixels, refused: grid " << refused_grid << ", map " << refused_map << "; run: grid " << run_grid
                                         << ", map " << run_map);
  // Not a pixel of the stamp ("off" and its cross) where the maps on show ran without the gates …
  CHECK(refused_grid < 1e-6);
  CHECK(refused_map < 1e-6);
  // … and the stamps once they ran with them (two in the grid, one on the map).
  CHECK(run_grid > 2e-5);
  CHECK(run_map > 2e-6);
  CHECK(desc(dir.str("refused-grid.svg")).find("gated heads") == std::string::npos);
  CHECK(desc(dir.str("refused-map.svg")).find("gate off") == std::string::npos);
  CHECK(desc(dir.str("run-grid.svg")).find("gated heads, dimmed: L4 H4 off, L4 H6 off") != std::string::npos);
  CHECK(desc(dir.str("run-map.svg")).find("gate off") != std::string::npos);
}

TEST_CASE("a head whose output is taken from the counterfactual is marked in the figures", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI figure test skipped");
  TempDir dir("gui-figure-taken");
  run_script(dir, json::array({
                      {{"action", "open_model"}, {"folder", kModel}},
                      {{"action", "set_text"}, {"text", "the ship sailed across the [MASK] ."}},
                      {{"action", "set_patching"}, {"counterfactual", "the train rushed across the [MASK] ."}},
                      {{"action", "take_from_counterfactual"}, {"layer", 2}, {"head", 3}, {"weight", 1}},
                      {{"action", "select_head"}, {"layer", 2}, {"head", 3}},
                      export_action("heads_grid", dir.str("grid.svg")),
                      export_action("attention_map", dir.str("map.svg")),
                      {{"action", "quit"}},
                  }));
  const std::string grid = desc(dir.str("grid.svg")), map = desc(dir.str("map.svg"));
  INFO(grid << "\n" << map);
  CHECK(grid.find("heads whose output is taken from the counterfactual, marked cf: L2 H3 (1)") != std::string::npos);
  CHECK(map.find("1 of the head's output taken from the counterfactual") != std::string::npos);
}

TEST_CASE("the Head view's figure leaves out the heads hidden in the view", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI head-view export test skipped");
  TempDir dir("gui-head-view-hidden");
  run_script(dir, json::array({
                      {{"action", "open_model"}, {"folder", kModel}},
                      {{"action", "set_text"}, {"text", "the cat sat on the [MASK] because it was tired ."}},
                      {{"action", "select_head"}, {"layer", 4}, {"head", 6}},
                      export_action("head_view", dir.str("all.svg")),
                      {{"action", "set_head_view"}, {"hidden", {0, 1, 2, 3, 4, 5}}},
                      export_action("head_view", dir.str("two.svg")),
                      export_action("head_view", dir.str("two.png"), true),
                      {{"action", "set_head_view"}, {"hidden", {0, 1, 2, 3, 4, 5, 6, 7}}},
                      export_action("head_view", dir.str("none.svg")),
                      {{"action", "expect_error"}, {"contains", "every head is hidden"}},
                      {{"action", "quit"}},
                  }));
  const std::string all = desc(dir.str("all.svg")), two = desc(dir.str("two.svg"));
  INFO(all << "\n" << two);
  CHECK(all.rfind("8 heads,", 0) == 0);
  CHECK(two.rfind("heads 6, 7 of 8 (heads 0, 1, 2, 3, 4, 5 hidden)", 0) == 0);
  // Fewer lines drawn: two heads' of eight.
  const size_t all_paths = count(slurp(dir.str("all.svg")), "<path"), two_paths = count(slurp(dir.str("two.svg")), "<path");
  INFO(all_paths << " paths with every head, " << two_paths << " with two");
  CHECK(two_paths < all_paths / 2);
  CHECK(!std::filesystem::exists(dir.str("none.svg")));
}

TEST_CASE("the grid and map figures mark gated heads and forbidden keys as the screen does", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI figure test skipped");
  TempDir dir("gui-figure-marks");
  // Layer 4 of the default model attends within 2 tokens either side: the other keys are forbidden.
  run_script(dir, json::array({
                      {{"action", "open_model"}, {"folder", kModel}},
                      {{"action", "set_text"}, {"text", "the old man looked at the sea and the sky and the [MASK] ."}},
                      {{"action", "select_head"}, {"layer", 4}, {"head", 1}, {"stage", "W"}},
                      {{"action", "set_gate"}, {"layer", 4}, {"head", 4}, {"value", 0}},
                      {{"action", "set_mix"}, {"layer", 2}, {"which", "post"}, {"preset", "swap"}, {"a", 0}, {"b", 1}},
                      export_action("heads_grid", dir.str("grid-W.png"), true),
                      export_action("heads_grid", dir.str("grid-W.svg")),
                      export_action("heads_grid", dir.str("grid-W.pdf")),
                      export_action("attention_map", dir.str("map-W.svg")),
                      {{"action", "quit"}},
                  }));
  // Stage W of an attention without talking heads: the screen dims the gated head, and so does the figure.
  CHECK(share_near(dir.str("grid-W.png"), kGateRed, 40) > 1e-5);
  const std::string grid = desc(dir.str("grid-W.svg")), map = desc(dir.str("map-W.svg"));
  INFO(grid << "\n" << map);
  CHECK(grid.find("gated heads, dimmed: L4 H4 off") != std::string::npos);
  CHECK(grid.find("heads a mixing matrix changes, marked mix: L2 H0, L2 H1") != std::string::npos);
  CHECK(grid.find("hatched grey: keys the layer's attention pattern forbids") != std::string::npos);
  CHECK(map.find("hatched grey: keys the layer's attention pattern forbids") != std::string::npos);
  CHECK(std::filesystem::file_size(dir.str("grid-W.pdf")) > 1000);
  // Drawn, the forbidden keys are the screen's dark grey hatch, not the colour of weight 0.
  SKIP_UNLESS(have_rsvg(), "rsvg-convert not installed: the figure's pixels are not checked");
  std::string out;
  REQUIRE(run_command("rsvg-convert -o " + dir.str("map-W.png") + " " + dir.str("map-W.svg"), out) == 0);
  const headlab::app::Rgb dark{51, 51, 56}, stripe{71, 71, 76};
  const auto zero = headlab::app::colormap_rgb(headlab::app::Colormap::Viridis, 0.0f);
  const double hatched = share_near(dir.str("map-W.png"), dark, 16) + share_near(dir.str("map-W.png"), stripe, 16);
  const double at_zero = share_near(dir.str("map-W.png"), zero, 16);
  INFO("hatch " << hatched << ", viridis(0) " << at_zero);
  // 13 tokens, each query allowed at most 5 keys: most of the map is forbidden.
  CHECK(hatched > 0.15);
  CHECK(at_zero < 0.02);
}

TEST_CASE("the attention map's figure draws the query range and zoom the view shows", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI map-window export test skipped");
  TempDir dir("gui-map-window");
  std::string text;
  for (int i = 0; i < 10; ++i) text += "the ship sailed across the sea . ";
  text += "the ship sailed across the [MASK] .";
  run_script(dir, json::array({
                      {{"action", "open_model"}, {"folder", kModel}},
                      {{"action", "set_text"}, {"text", text}},
                      {{"action", "select_head"}, {"layer", 4}, {"head", 1}},
                      export_action("attention_map", dir.str("whole.svg")),
                      {{"action", "select_token"}, {"query", 30}, {"key", -1}},
                      {{"action", "set_map_view"}, {"zoom", 3}, {"query_from", 25}, {"query_to", 40}},
                      export_action("attention_map", dir.str("window.svg")),
                      export_action("attention_map", dir.str("window.png"), true),
                      {{"action", "set_map_view"}, {"zoom", 1}, {"query_from", 25}, {"query_to", 40}},
                      export_action("attention_map", dir.str("rows.svg")),
                      {{"action", "quit"}},
                  }));
  auto line = [](const std::string& d, const std::string& start) {
    const auto at = d.find(start);
    return at == std::string::npos ? std::string() : d.substr(at + start.size(), d.find('\n', at) - at - start.size());
  };
  auto words = [](const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> w;
    for (std::string t; in >> t;) w.push_back(t);
    return w;
  };
  const std::string whole = desc(dir.str("whole.svg")), window = desc(dir.str("window.svg")), rows = desc(dir.str("rows.svg"));
  INFO(whole << "\n---\n" << window << "\n---\n" << rows);
  // All of it: no subtitle; 77 queries, labelled with their positions (a map of more than 40).
  CHECK(whole.rfind("queries (rows): 0 ", 0) == 0);
  const size_t all_rows = words(line(whole, "queries (rows): ")).size();
  CHECK(all_rows == 2 * 77);  // "position token" pairs
  // The query range alone (zoom 1): rows 25–40, every key.
  CHECK(rows.rfind("queries 25–40, every key of the ", 0) == 0);
  const auto range_rows = words(line(rows, "queries (rows): "));
  CHECK(range_rows.size() == 32);
  CHECK(range_rows.front() == "25");
  CHECK(line(rows, "keys (columns): ") == line(whole, "keys (columns): "));
  // Zoomed ×3 about query 30: a part of the rows and of the keys, named in the subtitle.
  CHECK(window.find("as the view shows it") != std::string::npos);
  CHECK(window.find("keys ") != std::string::npos);
  const size_t window_keys = words(line(window, "keys (columns): ")).size();
  CHECK(window_keys < words(line(whole, "keys (columns): ")).size() / 2);
  const auto window_rows = words(line(window, "queries (rows): "));
  CHECK(window_rows.size() <= 32);
  REQUIRE(!window_rows.empty());
  CHECK(std::stoi(window_rows.front()) >= 25);
}

TEST_CASE("the grid coloured by a report column spans the column's range, and its figure is that grid", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI measure-grid test skipped");
  SKIP_UNLESS(have_rsvg(), "rsvg-convert not installed: GUI measure-grid test skipped");
  TempDir dir("gui-grid-measure");
  // The shipped default's report on the UD sample: every induction score is at most 0.011 (no
  // induction head), while two heads are positional (1 on a 0/1 column).
  const std::string report = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/golden/analyze-default-ud100";
  run_script(dir, json::array({
                      {{"action", "open_model"}, {"folder", kModel}},
                      {{"action", "open_report"}, {"path", report}},
                      {{"action", "set_view"}, {"grid_measure", "induction"}},
                      export_action("Heads grid", dir.str("induction.svg")),
                      {{"action", "set_view"}, {"grid_measure", "positional"}},
                      export_action("Heads grid", dir.str("positional.svg")),
                      {{"action", "set_view"}, {"grid_measure", "maps"}},
                      export_action("Heads grid", dir.str("maps.svg")),
                      {{"action", "quit"}},
                  }));
  const std::string induction = slurp(dir.str("induction.svg"));
  CHECK(induction.find("<title>") != std::string::npos);
  CHECK_THAT(induction, Catch::Contains("induction, every head"));
  CHECK_THAT(slurp(dir.str("maps.svg")), !Catch::Contains("induction"));
  // Viridis' top (#fde725) marks a head at the top of the scale: no induction head reaches it, the
  // positional heads do. A min-to-max scale would paint the largest induction score yellow too.
  auto yellow = [&](const std::string& name) {
    std::string out;
    REQUIRE(run_command("rsvg-convert -o " + dir.str(name + ".png") + " " + dir.str(name + ".svg"), out) == 0);
    return headlab::test::count_pixels(dir.str(name + ".png"), 0, 0, 1, 1, [](int r, int g, int b) {
      return std::abs(r - 253) + std::abs(g - 231) + std::abs(b - 37) < 30;
    });
  };
  const size_t hot_induction = yellow("induction"), hot_positional = yellow("positional");
  INFO(hot_induction << " yellow pixels coloured by induction, " << hot_positional << " by positional");
  CHECK(hot_positional > 4 * hot_induction + 2000);  // two whole cells against the colour bar's tip
}
