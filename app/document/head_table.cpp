#include "app/document/head_table.h"
#include "analysis/measure.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace headlab::app {
namespace {

using analysis::HeadEntry;
using analysis::HeadReport;
using analysis::ReportCell;
using analysis::ReportColumn;

ReportColumn find_column(const HeadReport& report, const std::string& name) {
  const auto columns = analysis::report_columns(report.settings);
  for (const auto& c : columns)
    if (name == c.name) return c;
  std::string known;
  for (const auto& c : columns) known += (known.empty() ? "" : ", ") + std::string(c.name);
  throw std::invalid_argument("unknown head table column '" + name + "' (this report has: " + known + ")");
}

const HeadEntry& entry(const HeadReport& report, int row) {
  if (row < 0 || static_cast<size_t>(row) >= report.heads.size())
    throw std::out_of_range("head row " + std::to_string(row) + " is outside the report's " +
                            std::to_string(report.heads.size()) + " heads");
  return report.heads[size_t(row)];
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Offsets as the window writes them: a sign always, and a real minus sign (U+2212) below zero.
std::string signed_offset(int offset) {
  if (offset < 0) return "\u2212" + std::to_string(-offset);
  return (offset > 0 ? "+" : "") + std::to_string(offset);
}

std::string percent(double share) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f%%", 100.0 * share);
  return s;
}

bool has_syntactic_role(const HeadEntry& h) {
  return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const auto& s) { return s.is_role; });
}

}  // namespace

std::vector<std::string> head_table_columns(const HeadReport& report) {
  std::vector<std::string> names;
  for (const auto& c : analysis::report_columns(report.settings)) names.emplace_back(c.name);
  return names;
}

ReportCell head_table_cell(const HeadReport& report, int row, const std::string& column) {
  const ReportColumn c = find_column(report, column);
  return c.cell(entry(report, row));
}

std::optional<double> head_table_value(const HeadReport& report, int row, const std::string& column) {
  return head_table_cell(report, row, column).number();
}

std::string head_table_text(const ReportCell& cell) {
  switch (cell.kind) {
    case ReportCell::Kind::empty: return "";
    case ReportCell::Kind::integer: return std::to_string(cell.integer);
    case ReportCell::Kind::text: return cell.text;
    case ReportCell::Kind::real: break;
  }
  char s[40];
  std::snprintf(s, sizeof s, "%.4g", cell.real);
  return s;
}

std::vector<int> all_rows(const HeadReport& report) {
  std::vector<int> rows(report.heads.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int>(i);
  return rows;
}

std::vector<int> sorted_rows(const HeadReport& report, const std::vector<int>& rows, const std::string& column,
                             bool descending) {
  const ReportColumn c = find_column(report, column);
  std::vector<ReportCell> cells(report.heads.size());
  for (int row : rows) cells[size_t(row)] = c.cell(entry(report, row));
  std::vector<int> out = rows;
  // A strict weak order with blank cells after every value, whichever the direction: nothing
  // measured, NaN, or empty text (a head without roles).
  auto blank = [](const ReportCell& cell) {
    return cell.empty() || (cell.number() && std::isnan(*cell.number())) ||
           (cell.kind == ReportCell::Kind::text && cell.text.empty());
  };
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const ReportCell& x = cells[size_t(a)];
    const ReportCell& y = cells[size_t(b)];
    if (blank(x) || blank(y)) return !blank(x) && blank(y);
    if (c.numeric) return descending ? *x.number() > *y.number() : *x.number() < *y.number();
    return descending ? x.text > y.text : x.text < y.text;
  });
  return out;
}

std::vector<int> sorted_rows(const HeadReport& report, const std::string& column, bool descending) {
  return sorted_rows(report, all_rows(report), column, descending);
}

const char* role_filter_name(RoleFilter filter) {
  switch (filter) {
    case RoleFilter::any: return "any";
    case RoleFilter::some: return "some role";
    case RoleFilter::positional: return "positional";
    case RoleFilter::syntactic: return "syntactic";
    case RoleFilter::rare_word: return "rare-word";
    case RoleFilter::none: return "no role";
  }
  return "any";
}

