// The head table and head detail logic on a hand-made report: columns equal to head_report.csv's,
// sorting, filtering, role badges, roles re-derived under other thresholds, and the detail view's
// offset histogram and relation bars.
#include "test_common.h"

#include "sample_report.h"

#include "analysis/head_report.h"
#include "analysis/report_columns.h"
#include "analysis/head_evidence.h"
#include "app/document/head_table.h"

#include <numeric>
#include <sstream>

using namespace headlab;
using namespace headlab::app;

namespace {

std::vector<std::string> csv_lines(const std::string& csv) {
  std::vector<std::string> lines;
  std::stringstream in(csv);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

// 2 layers × 3 heads of one encoder, 100 queries each (L1 H2: none), chosen so that:
//   L0 H0 is positional (−1, 95%); L0 H1 is positional (+1, 92%);
//   L0 H2 is rare-word (15 of 20); L1 H0 is syntactic (nsubj dependent->head, 80% against 40%);
//   L1 H1 has no role; L1 H2 measured nothing.
// Confidence: 0.5, 0.8, 0.2, 0.7, 0.6 and none.
analysis::HeadReport sample() {
  const std::map<int, int64_t> offsets[6] = {
      {{-1, 95}, {0, 5}}, {{1, 92}, {2, 8}}, {{-2, 30}, {0, 40}, {3, 30}}, {{0, 50}, {1, 50}}, {{-1, 60}, {1, 40}}, {}};
  const double confidence[6] = {50, 80, 20, 70, 60, 0};
  const int64_t rare_hits[6] = {4, 2, 15, 6, 8, 0};
  auto r = test::sample_report({"confidence", "positional", "rare", "syntactic"}, offsets, confidence);
  r.files = {"x.conllu"};
  for (int i = 0; i < 6; ++i) {
    r.heads[i].rare_queries = i == 5 ? 0 : 20;
    r.heads[i].rare_hits = r.heads[i].rare_two_hits = rare_hits[i];
  }
  r.finalize();
  return r;
}

HeadFilter role_only(RoleFilter role) {
  HeadFilter f;
  f.role = role;
  return f;
}

}  // namespace

TEST_CASE("the sample report has the roles the table tests rely on", "[head-table]") {
  const auto r = sample();
  CHECK(r.heads[0].roles == std::vector<std::string>{"positional(-1)"});
  CHECK(r.heads[1].roles == std::vector<std::string>{"positional(+1)"});
  CHECK(r.heads[2].roles == std::vector<std::string>{"rare-word"});
  CHECK(r.heads[3].roles == std::vector<std::string>{"syntactic(nsubj dependent->head)"});
  CHECK(r.heads[4].roles.empty());
  CHECK(r.heads[5].roles.empty());
}

TEST_CASE("the head table's columns are head_report.csv's header", "[head-table]") {
  auto r = sample();
  const auto columns = head_table_columns(r);
  CHECK(columns == split(csv_lines(analysis::to_csv(r))[0]));
  CHECK(columns.front() == "stack");
  CHECK(columns.back() == "roles");
  CHECK(std::count(columns.begin(), columns.end(), "positional_share") == 1);
  CHECK(std::count(columns.begin(), columns.end(), "lrp_raw") == 0);  // not measured
  r.settings.metrics.push_back("lrp");
  CHECK(head_table_columns(r) == split(csv_lines(analysis::to_csv(r))[0]));
  CHECK(head_table_columns(r).size() == columns.size() + 2);
}

TEST_CASE("head table cells: numbers, text, and empty where nothing was measured", "[head-table]") {
  const auto r = sample();
  CHECK(head_table_value(r, 0, "positional_share") == 0.95);
  CHECK(head_table_value(r, 0, "positional_offset") == -1.0);
  CHECK(head_table_value(r, 1, "confidence") == 0.8);
  CHECK(head_table_cell(r, 3, "best_relation").text == "nsubj");
  CHECK_FALSE(head_table_value(r, 3, "best_relation"));  // text has no number
  CHECK(head_table_cell(r, 5, "confidence").empty());
  CHECK(head_table_text(head_table_cell(r, 5, "confidence")).empty());
  CHECK(head_table_text(head_table_cell(r, 1, "positional_offset")) == "1");
  CHECK(head_table_text(head_table_cell(r, 0, "positional_share")) == "0.95");
  CHECK(head_table_text(head_table_cell(r, 2, "roles")) == "rare-word");
  // The table's text parses to the same number the CSV holds.
  const auto row = split(csv_lines(analysis::to_csv(r))[2]);
  const auto columns = head_table_columns(r);
  const size_t share = size_t(std::find(columns.begin(), columns.end(), "positional_share") - columns.begin());
  CHECK(std::stod(row[share]) == *head_table_value(r, 1, "positional_share"));
  CHECK_THROWS_AS(head_table_cell(r, 6, "confidence"), std::out_of_range);
}

TEST_CASE("sorting is stable, numeric for numbers, and puts empty cells last", "[head-table]") {
  const auto r = sample();
  CHECK(sorted_rows(r, "confidence", true) == std::vector<int>{1, 3, 4, 0, 2, 5});
  CHECK(sorted_rows(r, "confidence", false) == std::vector<int>{2, 0, 4, 3, 1, 5});
  // Ties keep their order in either direction.
  CHECK(sorted_rows(r, "layer", false) == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(sorted_rows(r, "layer", true) == std::vector<int>{3, 4, 5, 0, 1, 2});
  // Numbers compare as numbers (−1 < 0 < 1); L1 H0's tie between 0 and +1 counts as 0.
  CHECK(sorted_rows(r, "positional_offset", false) == std::vector<int>{0, 4, 2, 3, 1, 5});
  // Text compares as text ('+' before '-'); heads without roles stay last either way.
  CHECK(sorted_rows(r, "roles", false) == std::vector<int>{1, 0, 2, 3, 4, 5});
  CHECK(sorted_rows(r, "roles", true) == std::vector<int>{3, 2, 0, 1, 4, 5});
  // A subset keeps to its rows.
  CHECK(sorted_rows(r, {4, 0, 1}, "confidence", true) == std::vector<int>{1, 4, 0});
}

TEST_CASE("an unknown sort column is refused, naming the columns there are", "[head-table]") {
  const auto r = sample();
  try {
    sorted_rows(r, "lrp_raw", true);  // a real column, but not of this report's measures
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("'lrp_raw'") != std::string::npos);
    CHECK(what.find("positional_share") != std::string::npos);
    CHECK(what.find("roles") != std::string::npos);
  }
  CHECK_THROWS_AS(head_table_value(r, 0, "nope"), std::invalid_argument);
}

TEST_CASE("filters by role kind, role text, layer and stack", "[head-table]") {
  const auto r = sample();
  auto rows = [&r](RoleFilter role, std::string text = "", int layer = -1,
                   std::optional<headlab::core::Stack> stack = std::nullopt) {
    HeadFilter f;
    f.role = role;
    f.text = std::move(text);
    f.layer = layer;
    f.stack = stack;
    return filtered_rows(r, f);
  };
  CHECK(rows(RoleFilter::any) == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK(rows(RoleFilter::positional) == std::vector<int>{0, 1});
  CHECK(rows(RoleFilter::rare_word) == std::vector<int>{2});
  CHECK(rows(RoleFilter::syntactic) == std::vector<int>{3});
  CHECK(rows(RoleFilter::some) == std::vector<int>{0, 1, 2, 3});
  CHECK(rows(RoleFilter::none) == std::vector<int>{4, 5});
  CHECK(rows(RoleFilter::any, "NSUBJ") == std::vector<int>{3});
  CHECK(rows(RoleFilter::any, "+1") == std::vector<int>{1});
  CHECK(rows(RoleFilter::any, "d\u2192h") == std::vector<int>{3});  // a badge's label
  CHECK(rows(RoleFilter::any, "", 1) == std::vector<int>{3, 4, 5});
  CHECK(rows(RoleFilter::none, "", 1) == std::vector<int>{4, 5});
  CHECK(rows(RoleFilter::any, "", -1, headlab::core::Stack::Decoder).empty());
  CHECK(rows(RoleFilter::any, "", -1, headlab::core::Stack::Encoder).size() == 6);
  CHECK(role_filter_from_name(role_filter_name(RoleFilter::rare_word)) == RoleFilter::rare_word);
  CHECK(role_filter_from_name("none") == RoleFilter::none);
  CHECK_THROWS_AS(role_filter_from_name("loud"), std::invalid_argument);
}

TEST_CASE("role badges are short labels with the evidence behind them", "[head-table]") {
  const auto r = sample();
  const auto pos = role_badges(r.heads[0]);
  REQUIRE(pos.size() == 1);
  CHECK(pos[0].kind == RoleFilter::positional);
  CHECK(pos[0].label == "pos \u22121");
  CHECK(pos[0].detail.find("95.0%") != std::string::npos);
  CHECK(role_badges(r.heads[1])[0].label == "pos +1");
  CHECK(role_badges(r.heads[2])[0].label == "rare");
  CHECK(role_badges(r.heads[2])[0].detail.find("75.0% of 20 queries") != std::string::npos);
  const auto syn = role_badges(r.heads[3]);
  REQUIRE(syn.size() == 1);
  CHECK(syn[0].kind == RoleFilter::syntactic);
  CHECK(syn[0].label == "nsubj d\u2192h");
  CHECK(syn[0].detail.find("80.0% of 200 arcs") != std::string::npos);
  CHECK(syn[0].detail.find("40.0%") != std::string::npos);
  CHECK(role_badges(r.heads[4]).empty());
}

TEST_CASE("other thresholds re-derive the roles from the stored counts", "[head-table]") {
  const auto r = sample();
  analysis::ReportSettings t = r.settings;
  t.positional_threshold = 0.93;  // above L0 H1's 92%, below L0 H0's 95%
  const auto stricter = with_thresholds(r, t);
  CHECK(stricter.heads[0].positional);
  CHECK_FALSE(stricter.heads[1].positional);
  CHECK(stricter.heads[1].roles.empty());
  CHECK(stricter.heads[1].positional_share == 0.92);  // the measure itself is unchanged
  CHECK(stricter.heads[1].offsets == r.heads[1].offsets);
  CHECK(r.heads[1].positional);  // the original report is untouched
  CHECK(filtered_rows(stricter, role_only(RoleFilter::positional)) == std::vector<int>{0});
  CHECK(head_table_value(stricter, 1, "positional") == 0.0);
  // The CSV is the one finalize() gives under those thresholds.
  auto by_hand = r;
  by_hand.settings.positional_threshold = 0.93;
  by_hand.finalize();
  CHECK(analysis::to_csv(stricter) == analysis::to_csv(by_hand));
  CHECK(analysis::to_csv(stricter) != analysis::to_csv(r));

  t = r.settings;
  t.syntactic_margin = 0.5;  // L1 H0 is 40 points above its baseline
  t.rare_threshold = 0.25;   // L1 H0's 30% and L1 H1's 40% now count
  t.rare_min_rank = 1;       // shaped the counts: not taken
  const auto other = with_thresholds(r, t);
  CHECK(filtered_rows(other, role_only(RoleFilter::syntactic)).empty());
  CHECK(filtered_rows(other, role_only(RoleFilter::rare_word)) == std::vector<int>{2, 3, 4});
  CHECK(other.settings.rare_min_rank == r.settings.rare_min_rank);
  CHECK(other.settings.rare_threshold == 0.25);
}

TEST_CASE("the table exports as head_report.csv restricted to its rows, in their order", "[head-table]") {
  const auto r = sample();
  const auto full = csv_lines(analysis::to_csv(r));
  CHECK(table_to_csv(r, all_rows(r)) == analysis::to_csv(r));
  const auto rows = sorted_rows(r, filtered_rows(r, role_only(RoleFilter::some)), "confidence", true);
  REQUIRE(rows == std::vector<int>{1, 3, 0, 2});
  const auto table = csv_lines(table_to_csv(r, rows));
  REQUIRE(table.size() == 5);
  CHECK(table[0] == full[0]);
  for (size_t i = 0; i < rows.size(); ++i) CHECK(table[i + 1] == full[size_t(rows[i]) + 1]);
  CHECK_THROWS_AS(table_to_csv(r, {7}), std::out_of_range);
}

TEST_CASE("head detail: the argmax-offset histogram as shares, ordered by offset", "[head-table]") {
  const auto r = sample();
  const auto bars = offset_histogram(r.heads[2]);
  REQUIRE(bars.size() == 3);
  CHECK(bars[0].offset == -2);
  CHECK(bars[1].offset == 0);
  CHECK(bars[2].offset == 3);
  CHECK(bars[1].share == 0.4);
  CHECK(bars[2].queries == 30);
  CHECK_FALSE(bars[2].beyond);
  // Gathering offsets past ±2 into one bar at +3.
  const auto clipped = offset_histogram(r.heads[2], 2);
  REQUIRE(clipped.size() == 3);
  CHECK(clipped[2].beyond);
  CHECK(clipped[2].offset == 3);
  CHECK(clipped[2].share == 0.3);
  const auto tight = offset_histogram(r.heads[2], 1);
  REQUIRE(tight.size() == 3);
  CHECK(tight[0].beyond);
  CHECK(tight[0].offset == -2);
  double total = 0;
  for (const auto& b : tight) total += b.share;
  CHECK(total == Approx(1.0));
  CHECK(offset_histogram(r.heads[5]).empty());  // no queries
}

TEST_CASE("head detail: relation accuracies beside their baselines", "[head-table]") {
  const auto r = sample();
  const auto bars = relation_bars(r.heads[3]);
  REQUIRE(bars.size() == 2);
  CHECK(bars[0].label == "nsubj d\u2192h");
  CHECK(bars[0].accuracy == 0.8);
  CHECK(bars[0].baseline == 0.4);
  CHECK(bars[0].baseline_offset == -1);
  CHECK(bars[0].count == 200);
  CHECK(bars[0].is_role);
  CHECK(bars[1].label == "nsubj h\u2192d");
  CHECK(bars[1].accuracy == 0.05);
  CHECK(bars[1].baseline_offset == 1);  // the same offset, read from the other end
  CHECK_FALSE(bars[1].is_role);
  // L0 H2 finds more arcs from the head's row (45%) than from the dependent's (30%).
  CHECK(relation_bars(r.heads[2])[0].direction == "dependent->head");
  const auto by_gain = relation_bars(r.heads[2], true);
  REQUIRE(by_gain.size() == 2);
  CHECK(by_gain[0].direction == "head->dependent");
  CHECK(by_gain[0].accuracy == 0.45);
  CHECK(by_gain[0].gain() > by_gain[1].gain());
}
