// head_report.csv: one row per head (pandas-ready: a header row, plain numbers, empty for absent),
// its columns are the measures' (analysis/measure.h), in the registry's order.
#include "analysis/report_columns.h"

#include "analysis/measure.h"
#include "analysis/measure_kit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace headlab::analysis {
namespace {

// The shortest of %.15g / %.17g that reads back as the same double: full precision without the
// noise digits of 0.1 printed as 0.10000000000000001.
std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char s[40];
  std::snprintf(s, sizeof s, "%.15g", v);
  if (std::strtod(s, nullptr) != v) std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

}  // namespace

std::optional<double> ReportCell::number() const {
  if (kind == Kind::integer) return static_cast<double>(integer);
  if (kind == Kind::real) return real;
  return std::nullopt;
}

std::vector<ReportColumn> all_report_columns() {
  using H = const HeadEntry&;
  // Which head, then every measure's columns in the registry's order, then the roles.
  std::vector<ReportColumn> columns{
      {"stack", "", false, false, [](H h) { return kit::text(core::stack_name(h.stack)); }},
      {"layer", "", true, false, [](H h) { return kit::integer(h.layer); }},
      {"head", "", true, false, [](H h) { return kit::integer(h.head); }},
  };
  for (const Measure* m : measures())
    for (const auto& c : m->columns()) columns.push_back(c);
  columns.push_back({"roles", "", false, true, [](H h) { return kit::text(kit::join(h.roles, ";")); }});
  return columns;
}

std::vector<ReportColumn> report_columns(const ReportSettings& settings) {
  std::vector<ReportColumn> out;
  for (const auto& c : all_report_columns())
    if (!*c.metric || settings.has(c.metric)) out.push_back(c);
  return out;
}

std::pair<double, double> colour_scale(const ReportColumn& column, double lo, double hi) {
  if (column.lo < column.hi) return {column.lo, column.hi};
  if (!(lo <= hi)) return {0.0, 1.0};  // no values
  lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  return {lo, hi > lo ? hi : lo + 1};
}

std::string csv_cell(const ReportCell& cell, bool always_quoted) {
  switch (cell.kind) {
    case ReportCell::Kind::empty: return always_quoted ? "\"\"" : "";
    case ReportCell::Kind::integer: return std::to_string(cell.integer);
    case ReportCell::Kind::real: return number(cell.real);
    case ReportCell::Kind::text: break;
  }
  // RFC 4180: a field holding a comma, a double quote or a line break is quoted, quotes doubled.
  if (!always_quoted && cell.text.find_first_of(",\"\r\n") == std::string::npos) return cell.text;
  std::string out = "\"";
  for (char c : cell.text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string to_csv(const HeadReport& report, const std::vector<int>& rows) {
  const auto columns = report_columns(report.settings);
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + std::string(columns[i].name);
  out += "\n";
  for (int row : rows) {
    if (row < 0 || static_cast<size_t>(row) >= report.heads.size())
      throw std::out_of_range("head row " + std::to_string(row) + " is outside the report's " +
                              std::to_string(report.heads.size()) + " heads");
    const HeadEntry& h = report.heads[size_t(row)];
    for (size_t i = 0; i < columns.size(); ++i)
      out += (i ? "," : "") + csv_cell(columns[i].cell(h), columns[i].always_quoted);
    out += "\n";
  }
  return out;
}

std::string to_csv(const HeadReport& report) {
  std::vector<int> rows(report.heads.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int>(i);
  return to_csv(report, rows);
}

}  // namespace headlab::analysis
