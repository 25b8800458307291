// The head report's outputs: derived shares and roles (finalize), CSV, Markdown, JSON round trip,
// shard merge, and the figures (checked by decoding the PNGs and reading their pixels).
#include "test_common.h"

#include "analysis/head_report.h"
#include "analysis/measure.h"
#include "analysis/report_columns.h"
#include "analysis/report_figures.h"

#include <nlohmann/json.hpp>

// stb_image's implementation, private to this file (libstb may be linked elsewhere).
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace headlab;
using namespace headlab::analysis;

namespace {

const std::vector<std::string> kAllMetrics{"confidence", "positional", "rare", "syntactic", "lrp", "importance", "spectra"};

// Energy ranks computed here, independently of analysis/spectra.
Spectrum make_spectrum(std::vector<double> sv) {
  Spectrum s;
  s.singular_values = sv;
  double total = 0;
  for (double v : sv) total += v * v;
  double acc = 0;
  for (size_t k = 0; k < sv.size(); ++k) {
    acc += sv[k] * sv[k];
    s.cumulative_energy.push_back(acc / total);
    const int rank = int(k) + 1;
    if (!s.rank90 && acc / total >= 0.90) s.rank90 = rank;
    if (!s.rank95 && acc / total >= 0.95) s.rank95 = rank;
    if (!s.rank99 && acc / total >= 0.99) s.rank99 = rank;
  }
  return s;
}

// 2 layers × 3 heads of one encoder stack, with statistics chosen so that:
//   L1 H2 is positional (+1, 93 of 100 queries) and rare-word (15 of 20);
//   L0 H1 is rare-word (12 of 20); L1 H0 sits exactly at the rare threshold (10 of 20: not a role);
//   L1 H1 is syntactic for nsubj dependent->head (160 of 200 arcs against the baseline's 80);
//   importance is 0 at L0 H0 and largest at L1 H2.
// `part` 0 gives every count, 1 and 2 the two halves that add up to it (for merging).
HeadReport sample_report(int part = 0) {
  auto portion = [part](int64_t n) -> int64_t { return part == 0 ? n : part == 1 ? n / 2 : n - n / 2; };
  auto portion_d = [part](double v) { return part == 0 ? v : v / 2; };  // halves of dyadic sums are exact
  HeadReport r;
  r.model = "tiny-encoder";
  r.files = {"a.txt", "b.txt"};  // every shard of a run reads the same files
  r.sentences = portion(40);
  r.tokens = portion(520);
  r.skipped = portion(2);
  r.skipped_reasons["too long"] = portion(2);
  r.settings.metrics = kAllMetrics;
  r.settings.frequency_source = "dataset";
  const int64_t offsets_other[3][2] = {{-1, 40}, {0, 30}, {1, 30}};
  const double importance[6] = {0.0, 0.25, 0.5, 0.75, 1.0, 2.5};
  const int64_t rare_hits[6] = {4, 12, 6, 10, 2, 15};
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 3; ++h) {
      const int i = l * 3 + h;
      HeadEntry e;
      e.stack = headlab::core::Stack::Encoder;
      e.layer = l;
      e.head = h;
      e.queries = portion(100);
      e.confidence_sum = portion_d(50.0 + 4 * i);  // confidence 0.5 + 0.04 i
      e.confidence_all_keys_sum = portion_d(40.0 + 4 * i);
      if (i == 5) {
        e.offsets = {{1, portion(93)}, {-1, portion(7)}};
      } else {
        for (const auto& [offset, n] : offsets_other) e.offsets[int(offset)] = portion(n);
      }
      e.rare_queries = portion(20);
      e.rare_hits = portion(rare_hits[i]);
      e.rare_two_hits = portion(18);
      e.lrp_sentences = portion(10);
      e.lrp_raw_sum = portion_d(0.5 * i);
      e.lrp_normalized_sum = portion_d(10.0 * (i + 1) / 8.0);
      e.importance_sentences = portion(10);
      e.importance_sum = portion_d(10 * importance[i]);
      e.spectrum = make_spectrum({4.0, 2.0 / (l + 1), 1.0 / (h + 1), 0.25, 1e-12});
      r.heads.push_back(e);
    }
  for (int l = 0; l < 2; ++l) {
    LayerEntry le;
    le.stack = headlab::core::Stack::Encoder;
    le.layer = l;
    le.query = make_spectrum({3, 2, 1});
    le.key = make_spectrum({3, 1, 1});
    le.product = make_spectrum({8, 4, 2, 1, 0.5, 0.01});
    r.layers.push_back(le);
  }
  RelationStats nsubj;
  nsubj.count = portion(200);
  nsubj.baseline_hits = {{-1, portion(80)}, {1, portion(50)}};
  for (int64_t n : {10, 20, 30, 40, 160, 50}) nsubj.dependent_to_head.push_back(portion(n));
  for (int64_t n : {10, 10, 10, 10, 10, 40}) nsubj.head_to_dependent.push_back(portion(n));
  r.relations[headlab::core::Stack::Encoder]["nsubj"] = nsubj;
  r.lrp_max_relative_residual = part == 2 ? 2e-4 : 5e-4;
  r.lrp_sentences_over_tolerance = 0;
  r.notes = {"importance: gradients through the gates of every head"};
  r.finalize();
  return r;
}

