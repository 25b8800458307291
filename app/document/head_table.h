// The window's head table without the window: one row per head of a report (report.heads), the
// columns of head_report.csv (analysis/report_columns.h, so the table and the CSV cannot drift),
// sorting, filtering by role, role badges, and roles re-derived under other thresholds from the
// stored counts (no re-run). Torch-free and ImGui-free.
#pragma once

#include "analysis/head_report.h"
#include "analysis/report_columns.h"

#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

// The table's column names: exactly head_report.csv's header for this report's measures.
std::vector<std::string> head_table_columns(const analysis::HeadReport& report);

// One cell of row `row` (an index into report.heads). Throws std::invalid_argument for a column the
// report does not have (naming those it has) and std::out_of_range for a row outside the report.
// A view drawing every cell walks analysis::report_columns(report.settings) once and calls each
// column's cell() instead of looking columns up by name.
analysis::ReportCell head_table_cell(const analysis::HeadReport& report, int row, const std::string& column);
// The cell's number (integer and real columns); nullopt for text and for nothing measured.
std::optional<double> head_table_value(const analysis::HeadReport& report, int row, const std::string& column);
// The cell as the table shows it: integers exactly, reals to 4 significant digits, text as is,
// "" for nothing measured.
std::string head_table_text(const analysis::ReportCell& cell);

// Every row, 0 … heads − 1.
std::vector<int> all_rows(const analysis::HeadReport& report);
// `rows` ordered by `column`: numbers as numbers, text as text; a stable sort (ties keep their
// order in `rows`), with blank cells (nothing measured, empty text) last in either direction.
// Throws std::invalid_argument naming the known columns for an unknown one.
std::vector<int> sorted_rows(const analysis::HeadReport& report, const std::vector<int>& rows, const std::string& column,
                             bool descending);
std::vector<int> sorted_rows(const analysis::HeadReport& report, const std::string& column, bool descending);

// Which roles a row must have.
enum class RoleFilter { any, some, positional, syntactic, rare_word, none };
// "any", "some role", "positional", "syntactic", "rare-word", "no role" (the filter menu's items).
const char* role_filter_name(RoleFilter filter);
// The inverse of role_filter_name (also "rare" and "none"); throws std::invalid_argument otherwise.
RoleFilter role_filter_from_name(const std::string& name);

struct HeadFilter {
  RoleFilter role = RoleFilter::any;
  std::string text;   // case-insensitive substring of one of the head's roles or badges ("nsubj", "+1"); "" = any
  int layer = -1;     // -1 = any layer
  std::optional<core::Stack> stack;  // empty = any stack
};
bool head_matches(const analysis::HeadEntry& head, const HeadFilter& filter);
// The rows that match, in report order.
std::vector<int> filtered_rows(const analysis::HeadReport& report, const HeadFilter& filter);

// A short label for one role of a head, with the evidence behind it for a tooltip.
struct RoleBadge {
  RoleFilter kind = RoleFilter::positional;  // positional, syntactic or rare_word
  std::string label;   // "pos −1", "nsubj d→h", "rare"
  std::string detail;  // "positional: 93.0% of queries at offset −1"
};
// The head's roles as badges: positional first, then rare-word, then each syntactic relation (the
// order of HeadEntry::roles).
std::vector<RoleBadge> role_badges(const analysis::HeadEntry& head);

// The report with its roles re-derived under other thresholds, from the stored counts (no re-run):
// takes positional_threshold, rare_threshold, syntactic_margin, min_relation_count and
// always_relations from `thresholds`; the settings that shaped the counts themselves (metrics,
// rare_min_rank, baseline offsets, subtypes, stage, files) stay the report's.
analysis::HeadReport with_thresholds(const analysis::HeadReport& report, const analysis::ReportSettings& thresholds);

// The table as shown (filtered, sorted: `rows`) in head_report.csv's format and columns.
std::string table_to_csv(const analysis::HeadReport& report, const std::vector<int>& rows);

}  // namespace headlab::app
