// head_report.csv: one row per head (pandas-ready: a header row, plain numbers, empty for absent),
// its columns defined once in all_report_columns().
#include "analysis/report_columns.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace headlab::analysis {
namespace {

ReportCell integer(int64_t v) {
  ReportCell c;
  c.kind = ReportCell::Kind::integer;
  c.integer = v;
  return c;
}

ReportCell real(double v) {
  ReportCell c;
  c.kind = ReportCell::Kind::real;
  c.real = v;
  return c;
}

ReportCell text(std::string v) {
  ReportCell c;
  c.kind = ReportCell::Kind::text;
  c.text = std::move(v);
  return c;
}

ReportCell real_if(bool present, double v) { return present ? real(v) : ReportCell{}; }
ReportCell integer_if(bool present, int64_t v) { return present ? integer(v) : ReportCell{}; }

// The shortest of %.15g / %.17g that reads back as the same double: full precision without the
// noise digits of 0.1 printed as 0.10000000000000001.
std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char s[40];
  std::snprintf(s, sizeof s, "%.15g", v);
  if (std::strtod(s, nullptr) != v) std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool has_syntactic_role(const HeadEntry& h) {
  return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const SyntacticScore& s) { return s.is_role; });
}

bool spectrum_usable(const HeadEntry& h) { return h.spectrum && h.spectrum->applicable; }

}  // namespace

std::optional<double> ReportCell::number() const {
  if (kind == Kind::integer) return static_cast<double>(integer);
  if (kind == Kind::real) return real;
  return std::nullopt;
}

const std::vector<ReportColumn>& all_report_columns() {
  using H = const HeadEntry&;
  // Shares and means exist only where something was measured: queries for the map measures, rare
  // queries for the rare-word shares, sentences for LRP and importance.
  static const std::vector<ReportColumn> columns{
      {"stack", "", false, false, [](H h) { return text(h.stack); }},
      {"layer", "", true, false, [](H h) { return integer(h.layer); }},
      {"head", "", true, false, [](H h) { return integer(h.head); }},
      {"confidence", "confidence", true, false, [](H h) { return real_if(h.queries > 0, h.confidence); }},
      {"confidence_all_keys", "confidence", true, false,
       [](H h) { return real_if(h.queries > 0, h.confidence_all_keys); }},
      {"positional_offset", "positional", true, false,
       [](H h) { return integer_if(h.queries > 0, h.positional_offset); }},
      {"positional_share", "positional", true, false, [](H h) { return real_if(h.queries > 0, h.positional_share); }},
      {"positional", "positional", true, false, [](H h) { return integer(h.positional ? 1 : 0); }},
      {"rare_share", "rare", true, false, [](H h) { return real_if(h.rare_queries > 0, h.rare_share); }},
      {"rare_share_two_rarest", "rare", true, false, [](H h) { return real_if(h.rare_queries > 0, h.rare_share_two); }},
      {"rare_queries", "rare", true, false, [](H h) { return integer(h.rare_queries); }},
      {"rare_word", "rare", true, false, [](H h) { return integer(h.rare ? 1 : 0); }},
      {"best_relation", "syntactic", false, false,
       [](H h) { return h.best_relation ? text(h.best_relation->relation) : ReportCell{}; }},
      {"best_relation_direction", "syntactic", false, false,
       [](H h) { return h.best_relation ? text(h.best_relation->direction) : ReportCell{}; }},
      {"best_relation_accuracy", "syntactic", true, false,
       [](H h) { return h.best_relation ? real(h.best_relation->accuracy) : ReportCell{}; }},
      {"best_relation_baseline", "syntactic", true, false,
       [](H h) { return h.best_relation ? real(h.best_relation->baseline) : ReportCell{}; }},
      {"syntactic", "syntactic", true, false, [](H h) { return integer(has_syntactic_role(h) ? 1 : 0); }},
      {"lrp_raw", "lrp", true, false, [](H h) { return real_if(h.lrp_sentences > 0, h.lrp_raw); }},
      {"lrp_normalized", "lrp", true, false, [](H h) { return real_if(h.lrp_sentences > 0, h.lrp_normalized); }},
      {"importance", "importance", true, false,
       [](H h) { return real_if(h.importance_sentences > 0, h.importance); }},
      {"spectrum_rank90", "spectra", true, false,
       [](H h) { return spectrum_usable(h) ? integer(h.spectrum->rank90) : ReportCell{}; }},
      {"spectrum_rank95", "spectra", true, false,
       [](H h) { return spectrum_usable(h) ? integer(h.spectrum->rank95) : ReportCell{}; }},
      {"spectrum_rank99", "spectra", true, false,
       [](H h) { return spectrum_usable(h) ? integer(h.spectrum->rank99) : ReportCell{}; }},
      {"roles", "", false, true, [](H h) { return text(join(h.roles, ";")); }},
  };
  return columns;
}

std::vector<ReportColumn> report_columns(const ReportSettings& settings) {
  std::vector<ReportColumn> out;
  for (const auto& c : all_report_columns())
    if (!*c.metric || settings.has(c.metric)) out.push_back(c);
  return out;
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