// RFC 4180 lines into fields (quoted fields may hold commas and doubled quotes).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear(), was_quoted = false;
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear(), was_quoted = false;
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (!field.empty() || was_quoted) rows.back().push_back(field);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

std::map<std::string, std::string> csv_row(const std::vector<std::vector<std::string>>& rows, const std::string& stack,
                                           int layer, int head) {
  const auto& header = rows.at(0);
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r].at(0) == stack && rows[r].at(1) == std::to_string(layer) && rows[r].at(2) == std::to_string(head)) {
      REQUIRE(rows[r].size() == header.size());
      std::map<std::string, std::string> out;
      for (size_t c = 0; c < header.size(); ++c) out[header[c]] = rows[r][c];
      return out;
    }
  FAIL("no CSV row for " << stack << " L" << layer << " H" << head);
  return {};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// ---- PNG pixels ----

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgb;
  const uint8_t* at(int x, int y) const { return &rgb[(size_t(y) * w + x) * 3]; }
};

Image load_png(const std::string& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 3);
  REQUIRE(data != nullptr);
  img.rgb.assign(data, data + size_t(img.w) * img.h * 3);
  stbi_image_free(data);
  return img;
}

bool near(const uint8_t* p, int r, int g, int b, int tol) {
  return std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
}

// A 4-connected region of pixels of one colour.
struct Blob {
  int count = 0, x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  double cx = 0, cy = 0;
  int width() const { return x1 - x0 + 1; }
  int height() const { return y1 - y0 + 1; }
  bool contains(double x, double y) const { return x >= x0 && x <= x1 && y >= y0 && y <= y1; }
};

std::vector<Blob> blobs(const Image& img, int r, int g, int b, int tol) {
  std::vector<uint8_t> seen(size_t(img.w) * img.h, 0);
  std::vector<Blob> out;
  for (int y = 0; y < img.h; ++y)
    for (int x = 0; x < img.w; ++x) {
      if (seen[size_t(y) * img.w + x] || !near(img.at(x, y), r, g, b, tol)) continue;
      Blob blob;
      std::vector<std::pair<int, int>> stack{{x, y}};
      seen[size_t(y) * img.w + x] = 1;
      while (!stack.empty()) {
        const auto [px, py] = stack.back();
        stack.pop_back();
        ++blob.count;
        blob.cx += px, blob.cy += py;
        blob.x0 = std::min(blob.x0, px), blob.x1 = std::max(blob.x1, px);
        blob.y0 = std::min(blob.y0, py), blob.y1 = std::max(blob.y1, py);
        const int nx[4] = {px + 1, px - 1, px, px}, ny[4] = {py, py, py + 1, py - 1};
        for (int k = 0; k < 4; ++k) {
          if (nx[k] < 0 || ny[k] < 0 || nx[k] >= img.w || ny[k] >= img.h) continue;
          auto& s = seen[size_t(ny[k]) * img.w + nx[k]];
          if (!s && near(img.at(nx[k], ny[k]), r, g, b, tol)) s = 1, stack.emplace_back(nx[k], ny[k]);
        }
      }
      blob.cx /= blob.count, blob.cy /= blob.count;
      out.push_back(blob);
    }
  std::sort(out.begin(), out.end(), [](const Blob& a, const Blob& b) { return a.count > b.count; });
  return out;
}

