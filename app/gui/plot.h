// A small plot on ImGui's draw list for the analysis views: curves (spectra), grouped bars (relation
// accuracy against its baseline, histograms), vertical and horizontal markers (rank at 90/95/99%
// energy, the key size), a legend, and a tooltip for what the mouse is over. Axis logic lives in
// app/layout/plot_axes.h.
#pragma once

#include "app/layout/plot_axes.h"

#include <imgui.h>

#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

struct PlotAxis {
  std::string label;
  bool log = false;
  std::optional<AxisRange> range;  // unset: fitted to the data
};

// What the mouse is over after Plot::end.
struct PlotHover {
  bool active = false;
  int series = -1;       // in the order of add_line/add_bars; −1 for a marker
  int index = -1;        // the point or category in that series, or the marker's number
  double x = 0, y = 0;   // its value (bars: x is the category's number)
};

// Usage, once per frame: begin(), any add_* calls, end(). begin() takes the frame's place in the
// window (an invisible button, so dragging on the plot does not move the window); end() draws
// everything and shows the tooltip. Nothing is kept between frames.
class Plot {
 public:
  // Reserves a plot of `size` at the cursor (a size ≤ 0 fills the available width or height).
  void begin(const char* id, ImVec2 size, std::string title, PlotAxis x, PlotAxis y);
  // A curve through (xs[i], ys[i]); with xs empty, x = 1…n (ranks). Non-finite points (and ≤ 0 on
  // a log axis) break the curve.
  void add_line(std::vector<double> xs, std::vector<double> ys, ImU32 colour, std::string label = "");
  // One bar per category; several add_bars calls stand side by side within each category (the
  // first call's categories name them). Bars make the x axis categorical.
  void add_bars(std::vector<std::string> categories, std::vector<double> values, ImU32 colour, std::string label = "");
  // A vertical line at x across the data area, its label written at the top.
  void add_vline(double x, ImU32 colour, std::string label = "");
  // A horizontal line at y (a chance level, a threshold), its label written at the right end.
  void add_hline(double y, ImU32 colour, std::string label = "");
  // Draws the plot and returns what is under the mouse (with a tooltip already shown).
  PlotHover end();

 private:
  struct Series {
    bool bars = false;
    std::vector<double> xs, ys;
    std::vector<std::string> categories;
    ImU32 colour = 0;
    std::string label;
  };
  struct Marker {
    bool vertical = true;
    double value = 0;
    ImU32 colour = 0;
    std::string label;
  };
  ImVec2 pos_, size_;
  bool hovered_ = false;
  std::string title_;
  PlotAxis x_, y_;
  std::vector<Series> series_;
  std::vector<Marker> markers_;
};

// `text` cut to at most max_width pixels in the current font, ending in "…" when cut.
std::string fit_text(const std::string& text, float max_width);

}  // namespace headlab::app
