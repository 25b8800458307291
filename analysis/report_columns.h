// The columns of head_report.csv as data: a name, the measure that adds it, and how one head's cell
// is read. Each measure gives its own (analysis/measure.h); the CSV writer and the window's head
// table both walk the one list, so a measure's column appears in both, in the same order and with
// the same values.
#pragma once

#include "analysis/head_report.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headlab::analysis {

// One head's value in one column. A measure with nothing measured (no queries, no sentences) is an
// empty cell, not a zero.
struct ReportCell {
  enum class Kind { empty, integer, real, text };
  Kind kind = Kind::empty;
  int64_t integer = 0;
  double real = 0;
  std::string text;
  bool empty() const { return kind == Kind::empty; }
  // The number of an integer or real cell; nullopt for text and empty cells.
  std::optional<double> number() const;
};

struct ReportColumn {
  const char* name;     // the CSV header ("positional_share")
  const char* metric;   // the measure whose presence adds the column ("" = every report has it)
  bool numeric;         // its cells are numbers (sorted as numbers), text otherwise
  bool always_quoted;   // written quoted even when nothing needs quoting (the roles cell)
  ReportCell (*cell)(const HeadEntry& head);
  // The range its values take where that is fixed — a share or score in [0, 1], a signed score in
  // [-1, 1]; lo == hi where it is not. A colour scale of the column spans this range (colour_scale).
  double lo = 0, hi = 0;
};

// The range a colour scale of `column` spans, given its values' smallest and largest: the column's
// fixed range, else the values' range with zero in it (so the colour says which side of zero a head
// is on, and a head at 0.01 does not look as hot as one at 1 because no head is larger).
std::pair<double, double> colour_scale(const ReportColumn& column, double lo, double hi);

// Every column a report can have, in head_report.csv's order: stack, layer, head, the measures'
// columns in the registry's order, roles.
std::vector<ReportColumn> all_report_columns();
// The columns of a report made with `settings` (those of the measures it holds), in CSV order.
std::vector<ReportColumn> report_columns(const ReportSettings& settings);

// A cell as head_report.csv writes it: integers exactly, reals at the shortest precision that reads
// back as the same double, text quoted as RFC 4180 asks (always when `always_quoted`).
std::string csv_cell(const ReportCell& cell, bool always_quoted = false);

// head_report.csv restricted to `rows` (indices into report.heads), in that order: the same header
// and cells as to_csv. Throws std::out_of_range for a row outside the report.
std::string to_csv(const HeadReport& report, const std::vector<int>& rows);

}  // namespace headlab::analysis
