// Axis logic for the window's plots (spectra curves, histograms, bar charts): "nice" linear ticks,
// decade ticks on log axes, compact number labels, data ranges with padding, value ↔ pixel mapping,
// and the layout of a plot's frame (title, legend, tick labels, axis labels around the data area).
// No ImGui: app/gui/plot.cpp draws with it, tests check it headless.
#pragma once

#include <string>
#include <vector>

namespace headlab::app {

struct Tick {
  double value = 0;
  std::string label;  // empty on minor ticks (grid line only)
  bool major = true;
};

struct AxisRange {
  double lo = 0, hi = 1;
};

// How decades are written on a log axis: "10⁻³" (needs a font with U+2070–U+209F) or "1e-3".
enum class LogLabels { Superscript, Exponent };

// A number in at most `significant` digits, no trailing zeros: 0.5, 12, 0.00123, 1.5e-5, 2e6.
std::string format_compact(double value, int significant = 3);

// Ticks on a linear axis at multiples of a 1/2/5×10^k step, at most max_ticks inside [lo, hi]
// (reversed bounds are swapped; lo == hi gives one tick; non-finite bounds give none). Labels share
// one style per axis: fixed ("0.25") for magnitudes in [1e-3, 1e5), else scientific ("5e-4").
std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks);

// Ticks on a log axis over [lo, hi] (both > 0): every decade, plus 2× and 5× when the range spans
// under two decades (then labelled as plain numbers); at most max_ticks labelled decades (the others
// become minor ticks). A range holding no 1/2/5 value falls back to linear ticks.
std::vector<Tick> log_ticks(double lo, double hi, int max_ticks = 10, LogLabels style = LogLabels::Superscript);

// The range that shows `values` with a 5% margin each side, ignoring non-finite values and (log)
// values ≤ 0. include_zero (linear only) extends it to 0 without a margin there, for bars. A single
// value gets ±10% (log: half a decade); no usable value gives [0, 1] (log: [1, 10]).
AxisRange padded_range(const std::vector<double>& values, bool log, bool include_zero = false);

// The pixel of `value` on an axis whose lo maps to pixel0 and hi to pixel1 (pixel0 > pixel1 for y
// axes). NaN for non-finite values, and on log axes for values ≤ 0 or a range not above 0; a range
// with lo == hi maps everything to the middle.
double to_pixel(double value, const AxisRange& range, double pixel0, double pixel1, bool log);
// The value under `pixel` (the inverse of to_pixel), for hover read-outs.
double from_pixel(double pixel, const AxisRange& range, double pixel0, double pixel1, bool log);

struct PlotRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  float width() const { return x1 - x0; }
  float height() const { return y1 - y0; }
  bool contains(const PlotRect& r) const { return r.x0 >= x0 && r.y0 >= y0 && r.x1 <= x1 && r.y1 <= y1; }
};

// Where the parts of a plot go, in pixels from the frame's top-left corner.
struct PlotLayout {
  PlotRect frame;    // [0, width] × [0, height]
  PlotRect inner;    // the data area
  PlotRect title;    // a row at the top (zero height without a title)
  PlotRect legend;   // a row under the title (zero height without a legend)
  PlotRect x_label;  // a row under the x tick labels
  PlotRect y_label;  // a column left of the y tick labels, for text rotated upwards
  float font_height = 0, tick_length = 0, gap = 0;
  float x_tick_label_height = 0;
  bool fits = false;  // false when the frame is too small for a data area (inner is then empty)
};

// Lays out a width × height plot: margins for the title, legend, rotated y label, y tick labels of
// y_tick_label_width, x tick labels (x_tick_label_height, 0 = one text line; more for rotated
// category labels) and the x label (a row only when has_x_label); what remains is the data area.
PlotLayout layout_plot(float width, float height, float y_tick_label_width, float font_height, bool has_title,
                       bool has_legend, float x_tick_label_height = 0, bool has_x_label = true);

// Where an x tick label of label_width goes for a tick at pixel x: centred under it, moved inwards
// to stay inside the frame.
PlotRect x_tick_label_rect(const PlotLayout& layout, float x, float label_width);
// Where a y tick label goes for a tick at pixel y: right-aligned left of the tick, centred on it,
// kept inside the frame.
PlotRect y_tick_label_rect(const PlotLayout& layout, float y, float label_width);

}  // namespace headlab::app
