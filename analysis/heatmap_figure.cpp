#include "analysis/heatmap_figure.h"

#include "analysis/figure_kit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace headlab::analysis {

Rgb diverging_colour(double t) {
  // ColorBrewer RdBu's ends and middle: #2166ac (−1), #f7f7f7 (0), #b2182b (1), linear between.
  t = std::clamp(t, -1.0, 1.0);
  const Rgb blue{0x21 / 255.0, 0x66 / 255.0, 0xac / 255.0}, white{0xf7 / 255.0, 0xf7 / 255.0, 0xf7 / 255.0},
      red{0xb2 / 255.0, 0x18 / 255.0, 0x2b / 255.0};
  const Rgb& end = t < 0 ? blue : red;
  const double a = std::abs(t);
  return {white.r + a * (end.r - white.r), white.g + a * (end.g - white.g), white.b + a * (end.b - white.b)};
}

namespace {

using namespace figure_kit;

// The figure's size and its drawing.
struct Drawn {
  double width = 0, height = 0;
  Draw draw;
};

Drawn draw_heatmap(const Heatmap& map) {
  const int R = static_cast<int>(map.rows.size()), C = static_cast<int>(map.cols.size());
  if (R == 0 || C == 0) throw std::invalid_argument("heatmap '" + map.title + "': nothing to draw");
  double lo = 0, hi = 1;
  if (map.range) {
    std::tie(lo, hi) = *map.range;
  } else if (map.diverging) {
    double most = map.min_half_width;
    for (const auto& row : map.values)
      for (double v : row)
        if (std::isfinite(v)) most = std::max(most, std::abs(v - map.centre));
    if (most <= 0) most = 1;
    lo = map.centre - most, hi = map.centre + most;
  }
  const Range range{lo, hi};
  const double cell = std::clamp(480.0 / std::max(R, C), 3.0, 28.0);
  // Every label when there are few; else the first of each group.
  const bool every_row = R <= 32 || map.row_groups.empty(), every_col = C <= 32 || map.col_groups.empty();
  auto shown = [](bool every, const std::vector<int>& groups, int i) {
    return every || i == 0 || groups[i] != groups[i - 1];
  };
  Measure m;
  double label_w = 0, col_label_h = 0;
  for (int r = 0; r < R; ++r)
    if (shown(every_row, map.row_groups, r)) label_w = std::max(label_w, m.width(map.rows[r], 9));
  for (int c = 0; c < C; ++c)
    if (shown(every_col, map.col_groups, c)) col_label_h = std::max(col_label_h, m.width(map.cols[c], 9));
  // A note longer than a page is cut, ending in "…".
  std::vector<std::string> notes;
  for (const auto& n : map.notes) notes.push_back(printable(n, 110));
  double notes_w = 0;
  for (const auto& n : notes) notes_w = std::max(notes_w, m.width(n, 8));
  const double left = label_w + 34,
               top = (map.subtitle.empty() ? 36 : 50) + 12.0 * static_cast<double>(notes.size());
  const double width = std::max(left + C * cell + 24 + colour_bar_width(m, range) + 16,
                                std::max({m.width(map.title, 11, true), m.width(map.subtitle, 9), notes_w}) + 24);
  const double height = top + R * cell + col_label_h + 36;
  return {width, height, [=](cairo_t* cr) {
    auto colour = [&](double v) -> Colour {
      if (!std::isfinite(v)) return kLightGray;
      if (!map.diverging) return viridis_colour(range.t(v));
      const Rgb c = diverging_colour(hi > map.centre ? (v - map.centre) / (hi - map.centre) : 0);
      return {c.r, c.g, c.b};
    };
    set(cr, kBlack);
    text(cr, 12, 10, map.title, 11, 0, 0, 0, true);
    if (!map.subtitle.empty()) {
      set(cr, kGray);
      text(cr, 12, 26, map.subtitle, 9, 0, 0);
      set(cr, kBlack);
    }
    set(cr, kGray);
    for (size_t i = 0; i < notes.size(); ++i)
      text(cr, 12, (map.subtitle.empty() ? 26 : 40) + 12.0 * static_cast<double>(i), notes[i], 8, 0, 0);
    set(cr, kBlack);
    draw_image(cr, C, R, [&](int r, int c) { return colour(map.values[r][c]); }, left, top, C * cell, R * cell);
    set(cr, kBlack);
    cairo_set_line_width(cr, 0.8);
    for (int c = 1; c < C && !map.col_groups.empty(); ++c)
      if (map.col_groups[c] != map.col_groups[c - 1]) {
        cairo_move_to(cr, left + c * cell, top);
        cairo_line_to(cr, left + c * cell, top + R * cell);
        cairo_stroke(cr);
      }
    for (int r = 1; r < R && !map.row_groups.empty(); ++r)
      if (map.row_groups[r] != map.row_groups[r - 1]) {
        cairo_move_to(cr, left, top + r * cell);
        cairo_line_to(cr, left + C * cell, top + r * cell);
        cairo_stroke(cr);
      }
    for (int r = 0; r < R; ++r)
      if (shown(every_row, map.row_groups, r)) text(cr, left - 4, top + (r + 0.5) * cell, map.rows[r], 9, 1, 0.5);
    for (int c = 0; c < C; ++c)
      if (shown(every_col, map.col_groups, c))
        text(cr, left + (c + 0.5) * cell, top + R * cell + 4, map.cols[c], 9, 1, 0.5, -M_PI / 2);
    text(cr, 12, top + R * cell / 2, map.row_axis, 10, 0.5, 0, -M_PI / 2);
    text(cr, left + C * cell / 2, height - 8, map.col_axis, 10, 0.5, 1);
    const double bar_x = left + C * cell + 24;
    if (!map.diverging) {
      colour_bar(cr, bar_x, top, R * cell, range);
    } else {
      draw_image(cr, 1, 256, [&](int r, int) {
        const Rgb c = diverging_colour(1.0 - 2.0 * (r + 0.5) / 256.0);
        return Colour{c.r, c.g, c.b};
      }, bar_x, top, kBarWidth, R * cell);
      set(cr, kGray);
      cairo_set_line_width(cr, 0.5);
      cairo_rectangle(cr, bar_x, top, kBarWidth, R * cell);
      cairo_stroke(cr);
      int decimals = 0;
      for (double v : nice_ticks(lo, hi, 5, &decimals)) {
        const double y = top + R * cell * (1.0 - range.t(v));
        set(cr, kBlack);
        cairo_move_to(cr, bar_x + kBarWidth, y);
        cairo_line_to(cr, bar_x + kBarWidth + 3, y);
        cairo_stroke(cr);
        text(cr, bar_x + kBarWidth + 4, y, tick_label(v, decimals), kTickSize, 0, 0.5);
      }
    }
  }};
}

}  // namespace