// matplotlib's viridis end points and the colour at 0.25.
constexpr int kTop[3] = {0xfd, 0xe7, 0x25}, kBottom[3] = {0x44, 0x01, 0x54}, kQuarter[3] = {0x3b, 0x52, 0x8b};

double svg_width_pt(const std::string& svg) {
  const auto at = svg.find("width=\"");
  REQUIRE(at != std::string::npos);
  return std::stod(svg.substr(at + 7));
}

}  // namespace

TEST_CASE("finalize derives shares and roles from the counts", "[report]") {
  const HeadReport r = sample_report();
  const HeadEntry* h = r.find(headlab::core::Stack::Encoder, 1, 2);
  REQUIRE(h);
  CHECK(h->confidence == Approx(0.70));
  CHECK(h->positional_offset == 1);
  CHECK(h->positional_share == 0.93);
  CHECK(h->positional);
  CHECK(h->rare_share == 0.75);
  CHECK(h->roles == std::vector<std::string>{"positional(+1)", "rare-word"});
  CHECK(r.find(headlab::core::Stack::Encoder, 0, 1)->roles == std::vector<std::string>{"rare-word"});
  CHECK(r.find(headlab::core::Stack::Encoder, 0, 0)->roles.empty());
  const HeadEntry* s = r.find(headlab::core::Stack::Encoder, 1, 1);
  REQUIRE(s->best_relation);
  CHECK(s->best_relation->relation == "nsubj");
  CHECK(s->best_relation->direction == "dependent->head");
  CHECK(s->best_relation->accuracy == 0.8);
  CHECK(s->best_relation->baseline == 0.4);
  CHECK(s->best_relation->baseline_offset == -1);
  CHECK(s->roles == std::vector<std::string>{"syntactic(nsubj dependent->head)"});
  CHECK(r.find(headlab::core::Stack::Encoder, 1, 2)->importance == 2.5);
}

TEST_CASE("finalize breaks offset ties towards the smaller |offset|, then the negative one", "[report]") {
  HeadReport r;
  r.settings.metrics = {"positional"};
  HeadEntry e;
  e.stack = headlab::core::Stack::Encoder;
  e.queries = 120;
  e.offsets = {{-2, 30}, {2, 30}, {1, 30}, {-1, 30}};
  r.heads.push_back(e);
  e.head = 1;
  e.offsets = {{3, 60}, {-4, 60}};
  r.heads.push_back(e);
  e.head = 2;
  e.offsets = {{2, 60}, {-2, 60}};
  r.heads.push_back(e);
  r.finalize();
  CHECK(r.heads[0].positional_offset == -1);
  CHECK(r.heads[0].positional_share == 0.25);
  CHECK(r.heads[1].positional_offset == 3);
  CHECK(r.heads[2].positional_offset == -2);
}

TEST_CASE("role thresholds: 90% at one offset is positional, exactly 50% rare is not", "[report]") {
  HeadReport r;
  r.settings.metrics = {"positional", "rare", "syntactic"};
  HeadEntry e;
  e.stack = headlab::core::Stack::Encoder;
  e.queries = 100;
  e.rare_queries = 20;
  e.offsets = {{0, 90}, {1, 10}};
  e.rare_hits = 10;
  r.heads.push_back(e);
  e.head = 1;
  e.offsets = {{0, 89}, {1, 11}};
  e.rare_hits = 11;
  r.heads.push_back(e);
  // Accuracy exactly baseline + 10 points is syntactic; one arc fewer is not.
  RelationStats obj;
  obj.count = 200;
  obj.baseline_hits = {{1, 80}};
  obj.dependent_to_head = {100, 99};
  obj.head_to_dependent = {0, 0};
  r.relations[headlab::core::Stack::Encoder]["obj"] = obj;
  r.finalize();
  CHECK(r.heads[0].positional_share == 0.9);
  CHECK(r.heads[0].positional);
  CHECK_FALSE(r.heads[0].rare);
  CHECK_FALSE(r.heads[1].positional);
  CHECK(r.heads[1].rare);
  CHECK(r.heads[0].roles == std::vector<std::string>{"positional(0)", "syntactic(obj dependent->head)"});
  CHECK(r.heads[1].roles == std::vector<std::string>{"rare-word"});
  // A measure that was not requested gives no role, whatever its counts.
  r.settings.metrics = {"rare"};
  r.finalize();
  CHECK_FALSE(r.heads[0].positional);
  CHECK(r.heads[1].rare);
}

