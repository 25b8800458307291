// The Analyse views' figures written headless from hand-made data: each is a valid SVG whose title
// and text alternative carry the labels the view shows, and a non-empty PDF; pages are sized to
// their content; a path with another extension throws naming the path.
#include "test_common.h"

#include "sample_report.h"

#include "analysis/head_report.h"
#include "analysis/spectra.h"
#include "app/export/analysis_figures.h"
#include "app/export/figures.h"
#include "app/layout/head_colours.h"
#include "app/document/head_table.h"

#include <array>
#include <cmath>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>

using namespace headlab;
using namespace headlab::app;
using headlab::test::TempDir;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double svg_size(const std::string& svg, const std::string& attribute) {
  const auto at = svg.find(attribute + "=\"");
  REQUIRE(at != std::string::npos);
  return std::stod(svg.substr(at + attribute.size() + 2));
}

// A non-trivial PDF: the header, the trailer and some drawing.
void check_pdf(const std::string& path) {
  const std::string pdf = slurp(path);
  CHECK(pdf.rfind("%PDF-", 0) == 0);
  CHECK(pdf.find("%%EOF") != std::string::npos);
  CHECK(pdf.size() > 1000);
}

// 2 layers × 3 heads: L0 H0 positional (−1, 95%), L1 H0 syntactic on nsubj (80% against 40%),
// L0 H1 with a key-query spectrum.
analysis::HeadReport sample() {
  const std::map<int, int64_t> offsets[6] = {
      {{-1, 95}, {0, 5}}, {{1, 60}, {2, 40}}, {{-2, 30}, {0, 40}, {9, 30}}, {{0, 50}, {1, 50}}, {{-1, 60}, {1, 40}}, {}};
  const double confidence[6] = {10, 20, 30, 40, 50, 60};
  auto r = test::sample_report({"confidence", "positional", "syntactic", "spectra"}, offsets, confidence);
  r.heads[1].spectrum = analysis::spectrum_from_singular_values({8, 4, 2, 1, 0.5, 0.01, 0, 0});
  r.finalize();
  return r;
}

}  // namespace

