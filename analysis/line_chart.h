// A plain x–y chart (lines with markers, or markers alone, each point optionally labelled) written
// as SVG and PNG through the figure kit: the pruning curve (quality against heads kept) and the
// variant comparison's figures. cairo only, no torch.
#pragma once

#include <string>
#include <vector>

namespace headlab::analysis {

struct ChartSeries {
  std::string label;               // legend entry ("" = none)
  std::vector<double> x, y;        // same length; non-finite points are skipped
  std::vector<std::string> notes;  // optional text beside each point (empty or same length)
  bool line = true;                // join the points in order
};

struct LineChart {
  std::string title;
  std::string subtitle;  // a smaller line under the title ("" = none)
  std::string x_label, y_label;
  std::vector<ChartSeries> series;
};

// Writes `folder`/`name`.svg and .png and appends both names to `written`. Throws
// std::invalid_argument when a series' x and y differ in length or no point is finite, and
// std::runtime_error (naming the file) when cairo or the file system fails.
void write_line_chart(const LineChart& chart, const std::string& folder, const std::string& name,
                      std::vector<std::string>& written);

}  // namespace headlab::analysis
