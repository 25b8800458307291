// The real window under Xvfb: a script drives it, the screenshot must show heatmaps (many distinct
// colours in the heads grid, not a blank window), and a session saved by one script, opened by
// another and saved again is identical.
#include "test_common.h"

#include "gui_test_kit.h"

#include <cairo.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

using headlab::test::run_command;
using headlab::test::TempDir;
using headlab::test::have_xvfb;
using headlab::test::count_pixels;

namespace {

std::string gui(const TempDir& dir, const std::string& args, const std::string& screen = "1600x1000") {
  return "XDG_STATE_HOME=" + dir.str("state") + " xvfb-run -a -s '-screen 0 " + screen + "x24' " + HEADLAB_BINARY + " " + args;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Distinct colours in a rectangle given as fractions of the image.
size_t distinct_colours(const std::string& png, double x0, double y0, double x1, double y1, int* width = nullptr) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  if (width) *width = w;
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  std::set<uint32_t> colours;
  for (int y = static_cast<int>(y0 * h); y < static_cast<int>(y1 * h); ++y)
    for (int x = static_cast<int>(x0 * w); x < static_cast<int>(x1 * w); ++x)
      colours.insert(reinterpret_cast<const uint32_t*>(data + y * stride)[x] & 0xFFFFFF);
  cairo_surface_destroy(s);
  return colours.size();
}


// Pixels within a small distance of `rgb` (0xRRGGBB) in a rectangle given as fractions of the image.
size_t pixels_near(const std::string& png, uint32_t rgb, double x0, double y0, double x1, double y1) {
  const int r0 = (rgb >> 16) & 255, g0 = (rgb >> 8) & 255, b0 = rgb & 255;
  return count_pixels(png, x0, y0, x1, y1,
                      [&](int r, int g, int b) { return std::abs(r - r0) + std::abs(g - g0) + std::abs(b - b0) < 40; });
}

// An image as grey levels (0–255), row-major.
std::vector<double> grey(const std::string& png, int& w, int& h) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  std::vector<double> out(size_t(w) * size_t(h));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint32_t c = reinterpret_cast<const uint32_t*>(data + y * stride)[x];
      out[size_t(y) * size_t(w) + size_t(x)] = 0.299 * ((c >> 16) & 255) + 0.587 * ((c >> 8) & 255) + 0.114 * (c & 255);
    }
  cairo_surface_destroy(s);
  return out;
}

// Sum of squared differences between neighbours: a step of height d gives d², the same step
// smeared over two pixels 2·(d/2)² = d²/2, so crisp edges give more of it than smeared ones.
double edge_energy(const std::vector<double>& g, int w, int h) {
  double e = 0;
  for (int y = 0; y + 1 < h; ++y)
    for (int x = 0; x + 1 < w; ++x) {
      const double v = g[size_t(y) * size_t(w) + size_t(x)];
      const double dx = g[size_t(y) * size_t(w) + size_t(x + 1)] - v, dy = g[size_t(y + 1) * size_t(w) + size_t(x)] - v;
      e += dx * dx + dy * dy;
    }
  return e;
}

struct UpscaleComparison {
  double sharpness = 0;  // edge energy of the 2× export over that of the 1× upscaled bilinearly (1 = as smeared)
  double new_detail = 0;  // share of the 2× export's pixels that differ from the 1× upscaled by copying pixels
};