RoleFilter role_filter_from_name(const std::string& name) {
  for (RoleFilter f : {RoleFilter::any, RoleFilter::some, RoleFilter::positional, RoleFilter::syntactic,
                       RoleFilter::rare_word, RoleFilter::none})
    if (name == role_filter_name(f)) return f;
  if (name == "rare") return RoleFilter::rare_word;
  if (name == "none") return RoleFilter::none;
  throw std::invalid_argument("unknown role filter '" + name +
                              "' (any, some role, positional, syntactic, rare-word, no role)");
}

bool head_matches(const HeadEntry& head, const HeadFilter& filter) {
  if (filter.layer >= 0 && head.layer != filter.layer) return false;
  if (filter.stack && head.stack != *filter.stack) return false;
  switch (filter.role) {
    case RoleFilter::any: break;
    case RoleFilter::some: if (head.roles.empty()) return false; break;
    case RoleFilter::positional: if (!head.positional) return false; break;
    case RoleFilter::syntactic: if (!has_syntactic_role(head)) return false; break;
    case RoleFilter::rare_word: if (!head.rare) return false; break;
    case RoleFilter::none: if (!head.roles.empty()) return false; break;
  }
  if (filter.text.empty()) return true;
  const std::string needle = lower(filter.text);
  for (const auto& role : head.roles)
    if (lower(role).find(needle) != std::string::npos) return true;
  for (const auto& badge : role_badges(head))
    if (lower(badge.label).find(needle) != std::string::npos) return true;
  return false;
}

std::vector<int> filtered_rows(const HeadReport& report, const HeadFilter& filter) {
  std::vector<int> rows;
  for (size_t i = 0; i < report.heads.size(); ++i)
    if (head_matches(report.heads[i], filter)) rows.push_back(static_cast<int>(i));
  return rows;
}

std::vector<RoleBadge> role_badges(const HeadEntry& head) {
  std::vector<RoleBadge> badges;
  if (head.positional)
    badges.push_back({RoleFilter::positional, "pos " + signed_offset(head.positional_offset),
                      "positional: " + percent(head.positional_share) + " of queries put their maximum attention at offset " +
                          signed_offset(head.positional_offset)});
  if (head.rare)
    badges.push_back({RoleFilter::rare_word, "rare",
                      "rare-word: " + percent(head.rare_share) + " of " + std::to_string(head.rare_queries) +
                          " queries put their maximum attention on the sentence's rarest token"});
  for (const auto& s : head.syntactic) {
    if (!s.is_role) continue;
    const bool to_head = s.direction == "dependent->head";
    badges.push_back({RoleFilter::syntactic, s.relation + (to_head ? " d\u2192h" : " h\u2192d"),
                      "syntactic: " + s.relation + " " + s.direction + ", " + percent(s.accuracy) + " of " +
                          std::to_string(s.count) + " arcs against the best fixed offset's " + percent(s.baseline) +
                          " (offset " + signed_offset(s.baseline_offset) + ")"});
  }
  // The roles of the other measures (prev-token, induction): their name, and the measure's evidence
  // in Head detail.
  for (const auto& role : head.roles)
    if (role.rfind("positional(", 0) != 0 && role != "rare-word" && role.rfind("syntactic(", 0) != 0)
      badges.push_back({RoleFilter::some, role, role + ": see Head detail for the score and the probe"});
  return badges;
}

HeadReport with_thresholds(const HeadReport& report, const analysis::ReportSettings& thresholds) {
  HeadReport out = report;
  auto& s = out.settings;
  s.positional_threshold = thresholds.positional_threshold;
  s.rare_threshold = thresholds.rare_threshold;
  s.syntactic_margin = thresholds.syntactic_margin;
  s.min_relation_count = thresholds.min_relation_count;
  s.always_relations = thresholds.always_relations;
  for (const auto* m : analysis::measures())
    for (const auto& t : m->role_thresholds()) s.*t.value = thresholds.*t.value;
  out.finalize();
  return out;
}

std::string table_to_csv(const HeadReport& report, const std::vector<int>& rows) {
  return analysis::to_csv(report, rows);
}

}  // namespace headlab::app