TEST_CASE("the head table figure shows the rows as filtered and sorted, with badges and columns", "[app][export]") {
  TempDir dir("table-figure");
  const auto report = sample();
  const auto rows = sorted_rows(report, all_rows(report), "confidence", true);
  write_head_table_figure(dir.str("table.svg"), "sample — head table, by confidence", report, rows);
  const std::string svg = slurp(dir.str("table.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("<title>sample — head table, by confidence</title>") != std::string::npos);
  // Every column of the table by name, and the roles as badge text.
  CHECK(svg.find("roles\tstack\tlayer\thead") != std::string::npos);
  CHECK(svg.find("positional_share") != std::string::npos);
  CHECK(svg.find("nsubj") != std::string::npos);
  // Sorted by confidence, largest first: L1 H1 (0.5) before L0 H0 (0.1).
  const auto first = svg.find("\tencoder\t1\t1\t"), last = svg.find("\tencoder\t0\t0\t");
  REQUIRE(first != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(first < last);
  // A filtered table has fewer rows and a shorter page.
  write_head_table_figure(dir.str("two.svg"), "two rows", report, {0, 3});
  const std::string two = slurp(dir.str("two.svg"));
  CHECK(two.find("\tencoder\t1\t2\t") == std::string::npos);
  CHECK(svg_size(two, "height") < svg_size(svg, "height"));
  write_head_table_figure(dir.str("table.pdf"), "sample — head table", report, rows);
  check_pdf(dir.str("table.pdf"));
  CHECK_THROWS_WITH(write_head_table_figure(dir.str("table.txt"), "t", report, rows),
                    Catch::Matchers::Contains(dir.str("table.txt")));
  CHECK_THROWS_WITH(write_head_table_figure(dir.str("bad.svg"), "t", report, {7}), Catch::Matchers::Contains("row 7"));
}

TEST_CASE("the head detail figure draws offsets, relations against the baseline and the spectrum", "[app][export]") {
  TempDir dir("detail-figure");
  const auto report = sample();
  const auto* syntactic = report.find(headlab::core::Stack::Encoder, 1, 0);
  REQUIRE(syntactic);
  write_head_detail_figure(dir.str("detail.svg"), "sample — encoder layer 1, head 0", *syntactic, report.settings);
  const std::string svg = slurp(dir.str("detail.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("<title>sample — encoder layer 1, head 0</title>") != std::string::npos);
  CHECK(svg.find("relations: nsubj d→h 0.800 vs 0.400 at -1") != std::string::npos);
  CHECK(svg.find("offsets: 0 0.500, +1 0.500") != std::string::npos);
  // The measures' text lines are on the figure too, as the view shows them.
  CHECK(svg.find("confidence 0.") != std::string::npos);
  // A report of the induction probe alone: its line, not "nothing to plot".
  auto probe = report;
  probe.settings.metrics = {"induction"};
  probe.settings.probe_sequences = 4;
  probe.settings.probe_length = 12;
  auto head = *syntactic;
  head.values["prev_token"] = 0.125;
  head.values["duplicate_token"] = 0.25;
  head.values["induction"] = 0.495;
  head.values["probe_queries"] = 40;
  write_head_detail_figure(dir.str("probe.svg"), "probe", head, probe.settings);
  const std::string probe_svg = slurp(dir.str("probe.svg"));
  CHECK(probe_svg.find("previous-token 0.125, duplicate-token 0.250, induction 0.495") != std::string::npos);
  CHECK(probe_svg.find("nothing to plot") == std::string::npos);
  // Offsets past ±5 are gathered into one bar at the end.
  const auto* wide = report.find(headlab::core::Stack::Encoder, 0, 2);
  write_head_detail_figure(dir.str("wide.svg"), "wide", *wide, report.settings);
  CHECK(slurp(dir.str("wide.svg")).find("≥+6 0.300") != std::string::npos);
  // A head with a spectrum gets its energy ranks; the page grows by the panel.
  const auto* spectral = report.find(headlab::core::Stack::Encoder, 0, 1);
  write_head_detail_figure(dir.str("spectrum.svg"), "spectrum", *spectral, report.settings);
  const std::string with_spectrum = slurp(dir.str("spectrum.svg"));
  CHECK(with_spectrum.find("spectrum: 90% of the energy at rank 2, 95% at 3, 99% at 4") != std::string::npos);
  CHECK(svg_size(with_spectrum, "height") > svg_size(svg, "height") - 1);
  write_head_detail_figure(dir.str("detail.pdf"), "detail", *syntactic, report.settings);
  check_pdf(dir.str("detail.pdf"));
  CHECK_THROWS_WITH(write_head_detail_figure(dir.str("detail.jpg"), "t", *syntactic, report.settings),
                    Catch::Matchers::Contains(dir.str("detail.jpg")));
}

TEST_CASE("the spectra figure draws the selected head over its layer's other heads", "[app][export]") {
  TempDir dir("spectra-figure");
  const std::vector<analysis::Spectrum> heads = {analysis::spectrum_from_singular_values({4, 2, 1, 0}),
                                                 analysis::spectrum_from_singular_values({10, 1, 0.1, 0.01}),
                                                 analysis::spectrum_from_singular_values({1, 1, 1, 1}),
                                                 analysis::spectrum_from_singular_values({0, 0, 0, 0})};
  const std::string title = "sample — key-query spectra, encoder layer 0 (head 1 highlighted)";
  write_spectra_figure(dir.str("s.svg"), title, heads, 1);
  const std::string svg = slurp(dir.str("s.svg"));
  INFO(svg.substr(0, 600));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("<title>" + title + "</title>") != std::string::npos);
  CHECK(svg.find("H1: 90% of the energy at rank 1, 95% at 1, 99% at 1") != std::string::npos);
  CHECK(svg.find("H2: 90% of the energy at rank 4") != std::string::npos);
  // A head with a zero form (query or key weights zero) is named, not drawn as a curve.
  CHECK(svg.find("H3: key-query form zero or negligible (σ_1 = 0), no curve") != std::string::npos);
  CHECK(svg.find("H3: 90%") == std::string::npos);
  // Chosen itself, the zero head leaves its layer's curves and the note.
  write_spectra_figure(dir.str("zero.svg"), title, heads, 3);
  CHECK(slurp(dir.str("zero.svg")).find("H3: key-query form zero") != std::string::npos);
  // The page is at least as wide as the title.
  CHECK(svg_size(svg, "width") > 400);
  write_spectra_figure(dir.str("s.pdf"), title, heads, 1);
  check_pdf(dir.str("s.pdf"));
  CHECK_THROWS_WITH(write_spectra_figure(dir.str("s.eps"), title, heads, 1), Catch::Matchers::Contains(dir.str("s.eps")));
  CHECK_THROWS_WITH(write_spectra_figure(dir.str("s.svg"), title, heads, 4), Catch::Matchers::Contains("head 4 of 4"));
}

TEST_CASE("the relevance figure shades tokens and heads and names the target", "[app][export]") {
  TempDir dir("relevance-figure");
  RelevanceFigure fig;
  fig.title = "sample — logit of \"Paris\" at position 3: f = 7.2, residual |Σ input + bias − f| = 1e-05";
  fig.shading = "LRP";
  fig.tokens = {"[CLS]", "the", "capital", "[MASK]", "[SEP]"};
  fig.values = {0.1, -0.4, 2.5, 0.0, 0.05};
  fig.target = 3;
  fig.stack = headlab::core::Stack::Encoder;
  fig.heads = {{0.5, -0.2}, {1.5, 0.0}};
  write_relevance_figure(dir.str("r.svg"), fig);
  const std::string svg = slurp(dir.str("r.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("logit of \"Paris\" at position 3") != std::string::npos);
  CHECK(svg.find("residual") != std::string::npos);
  CHECK(svg.find("LRP: [CLS] 0.1, the -0.4, capital 2.5") != std::string::npos);
  CHECK(svg.find("L1: 1.5 0") != std::string::npos);
  // A long input wraps onto more lines: a taller page, no wider than the line limit allows.
  RelevanceFigure longer = fig;
  for (int i = 0; i < 120; ++i) longer.tokens.push_back("token" + std::to_string(i)), longer.values.push_back(i % 7 - 3);
  write_relevance_figure(dir.str("long.svg"), longer);
  const std::string long_svg = slurp(dir.str("long.svg"));
  CHECK(svg_size(long_svg, "height") > svg_size(svg, "height") + 50);
  CHECK(svg_size(long_svg, "width") < 700);
  write_relevance_figure(dir.str("r.pdf"), fig);
  check_pdf(dir.str("r.pdf"));
  CHECK_THROWS_WITH(write_relevance_figure(dir.str("r.html"), fig), Catch::Matchers::Contains(dir.str("r.html")));
}

TEST_CASE("the syntax figure draws gold arcs above and the head's argmax arcs below", "[app][export]") {
  TempDir dir("syntax-figure");
  const std::vector<std::string> words = {"The", "cat", "sat", "."};
  const std::vector<int> heads = {1, 2, -1, 2};
  const std::vector<std::string> relations = {"det", "nsubj", "root", "punct"};
  const std::vector<int> predicted = {1, 0, 1, 2};  // det found, nsubj missed, punct not scored
  write_syntax_figure(dir.str("a.svg"), "sample — sentence 1", words, heads, relations, predicted);
  const std::string svg = slurp(dir.str("a.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("<title>sample — sentence 1</title>") != std::string::npos);
  CHECK(svg.find("gold: The → cat (det), cat → sat (nsubj), . → sat (punct)") != std::string::npos);
  CHECK(svg.find("The → cat (gold head)") != std::string::npos);
  CHECK(svg.find("cat → The (another word)") != std::string::npos);
  CHECK(svg.find(". → sat (not scored)") != std::string::npos);
  // Without a head's argmax only the gold tree is drawn: a shorter page.
  write_syntax_figure(dir.str("gold.svg"), "sample — sentence 1", words, heads, relations, {});
  const std::string gold = slurp(dir.str("gold.svg"));
  CHECK(gold.find("argmax:") == std::string::npos);
  CHECK(svg_size(gold, "height") < svg_size(svg, "height"));
  write_syntax_figure(dir.str("a.pdf"), "sentence", words, heads, relations, predicted);
  check_pdf(dir.str("a.pdf"));
  CHECK_THROWS_WITH(write_syntax_figure(dir.str("a.svgz"), "t", words, heads, relations, predicted),
                    Catch::Matchers::Contains(dir.str("a.svgz")));
  CHECK_THROWS_AS(write_syntax_figure(dir.str("b.svg"), "t", words, {1, 2}, relations, predicted), std::invalid_argument);
}

// The input's figures (attention map, heads grid, head view): cairo draws text as glyph outlines, so
// the SVG carries the title, the token labels and the colour bar's range as <title>/<desc> text.
TEST_CASE("the input's figures carry their title, token labels and colour bar as text", "[app][export]") {
  TempDir dir("token-figures");
  // The text between <tag> and </tag>, "" when absent.
  auto element = [](const std::string& svg, const std::string& tag) -> std::string {
    const auto open = svg.find("<" + tag + ">");
    const auto close = svg.find("</" + tag + ">");
    if (open == std::string::npos || close == std::string::npos) return "";
    return svg.substr(open + tag.size() + 2, close - open - tag.size() - 2);
  };
  const FigureTokens tokens{{"the", "cat", "<sat>"}, {"the", "cat", "<sat>"}};
  const std::vector<float> map{0.7f, 0.2f, 0.1f, 0.5f, 0.25f, 0.25f, 0.0f, 0.9f, 0.1f};  // [3, 3]
  FigureMap figure{map.data(), map_range(map.data(), map.size(), false, false, false)};

  write_attention_map(dir.str("map.svg"), "demo — encoder layer 1, head 2", figure, 3, 3, tokens, Colormap::Viridis);
  const std::string svg = slurp(dir.str("map.svg"));
  CHECK(element(svg, "title") == "demo — encoder layer 1, head 2");
  const std::string desc = element(svg, "desc");
  CHECK(desc.find("queries (rows): the cat &lt;sat&gt;") != std::string::npos);  // escaped, readable
  CHECK(desc.find("keys (columns): the cat &lt;sat&gt;") != std::string::npos);
  CHECK(desc.find("colour bar: viridis, 0 to 0.9") != std::string::npos);  // the map's own range
  CHECK(svg.find("<svg") < svg.find("<title>"));

  // Log scale: the bar spans four decades below the maximum, and says so.
  FigureMap logged = figure;
  logged.range = map_range(map.data(), map.size(), false, true, false);
  write_attention_map(dir.str("log.svg"), "log", logged, 3, 3, tokens, Colormap::Gray);
  CHECK(element(slurp(dir.str("log.svg")), "desc").find("colour bar: gray, 9e-05 to 0.9 (log)") != std::string::npos);

  std::vector<std::vector<FigureMap>> grid(2, std::vector<FigureMap>(4, figure));
  write_heads_grid(dir.str("grid.svg"), "demo — all heads", grid, 3, 3, Colormap::Viridis);
  const std::string grid_svg = slurp(dir.str("grid.svg"));
  CHECK(element(grid_svg, "title") == "demo — all heads");
  CHECK(element(grid_svg, "desc").find("2 layers (L0–L1) × 4 heads (H0–H3), each map 3 × 3") != std::string::npos);
  CHECK(element(grid_svg, "desc").find("colour bar: viridis") != std::string::npos);
  CHECK(grid_svg.find("<image") == std::string::npos);  // a few small maps: sharp rectangles

  // An 8B model's grid, 32 × 32 heads of 57 × 57 thumbnails (noise, so few cells merge): images, not
  // 3.3 million rectangles. Both ways written here to compare their sizes.
  {
    const int n = 57;
    std::vector<float> noise(size_t(n) * n);
    for (size_t i = 0; i < noise.size(); ++i) noise[i] = float((i * 2654435761u) % 1000) / 1000.0f;
    FigureMap m;
    m.data = noise.data();
    m.range = map_range(noise.data(), noise.size(), false, false, true);
    std::vector<std::vector<FigureMap>> big(32, std::vector<FigureMap>(32, m));
    write_heads_grid(dir.str("big.svg"), "32 × 32", big, n, n, Colormap::Viridis);
    const std::string big_svg = slurp(dir.str("big.svg"));
    CHECK(big_svg.find("<image") != std::string::npos);
    std::vector<std::vector<FigureMap>> one(1, std::vector<FigureMap>(1, m));
    write_heads_grid(dir.str("one.svg"), "one", one, n, n, Colormap::Viridis);
    const std::string one_svg = slurp(dir.str("one.svg"));
    CHECK(one_svg.find("<image") == std::string::npos);  // one map of 57 × 57: rectangles
    CHECK(big_svg.size() < 1024 * one_svg.size() / 4);   // ≥ 4× smaller than rectangles for every map
  }

  write_head_view(dir.str("heads.svg"), "demo — head view", {map.data(), map.data()}, 3, 3, tokens);
  const std::string heads_desc = element(slurp(dir.str("heads.svg")), "desc");
  CHECK(heads_desc.find("2 heads") != std::string::npos);
  CHECK(heads_desc.find("to keys (right): the cat &lt;sat&gt;") != std::string::npos);

  // PDF: a PDF; another extension: refused with the path.
  write_attention_map(dir.str("map.pdf"), "pdf", figure, 3, 3, tokens, Colormap::Viridis);
  check_pdf(dir.str("map.pdf"));
  CHECK_THROWS_WITH(write_attention_map(dir.str("map.bmp"), "x", figure, 3, 3, tokens, Colormap::Viridis),
                    Catch::Contains("map.bmp") && Catch::Contains(".svg, .pdf or .png"));
}

// A model of more than ten heads: the head view's figure colours each head as the window does
// (app/layout/head_colours.h), so head 10 is not drawn in head 0's colour.
TEST_CASE("the head view's figure gives each of more than ten heads its own colour, as on screen", "[app][export]") {
  TempDir dir("head-colours");
  const FigureTokens tokens{{"a", "b", "c"}, {"a", "b", "c"}};
  const std::vector<float> sharp{1, 0, 0, 0, 1, 0, 0, 0, 1}, none(9, 0.0f);
  std::vector<const float*> heads(11, none.data());  // lines for heads 0 and 10 alone
  heads[0] = heads[10] = sharp.data();
  write_head_view(dir.str("heads.svg"), "eleven heads", heads, 3, 3, tokens);
  // The stroke colours cairo wrote, "rgb(12.156863%,46.666667%,70.588235%)", as 0–255 triplets.
  const std::string svg = slurp(dir.str("heads.svg"));
  std::set<std::array<int, 3>> strokes;
  for (auto at = svg.find("stroke:rgb("); at != std::string::npos; at = svg.find("stroke:rgb(", at + 1)) {
    std::array<int, 3> c{};
    std::istringstream in(svg.substr(at + 11, 60));
    char sign;
    double v;
    for (int i = 0; i < 3 && in >> v >> sign; ++i) {
      c[static_cast<size_t>(i)] = static_cast<int>(std::lround(v * 2.55));
      if (i < 2) in >> sign;  // ","
    }
    strokes.insert(c);
  }
  auto near = [&](Rgb rgb) {
    for (const auto& c : strokes)
      if (std::abs(c[0] - rgb.r) <= 1 && std::abs(c[1] - rgb.g) <= 1 && std::abs(c[2] - rgb.b) <= 1) return true;
    return false;
  };
  INFO(strokes.size() << " stroke colours");
  CHECK(strokes.size() == 2);
  CHECK(near(head_rgb(0)));
  CHECK(near(head_rgb(10)));
  CHECK(!(head_rgb(10).r == head_rgb(0).r && head_rgb(10).g == head_rgb(0).g && head_rgb(10).b == head_rgb(0).b));
}