// A 2× export against plain upscales of the 1× one: drawn at 2× it has crisper edges than a smooth
// upscale and detail that a pixel-copying upscale does not have.
UpscaleComparison compare_with_upscales(const std::string& one, const std::string& two) {
  int w1 = 0, h1 = 0, w2 = 0, h2 = 0;
  const auto a = grey(one, w1, h1);
  const auto b = grey(two, w2, h2);
  size_t differing = 0;
  for (int y = 0; y < h2; ++y)
    for (int x = 0; x < w2; ++x) {
      const int nx = std::min(x * w1 / w2, w1 - 1), ny = std::min(y * h1 / h2, h1 - 1);
      if (std::abs(b[size_t(y) * size_t(w2) + size_t(x)] - a[size_t(ny) * size_t(w1) + size_t(nx)]) > 24) ++differing;
    }
  std::vector<double> up(size_t(w2) * size_t(h2));
  for (int y = 0; y < h2; ++y)
    for (int x = 0; x < w2; ++x) {
      const double sx = std::clamp((x + 0.5) * w1 / w2 - 0.5, 0.0, w1 - 1.0), sy = std::clamp((y + 0.5) * h1 / h2 - 0.5, 0.0, h1 - 1.0);
      const int x0 = int(sx), y0 = int(sy), x1 = std::min(x0 + 1, w1 - 1), y1 = std::min(y0 + 1, h1 - 1);
      const double fx = sx - x0, fy = sy - y0;
      auto at = [&](int xx, int yy) { return a[size_t(yy) * size_t(w1) + size_t(xx)]; };
      up[size_t(y) * size_t(w2) + size_t(x)] = (1 - fy) * ((1 - fx) * at(x0, y0) + fx * at(x1, y0)) +
                                                fy * ((1 - fx) * at(x0, y1) + fx * at(x1, y1));
    }
  return {edge_energy(b, w2, h2) / edge_energy(up, w2, h2), double(differing) / double(b.size())};
}

}  // namespace

TEST_CASE("the window draws heatmaps and a scripted session saves identically", "[app][gui]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI smoke test skipped");
  TempDir dir("gui");
  std::string out;
  const std::string model = dir.str("model");
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " init --config " + HEADLAB_SOURCE_DIR +
                          "/assets/configs/talking-heads.json --out " + model + " --seed 5",
                      out) == 0);
  std::ofstream(dir.str("save.json")) << R"({"actions": [
    {"action": "open_model", "folder": ")" << model << R"("},
    {"action": "set_text", "text": "the cat sat on the [MASK] because it was tired ."},
    {"action": "select_head", "layer": 1, "head": 2},
    {"action": "set_gate", "layer": 0, "head": 3, "value": 0},
    {"action": "set_mix", "layer": 1, "which": "post", "preset": "blend", "a": 0, "b": 2, "alpha": 0.3},
    {"action": "select_token", "query": 2},
    {"action": "save_session", "path": ")" << dir.str("one.json") << R"("},
    {"action": "export", "view": "attention_map", "path": ")" << dir.str("map.svg") << R"("},
    {"action": "export", "view": "attention_map", "path": ")" << dir.str("map1.png") << R"("},
    {"action": "export", "view": "attention_map", "path": ")" << dir.str("map2.png") << R"(", "scale": 2},
    {"action": "screenshot", "path": ")" << dir.str("shot.png") << R"("},
    {"action": "quit"}]})";
  const int rc = run_command(gui(dir, "gui --script " + dir.str("save.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  int width = 0;
  // The heads grid sits in the middle column's upper half.
  CHECK(distinct_colours(dir.str("shot.png"), 0.26, 0.08, 0.62, 0.40, &width) > 40);
  CHECK(width == 1600);
  CHECK(std::filesystem::file_size(dir.str("map.svg")) > 1000);
  // 2× is rendered offscreen at twice the pixels (fonts re-rasterised for it), not a screen grab.
  int width1 = 0, width2 = 0;
  CHECK(distinct_colours(dir.str("map1.png"), 0, 0, 1, 1, &width1) > 40);
  CHECK(distinct_colours(dir.str("map2.png"), 0, 0, 1, 1, &width2) > 40);
  CHECK(std::abs(width2 - 2 * width1) <= 2);
  // … and sharper than the 1× export upscaled: its edges are drawn at 2×, not smeared.
  const auto upscale = compare_with_upscales(dir.str("map1.png"), dir.str("map2.png"));
  INFO("2× export against the 1× upscaled: sharpness " << upscale.sharpness << ", new detail " << upscale.new_detail);
  CHECK(upscale.sharpness > 1.3);
  CHECK(upscale.new_detail > 0.005);  // a pixel-copying upscale: 0

  std::ofstream(dir.str("resave.json")) << R"([{"action": "save_session", "path": ")" << dir.str("two.json") << R"("}])";
  REQUIRE(run_command(gui(dir, "gui --session " + dir.str("one.json") + " --script " + dir.str("resave.json")), out) == 0);
  const std::string one = slurp(dir.str("one.json")), two = slurp(dir.str("two.json"));
  CHECK(one.find("\"gates\"") != std::string::npos);
  CHECK(one == two);

  // A script replaces an existing export only when it says "overwrite" (the window would ask).
  const std::string svg = slurp(dir.str("map.svg"));
  std::ofstream(dir.str("again.json")) << R"([{"action": "export", "view": "attention_map", "path": ")"
                                       << dir.str("map.svg") << R"("}])";
  CHECK(run_command(gui(dir, "gui --session " + dir.str("one.json") + " --script " + dir.str("again.json")), out) == 1);
  CHECK(out.find(dir.str("map.svg") + " exists; add \"overwrite\": true") != std::string::npos);
  CHECK(slurp(dir.str("map.svg")) == svg);
  std::ofstream(dir.str("again.json")) << R"([{"action": "export", "view": "attention_map", "path": ")"
                                       << dir.str("map.svg") << R"(", "overwrite": true}])";
  CHECK(run_command(gui(dir, "gui --session " + dir.str("one.json") + " --script " + dir.str("again.json")), out) == 0);
  CHECK(std::filesystem::file_size(dir.str("map.svg")) > 1000);
  CHECK(headlab::test::temp_files_of(dir.str("map.svg")).empty());

  // Plain `headlab --model DIR --screenshot OUT.png`: first view, first run drawn, exit 0.
  REQUIRE(run_command(gui(dir, "--model " + model + " --screenshot " + dir.str("first.png")), out) == 0);
  CHECK(distinct_colours(dir.str("first.png"), 0.26, 0.08, 0.62, 0.40) > 40);
  // A bad script is refused with its index.
  std::ofstream(dir.str("bad.json")) << R"([{"action": "fly"}])";
  CHECK(run_command(gui(dir, "gui --script " + dir.str("bad.json")), out) == 2);
  CHECK(out.find("action 0: unknown action 'fly'") != std::string::npos);
}