Heatmap effect_heatmap(const std::string& title, const std::string& subtitle, const std::string& col_axis,
                       std::vector<std::string> cols, const std::vector<std::vector<double>>& rows) {
  Heatmap map;
  map.title = title;
  map.subtitle = subtitle;
  map.diverging = true;
  map.centre = 1;
  map.min_half_width = 1;
  map.row_axis = "layer";
  map.col_axis = col_axis;
  map.cols = std::move(cols);
  for (size_t l = 0; l < rows.size(); ++l) {
    map.rows.push_back("L" + std::to_string(l));
    auto row = rows[l];
    row.resize(map.cols.size(), std::nan(""));
    map.values.push_back(std::move(row));
  }
  return map;
}

std::vector<std::string> patch_figure_notes(const PatchFigureFacts& f) {
  std::vector<std::string> notes;
  if (!f.model.empty()) notes.push_back("model: " + f.model);
  notes.push_back("clean: \u201c" + f.clean + "\u201d");
  notes.push_back("counterfactual: \u201c" + f.counterfactual + "\u201d");
  char values[96];
  std::snprintf(values, sizeof values, " at position %lld: clean %.4g, counterfactual %.4g",
                static_cast<long long>(f.position), f.clean_value, f.counterfactual_value);
  std::string scored = f.metric + values;
  // The tokens the metric reads: logit-diff the answer and the wrong one, logit and prob the answer,
  // kl neither (the whole distribution).
  if (!f.answer.empty() && f.metric != "kl") scored += "; answer " + f.answer;
  if (!f.wrong.empty() && f.metric == "logit-diff") scored += ", wrong " + f.wrong;
  notes.push_back(scored);
  return notes;
}

void write_heatmap(const Heatmap& map, const std::string& folder, const std::string& name,
                   std::vector<std::string>& written) {
  if (map.rows.empty() || map.cols.empty()) return;
  const Drawn d = draw_heatmap(map);
  write_figure(folder, name, map.title, d.width, d.height, d.draw, written);
}

void write_heatmap_file(const Heatmap& map, const std::string& path) {
  const Drawn d = draw_heatmap(map);
  write_figure_file(path, map.title, d.width, d.height, d.draw);
}

}  // namespace headlab::analysis