TEST_CASE("CSV: one row per head, numbers that parse back to the derived values", "[report]") {
  const HeadReport r = sample_report();
  const std::string csv = to_csv(r);
  const auto rows = parse_csv(csv);
  REQUIRE(rows.size() == 1 + r.heads.size());
  CHECK(rows[0] == std::vector<std::string>{
                       "stack", "layer", "head", "confidence", "confidence_all_keys", "positional_offset",
                       "positional_share", "positional", "rare_share", "rare_share_two_rarest", "rare_queries",
                       "rare_word", "best_relation", "best_relation_direction", "best_relation_accuracy",
                       "best_relation_baseline", "syntactic", "lrp_raw", "lrp_normalized", "importance",
                       "spectrum_rank90", "spectrum_rank95", "spectrum_rank99", "roles"});
  auto row = csv_row(rows, "encoder", 1, 2);
  const HeadEntry& h = *r.find(headlab::core::Stack::Encoder, 1, 2);
  CHECK(std::stod(row["positional_share"]) == 0.93);
  CHECK(std::stod(row["confidence"]) == h.confidence);  // full precision
  CHECK(std::stod(row["confidence_all_keys"]) == h.confidence_all_keys);
  CHECK(std::stod(row["lrp_normalized"]) == h.lrp_normalized);
  CHECK(row["positional_offset"] == "1");
  CHECK(row["positional"] == "1");
  CHECK(row["rare_share"] == "0.75");
  CHECK(row["rare_queries"] == "20");
  CHECK(row["rare_word"] == "1");
  CHECK(row["importance"] == "2.5");
  CHECK(row["spectrum_rank90"] == std::to_string(h.spectrum->rank90));
  CHECK(row["roles"] == "positional(+1);rare-word");
  row = csv_row(rows, "encoder", 1, 1);
  CHECK(row["best_relation"] == "nsubj");
  CHECK(row["best_relation_direction"] == "dependent->head");
  CHECK(row["best_relation_accuracy"] == "0.8");
  CHECK(row["best_relation_baseline"] == "0.4");
  CHECK(row["syntactic"] == "1");
  CHECK(csv_row(rows, "encoder", 1, 0)["rare_word"] == "0");
  // The roles cell is always quoted, empty or not.
  CHECK(csv.find(",\"positional(+1);rare-word\"\n") != std::string::npos);
  CHECK(csv.find("\nencoder,0,0,") == csv.find('\n'));
  CHECK(csv.substr(csv.find('\n') + 1).find(",\"\"\n") != std::string::npos);
}

TEST_CASE("CSV: only the requested measures are columns, absent values are empty cells", "[report]") {
  HeadReport r = sample_report();
  r.settings.metrics = {"confidence", "positional"};
  r.heads[0].queries = 0;
  r.heads[0].offsets.clear();
  r.finalize();
  const auto rows = parse_csv(to_csv(r));
  CHECK(rows[0] == std::vector<std::string>{"stack", "layer", "head", "confidence", "confidence_all_keys",
                                            "positional_offset", "positional_share", "positional", "roles"});
  auto row = csv_row(rows, "encoder", 0, 0);
  CHECK(row["confidence"].empty());
  CHECK(row["positional_share"].empty());
  CHECK(row["positional"] == "0");
  // A field holding a comma or a quote is quoted with the quote doubled (RFC 4180).
  r.heads[1].roles = {"enc,\"x\""};
  const std::string csv = to_csv(r);
  CHECK(csv.find(",\"enc,\"\"x\"\"\"\n") != std::string::npos);
  CHECK(csv_row(parse_csv(csv), "encoder", 0, 1)["roles"] == "enc,\"x\"");
  CHECK(csv_row(parse_csv(csv), "encoder", 0, 1)["confidence"] == "0.54");
}

