// head_report.md: the report as a page for a reader (head_report.csv is analysis/report_csv.cpp).
#include "analysis/head_report.h"

#include "analysis/measure.h"
#include "analysis/measure_kit.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace headlab::analysis {
namespace {

using kit::join;
using kit::md_header;
using kit::md_row;

// "1, 3" for the shard indices a merge left out.
std::string join_ints(const std::vector<int>& items) {
  std::vector<std::string> text;
  for (int i : items) text.push_back(std::to_string(i));
  return join(text, ", ");
}

// One line per role: which head, which role, and the number behind it (each measure its own).
std::vector<std::string> role_lines(const HeadReport& report) {
  std::vector<std::string> lines;
  const auto selected = measures_of(report.settings);
  for (const auto& h : report.heads) {
    const std::string who = "- " + kit::head_name(h) + " (" + core::stack_name(h.stack) + "): ";
    for (const Measure* m : selected)
      for (const auto& line : m->markdown_roles(h)) lines.push_back(who + line);
  }
  return lines;
}

}  // namespace

std::string to_markdown(const HeadReport& report) {
  const auto& s = report.settings;
  std::ostringstream md;
  md << "# Head report: " << (report.model.empty() ? "(unnamed model)" : report.model) << "\n\n";
  if (report.partial)
    md << "**Partial report:** "
       << (report.missing_shards.empty() ? "the measurement stopped before the end of the data"
                                         : "merged without shard(s) " + join_ints(report.missing_shards))
       << "; every number below covers only the sentences measured.\n\n";
  if (report.sentences == 0 && report.skipped > 0)
    md << "**No sentence was measured:** every one of the " << report.skipped
       << " was skipped (the reasons are under Data); the measures of the data have no values.\n\n";

  md << "## Roles\n\n";
  const auto roles = role_lines(report);
  if (roles.empty())
    md << "No head reaches a role threshold.\n";
  for (const auto& line : roles) md << line << "\n";
  md << "\n";

  md << "## Data\n\n";
  md << "- model: " << report.model << "\n";
  md << "- files: " << (report.files.empty() ? "(none)" : join(report.files, ", ")) << "\n";
  md << "- sentences: " << report.sentences << ", tokens: " << report.tokens << ", skipped: " << report.skipped;
  if (!report.skipped_reasons.empty()) {
    std::vector<std::string> reasons;
    for (const auto& [why, n] : report.skipped_reasons) reasons.push_back(why + ": " + std::to_string(n));
    md << " (" << join(reasons, "; ") << ")";
  }
  md << "\n";
  const auto selected = measures_of(s);
  for (const Measure* m : selected)
    for (const auto& line : m->markdown_data(report)) md << line << "\n";
  if (!s.precision.empty()) md << "- precision: " << s.precision << " (core/precision.h)\n";
  if (s.limit > 0) md << "- limit: first " << s.limit << " sentences\n";
  if (s.shard_count > 1) md << "- shard " << s.shard_index << " of " << s.shard_count << "\n";
  md << "- partial: "
     << (!report.partial                 ? std::string("no")
         : report.missing_shards.empty() ? std::string("yes — stopped before the end")
                                         : "yes — shard(s) " + join_ints(report.missing_shards) + " missing")
     << "\n";
  md << "- measures: " << (s.metrics.empty() ? "(none)" : join(s.metrics, ", ")) << "\n\n";

  md << "## Thresholds\n\n";
  for (const Measure* m : selected)
    for (const auto& line : m->markdown_thresholds(s)) md << line << "\n";
  md << "\n";

  // Per-head measures.
  md << "## Per-head measures\n\n";
  {
    std::vector<std::string> names{"stack", "layer", "head"};
    for (const Measure* m : selected)
      for (const auto& name : m->markdown_columns()) names.push_back(name);
    names.push_back("roles");
    md << md_header(names);
    for (const auto& h : report.heads) {
      std::vector<std::string> c{core::stack_name(h.stack), std::to_string(h.layer), std::to_string(h.head)};
      for (const Measure* m : selected)
        for (auto& cell : m->markdown_cells(h)) c.push_back(std::move(cell));
      c.push_back(join(h.roles, ", "));
      md << md_row(c);
    }
    md << "\n";
  }

  // The measures' own sections (the syntactic heads against their baselines, LRP conservation, the
  // key-query spectra).
  for (const Measure* m : selected) md << m->markdown_section(report);

  md << "## Notes\n\n";
  if (report.notes.empty()) md << "None.\n";
  for (const auto& n : report.notes) md << "- " << n << "\n";
  return md.str();
}

}  // namespace headlab::analysis
