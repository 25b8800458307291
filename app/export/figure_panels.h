// The drawing pieces the Analyse views' figures share (internal to app/export): page titles, plot
// frames with axes and legends, bar charts and curve sets, on analysis/figure_kit.h's cairo helpers
// and the window's axis logic (app/layout/plot_axes.h).
#pragma once

#include "analysis/figure_kit.h"
#include "app/layout/plot_axes.h"
#include "app/layout/relevance_colors.h"
#include "analysis/spectrum_curves.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headlab::app::figure_panels {

using namespace analysis::figure_kit;

inline constexpr double kMargin = 16, kTitleSize = 13, kPanelTitle = 10, kSmall = 8, kLabel = 9;

inline Colour rgb(int r, int g, int b) { return {r / 255.0, g / 255.0, b / 255.0}; }
inline Colour rgb(const Rgb& c) { return rgb(c.r, c.g, c.b); }

inline const Colour kHead = rgb(31, 119, 180), kThreshold = rgb(230, 160, 20), kWhite{1, 1, 1};

// matplotlib's tab10 for the first ten heads (as the window's head colours), then golden-ratio hues.
inline Colour head_rgb(int head) {
  static const int tab10[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                              0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  if (head >= 0 && head < 10) return rgb((tab10[head] >> 16) & 255, (tab10[head] >> 8) & 255, tab10[head] & 255);
  const double h = std::fmod(head * 0.61803, 1.0) * 6, s = 0.65, v = 0.9;
  const double c = v * s, x = c * (1 - std::abs(std::fmod(h, 2.0) - 1)), m = v - c;
  const int i = int(h) % 6;
  const double r[] = {c, x, 0, 0, x, c}, g[] = {x, c, c, x, 0, 0}, b[] = {0, 0, x, c, c, x};
  return {r[i] + m, g[i] + m, b[i] + m};
}

inline std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

inline void title_row(cairo_t* cr, const std::string& title) {
  set(cr, kBlack);
  text(cr, kMargin, kMargin, printable(title), kTitleSize, 0, 0, 0, true);
}

inline double title_width(Measure& m, const std::string& title) {
  return 2 * kMargin + m.width(printable(title), kTitleSize, true) + 2;
}

// ---- plot panels ---------------------------------------------------------------------------------

// A data area with its axes: x and y ranges mapped onto [x, x + w] × [y + h, y].
struct Frame {
  double x = 0, y = 0, w = 0, h = 0;
  AxisRange xr, yr;
  bool y_log = false;
  double px(double v) const { return to_pixel(v, xr, x, x + w, false); }
  double py(double v) const { return to_pixel(v, yr, y + h, y, y_log); }
};

inline double tick_labels_width(Measure& m, const std::vector<Tick>& ticks) {
  double w = 0;
  for (const auto& t : ticks) w = std::max(w, m.width(t.label, kSmall));
  return w;
}

// Grid lines and labels at the y ticks, the frame, the y axis label (rotated) left of the labels.
inline void y_axis(cairo_t* cr, const Frame& f, const std::vector<Tick>& ticks, const std::string& label, double label_w) {
  cairo_set_line_width(cr, 0.6);
  for (const auto& t : ticks) {
    const double y = f.py(t.value);
    if (!std::isfinite(y) || y < f.y - 0.5 || y > f.y + f.h + 0.5) continue;
    set(cr, t.major ? kGridLine : Colour{0.95, 0.95, 0.95});
    cairo_move_to(cr, f.x, y);
    cairo_line_to(cr, f.x + f.w, y);
    cairo_stroke(cr);
    if (!t.label.empty()) {
      set(cr, kBlack);
      text(cr, f.x - 4, y, t.label, kSmall, 1, 0.5);
    }
  }
  set(cr, kBlack);
  if (!label.empty()) text(cr, f.x - label_w - 8 - kLabel, f.y + f.h / 2, label, kLabel, 0.5, 0, -M_PI / 2);
}

inline void x_ticks(cairo_t* cr, const Frame& f, const std::vector<Tick>& ticks) {
  set(cr, kBlack);
  cairo_set_line_width(cr, 0.6);
  for (const auto& t : ticks) {
    const double x = f.px(t.value);
    if (t.label.empty() || !std::isfinite(x) || x < f.x - 0.5 || x > f.x + f.w + 0.5) continue;
    cairo_move_to(cr, x, f.y + f.h);
    cairo_line_to(cr, x, f.y + f.h + 3);
    cairo_stroke(cr);
    text(cr, x, f.y + f.h + 4, t.label, kSmall, 0.5, 0);
  }
}

inline void frame_box(cairo_t* cr, const Frame& f) {
  set(cr, kBlack);
  cairo_set_line_width(cr, 0.8);
  cairo_rectangle(cr, f.x, f.y, f.w, f.h);
  cairo_stroke(cr);
}

inline void dashed_hline(cairo_t* cr, const Frame& f, double value, const Colour& colour, const std::string& label) {
  const double y = f.py(value);
  if (!std::isfinite(y)) return;
  static const double dash[] = {4, 3};
  set(cr, colour);
  cairo_set_line_width(cr, 1.2);
  cairo_set_dash(cr, dash, 2, 0);
  cairo_move_to(cr, f.x, y);
  cairo_line_to(cr, f.x + f.w, y);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
  text(cr, f.x + f.w - 3, y - 2, label, kSmall, 1, 1);
}

// A legend row of colour swatches and names starting at (x, y); returns its width.
inline double legend(cairo_t* cr, double x, double y, const std::vector<std::pair<Colour, std::string>>& items) {
  const double x0 = x;
  for (const auto& [colour, name] : items) {
    set(cr, colour);
    cairo_rectangle(cr, x, y + 1, 10, 8);
    cairo_fill(cr);
    set(cr, kBlack);
    text(cr, x + 14, y + 5, name, kSmall, 0, 0.5);
    x += 14 + text_width(cr, name, kSmall) + 12;
  }
  return x - x0;
}

inline double legend_width(Measure& m, const std::vector<std::pair<Colour, std::string>>& items) {
  double w = 0;
  for (const auto& item : items) w += 14 + m.width(item.second, kSmall) + 12;
  return w;
}

// Bars of one or more series per category: labels under the groups, rotated when they do not fit.
struct BarChart {
  std::string title, y_label, x_label;
  std::vector<std::string> categories;
  std::vector<std::pair<Colour, std::string>> series;  // colour, legend name
  std::vector<std::vector<double>> values;             // [series][category]
  std::optional<std::pair<double, std::string>> threshold;
  std::vector<std::string> notes;  // [category] a small label over the group ("" = none)

  static constexpr double kBar = 14, kGap = 12, kHeight = 150;
  std::vector<Tick> ticks = linear_ticks(0, 1, 6);

  double group_w() const { return kBar * double(series.size()) + kGap; }
  bool rotated(Measure& m) const {
    for (const auto& c : categories)
      if (m.width(c, kSmall) > group_w() - 2) return true;
    return false;
  }
  double labels_h(Measure& m) const {
    if (!rotated(m)) return kSmall + 6;
    double w = 0;
    for (const auto& c : categories) w = std::max(w, m.width(c, kSmall));
    return w + 8;
  }
  double left(Measure& m) const { return kLabel + 10 + tick_labels_width(m, ticks) + 4; }
  double plot_w() const { return std::max(200.0, group_w() * double(categories.size()) + kGap); }
  double width(Measure& m) const {
    return std::max({left(m) + plot_w(), m.width(title, kPanelTitle, true), legend_width(m, series)});
  }
  // Panel title, legend, plot, category labels, x label.
  double height(Measure& m) const {
    return kPanelTitle + 6 + 14 + kHeight + labels_h(m) + (x_label.empty() ? 0 : kLabel + 6);
  }

  void draw(cairo_t* cr, Measure& m, double x, double y) const {
    set(cr, kBlack);
    text(cr, x, y, title, kPanelTitle, 0, 0, 0, true);
    legend(cr, x, y + kPanelTitle + 6, series);
    Frame f;
    f.x = x + left(m), f.y = y + kPanelTitle + 6 + 14, f.w = plot_w(), f.h = kHeight;
    f.yr = {0, 1};
    y_axis(cr, f, ticks, y_label, tick_labels_width(m, ticks));
    const bool turn = rotated(m);
    for (size_t c = 0; c < categories.size(); ++c) {
      const double gx = f.x + kGap + double(c) * group_w();
      double top = f.y + f.h;
      for (size_t s = 0; s < series.size(); ++s) {
        const double v = std::clamp(values[s][c], 0.0, 1.0), bx = gx + double(s) * kBar;
        set(cr, series[s].first);
        cairo_rectangle(cr, bx, f.py(v), kBar, f.y + f.h - f.py(v));
        cairo_fill(cr);
        top = std::min(top, f.py(v));
      }
      set(cr, kBlack);
      const double mid = gx + kBar * double(series.size()) / 2;
      if (c < notes.size() && !notes[c].empty()) text(cr, mid, top - 2, notes[c], 7, 0.5, 1);
      if (turn)
        text(cr, mid, f.y + f.h + 4, categories[c], kSmall, 1, 0.5, -M_PI / 2);
      else
        text(cr, mid, f.y + f.h + 4, categories[c], kSmall, 0.5, 0);
    }
    if (threshold) dashed_hline(cr, f, threshold->first, kThreshold, threshold->second);
    frame_box(cr, f);
    if (!x_label.empty()) text(cr, f.x + f.w / 2, f.y + f.h + labels_h(m), x_label, kLabel, 0.5, 0);
  }
};

// Curves against the rank k = 1, 2, …: the faint ones first, the selected one on top with its
// 90/95/99% rank markers.
struct CurveSet {
  struct Curve {
    std::vector<double> y;
    Colour colour;
    double alpha = 1, width = 1.2;
    const analysis::Spectrum* marks = nullptr;  // markers at its ranks (y taken from `y`)
  };
  std::string title, y_label;
  bool log = false;
  std::vector<Curve> curves;
  std::vector<std::pair<Colour, std::string>> legend_items;
  static constexpr double kWidth = 420, kHeight = 170;

  AxisRange y_range() const {
    if (!log) return {0, 1.02};
    std::vector<double> all;
    for (const auto& c : curves) all.insert(all.end(), c.y.begin(), c.y.end());
    AxisRange r = padded_range(all, true);
    r.hi = std::max(r.hi, 1.0);
    return r;
  }
  size_t k_max() const {
    size_t k = 1;
    for (const auto& c : curves) k = std::max(k, c.y.size());
    return k;
  }
  std::vector<Tick> y_ticks() const {
    const AxisRange r = y_range();
    return log ? log_ticks(r.lo, r.hi, 8) : linear_ticks(0, 1, 6);
  }
  double left(Measure& m) const { return kLabel + 10 + tick_labels_width(m, y_ticks()) + 4; }
  double width(Measure& m) const {
    return std::max({left(m) + kWidth, m.width(title, kPanelTitle, true), legend_width(m, legend_items) + 150});
  }
  double height() const { return kPanelTitle + 6 + 14 + kHeight + kSmall + 6 + kLabel + 6; }

  void draw(cairo_t* cr, Measure& m, double x, double y) const {
    set(cr, kBlack);
    text(cr, x, y, title, kPanelTitle, 0, 0, 0, true);
    const double lw = legend(cr, x, y + kPanelTitle + 6, legend_items);
    set(cr, kGray);
    text(cr, x + lw + 4, y + kPanelTitle + 11, "ranks where Σσ² reaches", kSmall, 0, 0.5);
    double mx = x + lw + 8 + m.width("ranks where Σσ² reaches", kSmall);
    const char* names[] = {"90%", "95%", "99%"};
    cairo_set_line_width(cr, 0.5);
    for (int kind = 0; kind < 3; ++kind) {
      marker(cr, kind, mx + 3, y + kPanelTitle + 11, 2.8);
      set(cr, kWhite);
      cairo_fill_preserve(cr);
      set(cr, kBlack);
      cairo_stroke(cr);
      text(cr, mx + 8, y + kPanelTitle + 11, names[kind], kSmall, 0, 0.5);
      mx += 14 + m.width(names[kind], kSmall);
    }
    Frame f;
    f.x = x + left(m), f.y = y + kPanelTitle + 6 + 14, f.w = kWidth, f.h = kHeight;
    f.xr = {1, double(std::max<size_t>(2, k_max()))};
    f.yr = y_range();
    f.y_log = log;
    const auto yt = y_ticks();
    y_axis(cr, f, yt, y_label, tick_labels_width(m, yt));
    auto xt = linear_ticks(f.xr.lo, f.xr.hi, 8);
    xt.erase(std::remove_if(xt.begin(), xt.end(), [](const Tick& t) { return t.value != std::floor(t.value); }), xt.end());
    x_ticks(cr, f, xt);
    text(cr, f.x + f.w / 2, f.y + f.h + kSmall + 6, "rank k", kLabel, 0.5, 0);
    cairo_save(cr);
    cairo_rectangle(cr, f.x, f.y - 1, f.w, f.h + 2);
    cairo_clip(cr);
    for (const auto& c : curves) {
      set(cr, c.colour, c.alpha);
      cairo_set_line_width(cr, c.width);
      bool started = false;
      for (size_t k = 0; k < c.y.size(); ++k) {
        const double px = f.px(double(k + 1)), py = f.py(c.y[k]);
        if (!std::isfinite(py)) continue;
        if (started) cairo_line_to(cr, px, py);
        else cairo_move_to(cr, px, py), started = true;
      }
      cairo_stroke(cr);
    }
    cairo_set_line_width(cr, 0.5);
    for (const auto& c : curves) {
      if (!c.marks) continue;
      const int ranks[3] = {c.marks->rank90, c.marks->rank95, c.marks->rank99};
      for (int kind = 0; kind < 3; ++kind) {
        if (ranks[kind] < 1 || size_t(ranks[kind]) > c.y.size()) continue;
        const double py = f.py(c.y[size_t(ranks[kind]) - 1]);
        if (!std::isfinite(py)) continue;
        marker(cr, kind, f.px(ranks[kind]), py, 3.2);
        set(cr, c.colour);
        cairo_fill_preserve(cr);
        set(cr, kBlack);
        cairo_stroke(cr);
      }
    }
    cairo_restore(cr);
    frame_box(cr, f);
  }
};

inline std::string ranks_text(const analysis::Spectrum& s) {
  return "90% of the energy at rank " + std::to_string(s.rank90) + ", 95% at " + std::to_string(s.rank95) + ", 99% at " +
         std::to_string(s.rank99);
}

}  // namespace headlab::app::figure_panels