TEST_CASE("the analysis views run a dataset, sort, filter, colour the grid and export", "[app][gui]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI analysis test skipped");
  TempDir dir("gui-analysis");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string data = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";
  std::ofstream(dir.str("analyse.json")) << R"({"actions": [
    {"action": "open_model", "folder": ")" << model << R"("},
    {"action": "run_dataset", "files": [")" << data << R"("], "metrics": ["confidence", "positional", "syntactic", "spectra"], "limit": 20},
    {"action": "select_view", "view": "Head table"},
    {"action": "sort_heads", "by": "positional_share"},
    {"action": "export", "view": "head_table", "path": ")" << dir.str("sorted.csv") << R"("},
    {"action": "filter_heads", "role": "positional"},
    {"action": "export", "view": "head_table", "path": ")" << dir.str("positional.csv") << R"("},
    {"action": "filter_heads"},
    {"action": "screenshot", "path": ")" << dir.str("analyse.png") << R"("},
    {"action": "export", "view": "Head table", "path": ")" << dir.str("table.png") << R"("},
    {"action": "export", "view": "Head table", "path": ")" << dir.str("table-figure.png") << R"(", "figure_only": true},
    {"action": "select_head", "layer": 3, "head": 7},
    {"action": "select_view", "view": "Head detail"},
    {"action": "select_view", "view": "Spectra"},
    {"action": "set_lrp_target", "position": -1},
    {"action": "set_view", "logit_spectra": true},
    {"action": "screenshot", "path": ")" << dir.str("explain.png") << R"("},
    {"action": "set_view", "workspace": "Explore", "grid_measure": "confidence"},
    {"action": "export", "view": "heads_grid", "path": ")" << dir.str("grid-measure.png") << R"(", "figure_only": true},
    {"action": "save_session", "path": ")" << dir.str("analysed.json") << R"("},
    {"action": "quit"}]})";
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("analyse.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  // The sorted table: 40 heads of the default model, the largest positional share first.
  std::ifstream sorted(dir.str("sorted.csv"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(sorted, line);) lines.push_back(line);
  REQUIRE(lines.size() == 41);
  auto share_of = [&](const std::string& line) {
    // positional_share is the 7th column (stack,layer,head,confidence,confidence_all_keys,positional_offset,…).
    size_t at = 0;
    for (int i = 0; i < 6; ++i) at = line.find(',', at) + 1;
    return std::stod(line.substr(at));
  };
  for (size_t i = 2; i < lines.size(); ++i) CHECK(share_of(lines[i - 1]) >= share_of(lines[i]));
  // The positional filter keeps the positional heads only (at least the ±1 heads of layer 3).
  const std::string positional = slurp(dir.str("positional.csv"));
  const auto rows = std::count(positional.begin(), positional.end(), '\n') - 1;
  CHECK(rows >= 2);
  CHECK(rows < 40);
  CHECK(positional.find("\"positional(") != std::string::npos);
  // The table has rows on screen (text and stripes: many colours), in the window's Analyse layout.
  CHECK(distinct_colours(dir.str("analyse.png"), 0.30, 0.12, 0.68, 0.45) > 30);
  // "figure only" leaves the title bar and controls out: a smaller picture of the same view.
  int full_w = 0, figure_w = 0;
  distinct_colours(dir.str("table.png"), 0, 0, 1, 1, &full_w);
  distinct_colours(dir.str("table-figure.png"), 0, 0, 1, 1, &figure_w);
  CHECK(figure_w < full_w);
  // Relevance (lower left): tokens shaded red/blue; Head detail (upper right) and Spectra (lower
  // right): plots with bars and curves.
  CHECK(count_pixels(dir.str("explain.png"), 0.0, 0.5, 0.28, 1.0, [](int r, int g, int b) { return r > 150 && g < 90 && b < 90; }) > 50);
  CHECK(distinct_colours(dir.str("explain.png"), 0.72, 0.05, 1.0, 0.45) > 20);
  CHECK(distinct_colours(dir.str("explain.png"), 0.72, 0.55, 1.0, 0.95) > 20);
  // The grid coloured by confidence: one viridis colour per head (40 cells, many distinct colours).
  CHECK(distinct_colours(dir.str("grid-measure.png"), 0, 0, 1, 1) > 20);
  // The session keeps the report (embedded: it is small), the sort and the grid's measure.
  const auto session = nlohmann::json::parse(slurp(dir.str("analysed.json")));
  CHECK(session["analysis"]["sort_by"] == "positional_share");
  CHECK(session["analysis"]["report_embedded"]["heads"].size() == 40);
  CHECK(session["view"]["grid_measure"] == "confidence");
}

TEST_CASE("the Syntax view draws a sentence's gold arcs and a head's argmax arcs", "[app][gui]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI syntax test skipped");
  TempDir dir("gui-syntax");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string data = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";
  std::ofstream(dir.str("syntax.json")) << R"({"actions": [
    {"action": "open_model", "folder": ")" << model << R"("},
    {"action": "run_dataset", "files": [")" << data << R"("], "metrics": ["syntactic"], "limit": 10},
    {"action": "select_sentence", "index": 2},
    {"action": "select_view", "view": "Syntax"},
    {"action": "select_head", "layer": 4, "head": 1},
    {"action": "screenshot", "path": ")" << dir.str("syntax.png") << R"("},
    {"action": "export", "view": "syntax", "path": ")" << dir.str("arcs.png") << R"(", "figure_only": true},
    {"action": "save_session", "path": ")" << dir.str("syntax-session.json") << R"("},
    {"action": "set_text", "text": "President Bush on Tuesday nominated two individuals to replace retiring jurists on federal courts in the Washington area."},
    {"action": "set_parse", "file": ")" << data << R"("},
    {"action": "screenshot", "path": ")" << dir.str("typed.png") << R"("},
    {"action": "set_text", "text": "President Bush nominated two people."},
    {"action": "screenshot", "path": ")" << dir.str("unparsed.png") << R"("},
    {"action": "quit"}]})";
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("syntax.json"), "1280x800"), out);
  INFO(out);
  REQUIRE(rc == 0);
  // Typed text with its parse found in the file (sentence 1 of the sample): arcs both ways; a text
  // no sentence spells: the error in the view's red, and no arcs.
  CHECK(pixels_near(dir.str("typed.png"), 0x96AAD2, 0.29, 0.52, 0.69, 0.95) > 50);
  CHECK(pixels_near(dir.str("typed.png"), 0x46C86E, 0.29, 0.52, 0.69, 0.95) > 20);
  CHECK(pixels_near(dir.str("unparsed.png"), 0x96AAD2, 0.29, 0.58, 0.69, 0.95) < 5);
  CHECK(pixels_near(dir.str("unparsed.png"), 0xEB5550, 0.29, 0.52, 0.69, 0.65) > 20);
  // The Syntax window (lower middle of the Analyse layout): gold arcs, and argmax arcs both green
  // (found the gold head) and red (another word) for the next-token head on this sentence.
  const std::string shot = dir.str("syntax.png");
  CHECK(pixels_near(shot, 0x96AAD2, 0.29, 0.52, 0.69, 0.95) > 50);  // gold
  CHECK(pixels_near(shot, 0x46C86E, 0.29, 0.52, 0.69, 0.95) > 20);  // found
  CHECK(pixels_near(shot, 0xEB5550, 0.29, 0.52, 0.69, 0.95) > 20);  // missed
  CHECK(distinct_colours(shot, 0.29, 0.52, 0.69, 0.95) > 30);
  // The figure alone holds the arcs too.
  CHECK(pixels_near(dir.str("arcs.png"), 0x46C86E, 0, 0, 1, 1) > 20);
  const auto session = nlohmann::json::parse(slurp(dir.str("syntax-session.json")));
  CHECK(session["analysis"]["syntax_index"] == 2);
}

