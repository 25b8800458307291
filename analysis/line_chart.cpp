#include "analysis/line_chart.h"

#include "analysis/figure_kit.h"

#include <limits>

namespace headlab::analysis {

using namespace figure_kit;

namespace {

struct Bounds {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  // Some room around the data; a single value gets a unit-wide range.
  void pad() {
    const double span = hi > lo ? hi - lo : std::max(1.0, std::abs(lo));
    lo -= 0.06 * span;
    hi += 0.06 * span;
  }
};

// Series colours: viridis stops, readable on white.
Colour series_colour(size_t i, size_t n) { return viridis_colour(n > 1 ? 0.85 * double(i) / double(n - 1) : 0.0); }

}  // namespace

void write_line_chart(const LineChart& chart, const std::string& folder, const std::string& name,
                      std::vector<std::string>& written) {
  Bounds bx, by;
  for (const auto& s : chart.series) {
    if (s.x.size() != s.y.size()) throw std::invalid_argument("chart " + name + ": series '" + s.label + "' has " +
                                                              std::to_string(s.x.size()) + " x and " +
                                                              std::to_string(s.y.size()) + " y values");
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) bx.add(s.x[i]), by.add(s.y[i]);
  }
  if (!(bx.hi >= bx.lo)) throw std::invalid_argument("chart " + name + ": no finite point to draw");
  bx.pad();
  by.pad();
  int x_decimals = 0, y_decimals = 0;
  const auto x_ticks = nice_ticks(bx.lo, bx.hi, 6, &x_decimals);
  const auto y_ticks = nice_ticks(by.lo, by.hi, 6, &y_decimals);

  Measure m;
  const double margin = 16, title_size = 13, small = 8, label_size = 9, note_size = 7.5;
  const double plot_w = 460, plot_h = 280;
  double y_label_w = 0;
  for (double v : y_ticks) y_label_w = std::max(y_label_w, m.width(tick_label(v, y_decimals), small));
  const double left = margin + label_size + 10 + y_label_w;
  const double top = margin + title_size + 8 + (chart.subtitle.empty() ? 0 : small + 8) + 8;
  double legend_w = 0;
  for (const auto& s : chart.series)
    if (!s.label.empty()) legend_w = std::max(legend_w, m.width(s.label, small) + 26);
  const double width = std::max({left + plot_w + 18 + legend_w + margin, margin * 2 + m.width(chart.title, title_size, true),
                                 margin * 2 + m.width(chart.subtitle, small)});
  const double height = top + plot_h + small + 8 + label_size + 10 + margin;

  auto px = [&](double x) { return left + plot_w * (x - bx.lo) / (bx.hi - bx.lo); };
  auto py = [&](double y) { return top + plot_h * (by.hi - y) / (by.hi - by.lo); };
  auto draw = [&](cairo_t* cr) {
    set(cr, kBlack);
    text(cr, margin, margin, chart.title, title_size, 0, 0, 0, true);
    if (!chart.subtitle.empty()) {
      set(cr, kGray);
      text(cr, margin, margin + title_size + 8, chart.subtitle, small, 0, 0);
    }
    cairo_set_line_width(cr, 0.6);
    for (double v : y_ticks) {
      set(cr, kGridLine);
      cairo_move_to(cr, left, py(v));
      cairo_line_to(cr, left + plot_w, py(v));
      cairo_stroke(cr);
      set(cr, kBlack);
      text(cr, left - 4, py(v), tick_label(v, y_decimals), small, 1, 0.5);
    }
    for (double v : x_ticks) {
      set(cr, kGridLine);
      cairo_move_to(cr, px(v), top);
      cairo_line_to(cr, px(v), top + plot_h);
      cairo_stroke(cr);
      set(cr, kBlack);
      text(cr, px(v), top + plot_h + 4, tick_label(v, x_decimals), small, 0.5, 0);
    }
    set(cr, kGray);
    cairo_rectangle(cr, left, top, plot_w, plot_h);
    cairo_stroke(cr);
    set(cr, kBlack);
    text(cr, left + plot_w / 2, top + plot_h + small + 8, chart.x_label, label_size, 0.5, 0);
    text(cr, margin, top + plot_h / 2, chart.y_label, label_size, 0.5, 0, -M_PI / 2);

    double legend_y = top;
    for (size_t si = 0; si < chart.series.size(); ++si) {
      const auto& s = chart.series[si];
      const Colour c = series_colour(si, chart.series.size());
      set(cr, c);
      cairo_set_line_width(cr, 1.6);
      bool open = false;
      for (size_t i = 0; i < s.x.size() && s.line; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        if (open) cairo_line_to(cr, px(s.x[i]), py(s.y[i]));
        else cairo_move_to(cr, px(s.x[i]), py(s.y[i])), open = true;
      }
      if (open) cairo_stroke(cr);
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        set(cr, c);
        marker(cr, int(si % 3), px(s.x[i]), py(s.y[i]), 3.2);
        cairo_fill(cr);
        if (i < s.notes.size() && !s.notes[i].empty()) {
          set(cr, kGray);
          text(cr, px(s.x[i]) + 5, py(s.y[i]) - 3, s.notes[i], note_size, 0, 1);
        }
      }
      if (!s.label.empty()) {
        set(cr, c);
        marker(cr, int(si % 3), left + plot_w + 24, legend_y + small / 2, 3.2);
        cairo_fill(cr);
        set(cr, kBlack);
        text(cr, left + plot_w + 32, legend_y, s.label, small, 0, 0);
        legend_y += small + 6;
      }
    }
  };
  write_figure(folder, name, chart.title, width, height, draw, written);
}

}  // namespace headlab::analysis