TEST_CASE("a zero or negligible key-query form gets no energy ranks in the CSV, the Markdown or the evidence", "[report]") {
  HeadReport r = sample_report();
  // L0 H1's form decayed to nothing beside its layer's (σ_1 = 4.0), L0 H2's is zero; L1 H0's is
  // small but real (1e-3 of the layer's largest).
  r.heads[1].spectrum = make_spectrum({4e-10, 1e-11});
  r.heads[2].spectrum = make_spectrum({0, 0});
  r.heads[3].spectrum = make_spectrum({4e-3, 1e-3});
  r.finalize();
  CHECK(r.heads[1].spectrum->negligible);
  CHECK(r.heads[2].spectrum->negligible);
  CHECK(!r.heads[3].spectrum->negligible);
  CHECK(!r.heads[0].spectrum->negligible);
  const auto rows = parse_csv(to_csv(r));
  for (int head : {1, 2}) {
    INFO("L0 H" << head);
    CHECK(csv_row(rows, "encoder", 0, head)["spectrum_rank90"].empty());
    CHECK(csv_row(rows, "encoder", 0, head)["spectrum_rank99"].empty());
  }
  CHECK(csv_row(rows, "encoder", 0, 0)["spectrum_rank90"] == std::to_string(r.heads[0].spectrum->rank90));
  CHECK(csv_row(rows, "encoder", 1, 0)["spectrum_rank90"] == std::to_string(r.heads[3].spectrum->rank90));
  const std::string md = to_markdown(r);
  CHECK(md.find("| encoder | 0 | 1 |  |  |  | zero or negligible form (σ_1 = 4e-10) |") != std::string::npos);
  // The Head detail's evidence says why there is no curve instead of drawing one.
  const Measure* spectra = find_measure("spectra");
  REQUIRE(spectra);
  const auto evidence = spectra->evidence(r.heads[1], r.settings);
  REQUIRE(evidence.size() == 1);
  CHECK(evidence[0].kind == Evidence::Kind::text);
  CHECK_THAT(evidence[0].text, Catch::Contains("zero or negligible"));
  REQUIRE(!spectra->evidence(r.heads[0], r.settings).empty());
  CHECK(spectra->evidence(r.heads[0], r.settings)[0].kind == Evidence::Kind::curve);
  // Read back, the report knows the same.
  const auto back = head_report_from_json(to_json(r));
  CHECK(back.heads[1].spectrum->negligible);
  CHECK(!back.heads[0].spectrum->negligible);
}

TEST_CASE("a column's colour scale: its fixed range, else its values' with zero in it", "[report]") {
  const HeadReport r = sample_report();
  std::map<std::string, ReportColumn> columns;
  for (const auto& c : all_report_columns()) columns.emplace(c.name, c);
  // Shares and scores in [0, 1] keep that range however small the values: a head at 0.01 is not hot.
  for (const char* share : {"confidence", "positional_share", "rare_share", "sink", "prev_token", "induction",
                            "duplicate_token", "best_relation_accuracy"}) {
    INFO(share);
    REQUIRE(columns.count(share));
    CHECK(colour_scale(columns.at(share), 0.0, 0.0108) == std::pair<double, double>{0.0, 1.0});
  }
  CHECK(colour_scale(columns.at("copying"), -0.2, 0.3) == std::pair<double, double>{-1.0, 1.0});
  // Unbounded measures span their values, with zero in the scale.
  CHECK(colour_scale(columns.at("distance"), 2.0, 12.0) == std::pair<double, double>{0.0, 12.0});
  CHECK(colour_scale(columns.at("lrp_normalized"), -0.217, 0.237) == std::pair<double, double>{-0.217, 0.237});
  CHECK(colour_scale(columns.at("importance"), 0.0, 0.0) == std::pair<double, double>{0.0, 1.0});
  CHECK(colour_scale(columns.at("distance"), INFINITY, -INFINITY) == std::pair<double, double>{0.0, 1.0});
}

