// The figures of a head report, drawn headless with cairo (SVG and PNG): layer × head grids of each
// measure, the syntactic heads against their positional baselines, key-query spectra curves, and
// the attention maps of the most relevant heads on one example sentence.
#pragma once

#include "analysis/head_report.h"

#include <string>
#include <vector>

namespace headlab::analysis {

// One head's map on one sentence, for the "most relevant heads" figure.
struct ExampleMap {
  core::Stack stack = core::Stack::Encoder;
  int layer = 0, head = 0;
  std::vector<std::string> tokens;  // [T] labels (queries down, keys across)
  std::vector<float> weights;       // [T × T] row-major, the weights that multiply the values
  std::string why;                  // e.g. "highest normalised LRP relevance"
};

// Writes every figure the report's measures allow into `folder` (created) as NAME.svg and NAME.png;
// returns the file names written (without the folder). Figures whose measure is absent are skipped.
std::vector<std::string> write_report_figures(const HeadReport& report, const std::vector<ExampleMap>& examples,
                                              const std::string& folder);

// One numeric column of the report (any of head_report.csv's, as the window's Heads grid colours
// by) as a layer × head grid of `stack`'s heads in one file (.svg, .pdf or .png), its colour scale
// the column's (colour_scale, analysis/report_columns.h); `gray` draws the window's gray colormap.
// Throws std::invalid_argument for a column the report does not have.
void write_column_grid(const HeadReport& report, const std::string& column, core::Stack stack, bool gray,
                       const std::string& title, const std::string& subtitle, const std::string& path);

}  // namespace headlab::analysis
