// One labelled heatmap as SVG and PNG (cairo, analysis/figure_kit.h): the composition scores of
// `headlab circuits` and the effects of `headlab patch`. Rows and columns may be grouped (layers),
// with a rule between groups; a cell without a value is grey. The colour bar always shows the
// scale: viridis over a fixed range, or a diverging blue–white–red scale centred on 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headlab::analysis {

struct Heatmap {
  std::string title, subtitle, row_axis, col_axis;
  std::vector<std::string> rows, cols;          // labels, one per row / column
  std::vector<int> row_groups, col_groups;      // group of each row / column (empty: no rules)
  std::vector<std::vector<double>> values;      // [row][col]; NaN = no value
  bool diverging = false;  // blue–white–red centred on `centre` over centre ± half-width
  double centre = 0;        // the diverging scale's white
  // The diverging scale's half-width at least (default: the largest |value − centre|).
  double min_half_width = 0;
  std::optional<std::pair<double, double>> range;  // viridis: default [0, 1]
  // Lines under the subtitle (what was measured on what); each cut to a page's width with "…".
  std::vector<std::string> notes;
};

// A layer × column map of patching's normalised effects, (patched − corrupt) / (clean − corrupt),
// for `headlab patch` and the Patching view: rows L0, L1 …; neutral at 1 (the clean result kept),
// blue toward 0 (the corrupted run's), red beyond 1, the half-width at least 1. A row shorter than
// `cols` is padded with NaN (no value).
Heatmap effect_heatmap(const std::string& title, const std::string& subtitle, const std::string& col_axis,
                       std::vector<std::string> cols, const std::vector<std::vector<double>>& rows);

// What a patching figure says under its subtitle, so that it stands alone in a paper: the model,
// the clean and counterfactual inputs, and the metric of both runs at the scored position with the
// tokens it reads ("" = none, as kl reads none and logit one).
struct PatchFigureFacts {
  std::string model, clean, counterfactual;
  std::string metric;         // "logit-diff", "logit", "prob", "kl"
  std::string answer, wrong;  // e.g. "' sky' (4936)"
  int64_t position = 0;
  double clean_value = 0, counterfactual_value = 0;
};
std::vector<std::string> patch_figure_notes(const PatchFigureFacts& facts);

// The diverging scale's colour of t ∈ [−1, 1] (RdBu reversed: −1 blue, 0 white, 1 red) as 0–1 RGB.
struct Rgb {
  double r, g, b;
};
Rgb diverging_colour(double t);

// Writes `folder`/`name`.svg and .png and adds both file names to `written`.
void write_heatmap(const Heatmap& map, const std::string& folder, const std::string& name,
                   std::vector<std::string>& written);
// Writes one file, the format by its extension (.svg, .pdf or .png); throws naming the path.
void write_heatmap_file(const Heatmap& map, const std::string& path);

}  // namespace headlab::analysis