TEST_CASE("Markdown: roles first, then data, thresholds and the tables", "[report]") {
  HeadReport r = sample_report();
  r.partial = true;
  const std::string md = to_markdown(r);
  const auto roles_at = md.find("- L1 H2 (encoder): positional(+1) — 93.0% of queries\n");
  REQUIRE(roles_at != std::string::npos);
  CHECK(md.find("- L1 H2 (encoder): rare-word — 75.0% of 20 queries") != std::string::npos);
  CHECK(md.find("- L0 H1 (encoder): rare-word — 60.0%") != std::string::npos);
  CHECK(md.find("- L1 H1 (encoder): syntactic(nsubj dependent->head) — 80.0% of 200 arcs vs baseline 40.0% (offset -1)") !=
        std::string::npos);
  CHECK(md.find("L1 H0 (encoder): rare-word") == std::string::npos);
  CHECK(roles_at < md.find("## Data"));
  CHECK(md.find("## Data") < md.find("## Thresholds"));
  CHECK(md.find("- sentences: 40, tokens: 520, skipped: 2 (too long: 2)") != std::string::npos);
  CHECK(md.find("- frequency source: dataset") != std::string::npos);
  CHECK(md.find("- partial: yes") != std::string::npos);
  CHECK(md.find("≥ 90.0% of queries") != std::string::npos);
  CHECK(md.find("> 50.0% of queries") != std::string::npos);
  CHECK(md.find("this threshold is HeadLab's") != std::string::npos);
  CHECK(md.find("accuracy ≥ baseline + 10 points") != std::string::npos);
  CHECK(md.find("| encoder | nsubj | dependent->head | L1 H1 | 80.0% | 40.0% | -1 | 200 | yes |") != std::string::npos);
  CHECK(md.find("| encoder | nsubj | head->dependent | L1 H2 | 20.0% | 40.0% | +1 | 200 | no |") != std::string::npos);
  const Spectrum& sp = *r.find(headlab::core::Stack::Encoder, 0, 2)->spectrum;
  CHECK(md.find("| encoder | 0 | 2 | " + std::to_string(sp.rank90) + " | " + std::to_string(sp.rank95) + " | " +
                std::to_string(sp.rank99) + " | 5 |") != std::string::npos);
  // Query σ = 3, 2, 1 holds 9/14 ≈ 64%, 13/14 ≈ 93%, 100% of the energy; key σ = 3, 1, 1: 82%, 91%, 100%.
  const Spectrum& product = r.layers[1].product;
  CHECK(md.find("| encoder | 1 | 2 / 3 / 3 | 2 / 3 / 3 | " + std::to_string(product.rank90) + " / " +
                std::to_string(product.rank95) + " / " + std::to_string(product.rank99) + " |") != std::string::npos);
  CHECK(md.find("- max relative residual: 0.0005") != std::string::npos);
  CHECK(md.find("- sentences over tolerance (0.001 · |f|): 0") != std::string::npos);
  CHECK(md.find("- importance: gradients through the gates of every head") != std::string::npos);
  // Measures not requested have no section.
  r.settings.metrics = {"confidence"};
  r.relations.clear();
  r.finalize();
  const std::string small = to_markdown(r);
  CHECK(small.find("## Key-query spectra") == std::string::npos);
  CHECK(small.find("## Syntactic heads") == std::string::npos);
  CHECK(small.find("No head reaches a role threshold.") != std::string::npos);
}

TEST_CASE("JSON round trip keeps every number", "[report]") {
  const HeadReport r = sample_report();
  const nlohmann::json j = to_json(r);
  const HeadReport back = head_report_from_json(j);
  CHECK(to_json(back) == j);
  CHECK(to_csv(back) == to_csv(r));
  CHECK(to_markdown(back) == to_markdown(r));
}

TEST_CASE("merging two half reports gives the report of the summed counts", "[report]") {
  HeadReport first = sample_report(1);
  HeadReport half = sample_report(2);
  half.settings.shard_index = 1;
  half.settings.shard_count = 2;
  first.settings.shard_count = 2;
  CHECK(first.find(headlab::core::Stack::Encoder, 1, 2)->positional_share != 0.93);  // 46 of 50: the halves differ from the whole
  HeadReport merged = merge_shards({first, half});
  const HeadReport whole = sample_report();
  CHECK(to_json(merged) == to_json(whole));
  HeadReport other = sample_report(2);
  other.model = "another";
  CHECK_THROWS_WITH(merge_into(merged, other), Catch::Contains("model"));
}