TEST_CASE("a script exports each analysis view as SVG and PDF", "[app][gui][export]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI export test skipped");
  TempDir dir("gui-view-exports");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  const std::string data = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";
  const char* views[] = {"Head table", "Head detail", "Spectra", "Relevance", "Syntax"};
  std::ostringstream script;
  script << R"({"actions": [
    {"action": "open_model", "folder": ")" << model << R"("},
    {"action": "run_dataset", "files": [")" << data << R"("], "metrics": ["confidence", "positional", "syntactic", "spectra"], "limit": 10},
    {"action": "select_head", "layer": 3, "head": 2},
    {"action": "select_sentence", "index": 2},
    {"action": "select_view", "view": "Head table"},
    {"action": "select_view", "view": "Head detail"},
    {"action": "select_view", "view": "Spectra"},
    {"action": "select_view", "view": "Relevance"},
    {"action": "select_view", "view": "Syntax"},
    {"action": "set_lrp_target", "position": -1},
    {"action": "wait_frames", "frames": 5},)";
  for (const char* view : views)
    for (const char* ext : {"svg", "pdf"})
      script << R"(
    {"action": "export", "view": ")" << view << R"(", "path": ")" << dir.str(std::string(view) + "." + ext) << R"("},)";
  script << R"(
    {"action": "quit"}]})";
  std::ofstream(dir.str("exports.json")) << script.str();
  std::string out;
  const int rc = run_command(gui(dir, "gui --script " + dir.str("exports.json")), out);
  INFO(out);
  REQUIRE(rc == 0);
  for (const char* view : views) {
    INFO(view);
    const std::string svg = slurp(dir.str(std::string(view) + ".svg"));
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK(svg.find("<title>") != std::string::npos);
    CHECK(svg.size() > 2000);
    const std::string pdf = slurp(dir.str(std::string(view) + ".pdf"));
    CHECK(pdf.rfind("%PDF-", 0) == 0);
    CHECK(pdf.size() > 1000);
  }
  // Each file shows its view's data: the table's columns, the head's relations, the selected head's
  // spectrum, the explained logit, the sentence's arcs.
  CHECK(slurp(dir.str("Head table.svg")).find("positional_share") != std::string::npos);
  CHECK(slurp(dir.str("Head detail.svg")).find("relations: ") != std::string::npos);
  // L3 H2's query weights are zero (the default's layer 3): its form is named as such, not drawn as a
  // curve, while the layer's other heads (zero too) say the same.
  CHECK(slurp(dir.str("Spectra.svg")).find("H2: key-query form zero or negligible (σ_1 = 0), no curve") != std::string::npos);
  CHECK(slurp(dir.str("Spectra.svg")).find("H2: 90% of the energy") == std::string::npos);
  CHECK(slurp(dir.str("Relevance.svg")).find("residual") != std::string::npos);
  CHECK(slurp(dir.str("Syntax.svg")).find("argmax: ") != std::string::npos);
}