TEST_CASE("report figures: every file, titles, colours and layout read back from the PNGs", "[report]") {
  test::TempDir dir("report-figures");
  const HeadReport r = sample_report();
  ExampleMap map;
  map.stack = headlab::core::Stack::Encoder;
  map.layer = 1;
  map.head = 2;
  map.tokens = {"[CLS]", "the", "cat", "sat", "down", "[SEP]"};
  map.why = "highest normalised LRP relevance";
  const int T = 6;
  for (int q = 0; q < T; ++q)
    for (int k = 0; k < T; ++k) map.weights.push_back(q == k ? 0.7f : 0.06f);
  const auto written = write_report_figures(r, {map}, dir.str("figures"));

  std::set<std::string> expected;
  for (const std::string name :
       {"grid_confidence", "grid_positional_share", "grid_rare_share", "grid_best_relation_gain", "grid_lrp_normalized",
        "grid_importance", "syntactic_baselines", "spectra", "map_encoder_L1_H2"})
    for (const std::string ext : {".svg", ".png"}) expected.insert(name + ext);
  CHECK(std::set<std::string>(written.begin(), written.end()) == expected);
  for (const auto& f : expected) {
    INFO(f);
    CHECK(std::filesystem::file_size(dir.str("figures/" + f)) > 500);
  }

  SECTION("a report written over another leaves none of the other's figures, and the user's files") {
    write_text(dir.str("figures/my_notes.txt"), "mine");
    write_text(dir.str("figures/grid_old_measure.pdf"), "a PDF HeadLab's reports never write");
    HeadReport fewer = r;
    fewer.settings.metrics = {"confidence"};
    const auto again = write_report_figures(fewer, {}, dir.str("figures"));
    std::set<std::string> left;
    for (const auto& entry : std::filesystem::directory_iterator(dir.str("figures"))) left.insert(entry.path().filename().string());
    std::set<std::string> expected_left(again.begin(), again.end());
    expected_left.insert({"my_notes.txt", "grid_old_measure.pdf"});
    CHECK(left == expected_left);
    CHECK(left.count("map_encoder_L1_H2.svg") == 0);
    CHECK(left.count("spectra.png") == 0);
  }

  SECTION("SVG: a well-formed page titled as the figure, the PNG at twice its size") {
    const std::string svg = read_text(dir.str("figures/grid_importance.svg"));
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(svg.find("<title>Importance: mean |∂loss/∂gate|</title>") != std::string::npos);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(load_png(dir.str("figures/grid_importance.png")).w == int(std::lround(2 * svg_width_pt(svg))));
    const std::string map_svg = read_text(dir.str("figures/map_encoder_L1_H2.svg"));
    CHECK(map_svg.find("<title>L1 H2 — highest normalised LRP relevance</title>") != std::string::npos);
    CHECK(map_svg.find("<image") == std::string::npos);  // a sentence's map: cells as rectangles, sharp in any viewer
    CHECK(read_text(dir.str("figures/spectra.svg")).find("<title>Key-query spectra") != std::string::npos);
  }

  SECTION("grid: white page, the largest value in viridis' top colour at L1 H2, zero in its bottom colour at L0 H0") {
    const Image img = load_png(dir.str("figures/grid_importance.png"));
    CHECK(near(img.at(0, 0), 255, 255, 255, 0));
    CHECK(near(img.at(img.w - 1, img.h - 1), 255, 255, 255, 0));
    const auto top = blobs(img, kTop[0], kTop[1], kTop[2], 6);
    const auto bottom = blobs(img, kBottom[0], kBottom[1], kBottom[2], 6);
    REQUIRE(!top.empty());
    REQUIRE(!bottom.empty());
    const Blob& max_cell = top[0];
    const Blob& zero_cell = bottom[0];
    // Cells are squares; the next blob of the top colour (the colour bar's end) is far smaller.
    CHECK(max_cell.count > 1000);
    CHECK(double(max_cell.width()) / max_cell.height() == Approx(1).epsilon(0.1));
    CHECK(double(zero_cell.width()) / zero_cell.height() == Approx(1).epsilon(0.1));
    if (top.size() > 1) CHECK(top[1].count < max_cell.count / 4);
    // Heads run across and layers down: L1 H2 is two cells right and one down of L0 H0.
    const double dx = max_cell.cx - zero_cell.cx, dy = max_cell.cy - zero_cell.cy;
    CHECK(dy > max_cell.height() * 0.8);
    CHECK(dx == Approx(2 * dy).epsilon(0.05));
    // Heads with a role (L1 H2) are outlined in red; L0 H0 has none.
    const auto red = blobs(img, 214, 38, 41, 40);
    CHECK(std::any_of(red.begin(), red.end(), [&](const Blob& b) { return b.contains(max_cell.cx, max_cell.cy); }));
    CHECK_FALSE(
        std::any_of(red.begin(), red.end(), [&](const Blob& b) { return b.contains(zero_cell.cx, zero_cell.cy); }));
  }

  SECTION("map: the diagonal in the top colour, cell by cell down and to the right; off-diagonal darker") {
    const Image img = load_png(dir.str("figures/map_encoder_L1_H2.png"));
    CHECK(near(img.at(0, 0), 255, 255, 255, 0));
    auto top = blobs(img, kTop[0], kTop[1], kTop[2], 6);
    REQUIRE(top.size() >= size_t(T));
    top.resize(T);
    std::sort(top.begin(), top.end(), [](const Blob& a, const Blob& b) { return a.cy < b.cy; });
    const double step = top[1].cy - top[0].cy;
    CHECK(step > 8);
    for (int i = 1; i < T; ++i) {
      CHECK(top[i].count == Approx(top[0].count).epsilon(0.1));
      CHECK(top[i].cx - top[i - 1].cx == Approx(step).epsilon(0.05));
      CHECK(top[i].cy - top[i - 1].cy == Approx(step).epsilon(0.05));
    }
    // Query 0's weight on key 1 (right of the first diagonal cell) is near the bottom of the scale.
    const uint8_t* off = img.at(int(top[1].cx), int(top[0].cy));
    CHECK(off[0] < 100);
    CHECK(off[2] > 90);
  }

  SECTION("syntactic bars: the best head's accuracy twice the baseline's height for nsubj dependent->head") {
    const Image img = load_png(dir.str("figures/syntactic_baselines.png"));
    const auto accuracy = blobs(img, kQuarter[0], kQuarter[1], kQuarter[2], 4);
    const auto baseline = blobs(img, 176, 176, 176, 3);
    REQUIRE(accuracy.size() >= 2);
    REQUIRE(baseline.size() >= 2);
    auto by_height = [](std::vector<Blob> v) {
      std::sort(v.begin(), v.end(), [](const Blob& a, const Blob& b) { return a.height() > b.height(); });
      return v;
    };
    const auto acc = by_height(accuracy), base = by_height(baseline);
    CHECK(double(acc[0].height()) / base[0].height() == Approx(0.8 / 0.4).epsilon(0.02));
    CHECK(double(acc[1].height()) / base[1].height() == Approx(0.2 / 0.4).epsilon(0.04));
    CHECK(base[0].height() == base[1].height());
    // Bars stand on a common axis.
    CHECK(std::abs(acc[0].y1 - base[0].y1) <= 1);
    CHECK(acc[0].cx < acc[1].cx);  // dependent->head first
  }
}

TEST_CASE("report figures: one grid per stack, nothing for absent measures", "[report]") {
  test::TempDir dir("report-figures-stacks");
  HeadReport r = sample_report();
  r.settings.metrics = {"confidence"};
  for (auto h : std::vector<HeadEntry>(r.heads)) {
    h.stack = headlab::core::Stack::Decoder;
    r.heads.push_back(h);
  }
  r.finalize();
  const auto written = write_report_figures(r, {}, dir.str());
  CHECK(std::set<std::string>(written.begin(), written.end()) ==
        std::set<std::string>{"grid_confidence_encoder.svg", "grid_confidence_encoder.png",
                              "grid_confidence_decoder.svg", "grid_confidence_decoder.png"});
  CHECK(read_text(dir.str("grid_confidence_decoder.svg")).find("(decoder)</title>") != std::string::npos);
  ExampleMap bad;
  bad.tokens = {"a", "b"};
  bad.weights = {1, 0, 0};
  CHECK_THROWS_WITH(write_report_figures(r, {bad}, dir.str()), Catch::Contains("3 weights for 2 tokens"));
}