TEST_CASE("a script patches heads from a counterfactual and exports the Patching and Circuits views", "[app][gui][patching]") {
  SKIP_UNLESS(have_xvfb(), "xvfb-run not installed: GUI patching test skipped");
  TempDir dir("gui-patching");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  std::ostringstream script;
  script << R"({"actions": [
    {"action": "open_model", "folder": ")" << model << R"("},
    {"action": "set_text", "text": "she opened the [MASK] and looked out at the garden ."},
    {"action": "set_patching", "counterfactual": "she closed the [MASK] and looked out at the street .", "answer": "door", "wrong": "window"},
    {"action": "run_patching"},
    {"action": "take_from_counterfactual", "layer": 4, "head": 2, "weight": 1.0},
    {"action": "select_view", "view": "Patching"},
    {"action": "wait_frames", "frames": 5},
    {"action": "export", "view": "Patching", "path": ")" << dir.str("patching.svg") << R"("},
    {"action": "screenshot", "path": ")" << dir.str("patching.png") << R"("},
    {"action": "set_view", "workspace": "Analyse"},
    {"action": "select_view", "view": "Circuits"},
    {"action": "select_head", "layer": 3, "head": 2},
    {"action": "wait_frames", "frames": 5},
    {"action": "export", "view": "Circuits", "path": ")" << dir.str("circuits.pdf") << R"("},
    {"action": "export", "view": "Circuits", "path": ")" << dir.str("circuits.svg") << R"("},
    {"action": "save_session", "path": ")" << dir.str("session.json") << R"("},
    {"action": "quit"}]})";
  std::ofstream(dir.str("patching.json")) << script.str();
  std::string out;
  REQUIRE(run_command(gui(dir, "gui --script " + dir.str("patching.json")), out) == 0);
  INFO(out);
  const std::string patching = slurp(dir.str("patching.svg"));
  CHECK(patching.find("<title>Activation patching: z from the counterfactual</title>") != std::string::npos);
  const std::string circuits = slurp(dir.str("circuits.svg"));
  CHECK(circuits.find("<title>K-composition scores") != std::string::npos);
  CHECK(slurp(dir.str("circuits.pdf")).rfind("%PDF-", 0) == 0);
  // The window drew the heatmaps in colour (more than the theme's few greys).
  CHECK(distinct_colours(dir.str("patching.png"), 0, 0, 1, 1) > 40);
  const auto session = nlohmann::json::parse(slurp(dir.str("session.json")));
  CHECK(session["patching"]["counterfactual"] == "she closed the [MASK] and looked out at the street .");
  CHECK(session["patching"]["take"][4][2] == 1.0);
}
