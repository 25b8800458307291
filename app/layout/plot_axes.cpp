#include "app/layout/plot_axes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace headlab::app {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = 1e-9;

// 10^k computed so that negative powers round once (0.1, not 0.1000…01).
double pow10i(int k) { return k >= 0 ? std::pow(10.0, k) : 1.0 / std::pow(10.0, -k); }

// Drops trailing zeros after a decimal point, and the point itself when nothing follows it.
std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", std::clamp(decimals, 0, 15), value);
  return trim_zeros(text);
}

// "1.5e-5": a mantissa with `decimals` digits after the point and a bare exponent.
std::string scientific(double value, int decimals) {
  int e = static_cast<int>(std::floor(std::log10(std::fabs(value)) + kEps));
  double mantissa = value / pow10i(e);
  const double scale = std::pow(10.0, std::clamp(decimals, 0, 15));
  if (std::fabs(std::round(mantissa * scale) / scale) >= 10.0) {  // 9.99 rounding up to 10
    ++e;
    mantissa = value / pow10i(e);
  }
  return fixed(mantissa, decimals) + "e" + std::to_string(e);
}

// The decade exponent as superscript digits (UTF-8): −3 → "⁻³".
std::string superscript(int k) {
  static const char* digits[] = {"\u2070", "\u00B9", "\u00B2", "\u00B3", "\u2074",
                                 "\u2075", "\u2076", "\u2077", "\u2078", "\u2079"};
  std::string out = k < 0 ? "\u207B" : "";
  for (char c : std::to_string(std::abs(k))) out += digits[c - '0'];
  return out;
}

std::string decade_label(int k, LogLabels style) {
  if (k == 0) return "1";
  if (k == 1) return "10";
  return style == LogLabels::Superscript ? "10" + superscript(k) : "1e" + std::to_string(k);
}

}  // namespace

std::string format_compact(double value, int significant) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  significant = std::max(1, significant);
  const double magnitude = std::fabs(value);
  const int e = static_cast<int>(std::floor(std::log10(magnitude) + kEps));
  if (magnitude >= 1e-3 && magnitude < 1e5) return fixed(value, significant - 1 - e);
  return scientific(value, significant - 1);
}

std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 1) return {};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) return {{lo, format_compact(lo, 6), true}};
  const double span = hi - lo;
  if (!std::isfinite(span)) return {};
  // The step is mantissa × 10^exponent with mantissa 1, 2 or 5: the smallest one at least
  // span / (max_ticks − 1), grown until no more than max_ticks multiples fall inside [lo, hi].
  const double target = span / std::max(1, max_ticks - 1);
  int exponent = static_cast<int>(std::floor(std::log10(target)));
  int mantissa = 1;
  auto step = [&] { return mantissa * pow10i(exponent); };
  auto advance = [&] {
    if (mantissa == 1) mantissa = 2;
    else if (mantissa == 2) mantissa = 5;
    else mantissa = 1, ++exponent;
  };
  while (step() < target * (1 - kEps)) advance();
  auto first = [&] { return std::ceil(lo / step() - kEps); };
  auto last = [&] { return std::floor(hi / step() + kEps); };
  auto retreat = [&] {
    if (mantissa == 5) mantissa = 2;
    else if (mantissa == 2) mantissa = 1;
    else mantissa = 5, --exponent;
  };
  auto count = [&] { return last() - first() + 1; };
  while (count() > max_ticks) advance();
  // A step wider than the range may leave no tick inside it: smaller steps while they fit.
  while (count() < std::min(2, max_ticks)) {
    retreat();
    if (count() > max_ticks) {
      advance();
      break;
    }
  }

  // Values as k·mantissa / 10^−exponent so that 3 × 0.1 is written 0.3.
  auto value_at = [&](double k) {
    return exponent >= 0 ? k * mantissa * pow10i(exponent) : k * mantissa / pow10i(-exponent);
  };
  const double k0 = first(), k1 = last();
  const double max_abs = std::max(std::fabs(value_at(k0)), std::fabs(value_at(k1)));
  const bool sci = max_abs >= 1e5 || max_abs < 1e-3;
  std::vector<Tick> ticks;
  for (double k = k0; k <= k1; ++k) {
    const double v = value_at(k);
    std::string label;
    if (v == 0) label = "0";
    else if (sci) label = scientific(v, static_cast<int>(std::floor(std::log10(std::fabs(v)) + kEps)) - exponent);
    else label = fixed(v, -exponent);
    ticks.push_back({v, label, true});
  }
  return ticks;
}

std::vector<Tick> log_ticks(double lo, double hi, int max_ticks, LogLabels style) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo > 0) || !(hi > 0)) return {};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) return {{lo, format_compact(lo, 6), true}};
  max_ticks = std::max(1, max_ticks);
  const double l0 = std::log10(lo), l1 = std::log10(hi);
  auto inside = [&](double v) { return v >= lo * (1 - kEps) && v <= hi * (1 + kEps); };
  std::vector<Tick> ticks;
  if (l1 - l0 < 2) {
    // Under two decades: 1, 2 and 5 times each power of ten, all labelled as plain numbers.
    for (int k = static_cast<int>(std::floor(l0)); k <= static_cast<int>(std::ceil(l1)); ++k)
      for (int m : {1, 2, 5}) {
        const double v = m * pow10i(k);
        if (inside(v)) ticks.push_back({v, format_compact(v), true});
      }
    if (ticks.size() < 2) return linear_ticks(lo, hi, std::max(2, max_ticks));
    if (static_cast<int>(ticks.size()) > max_ticks)
      for (auto& t : ticks)
        if (std::fabs(std::log10(t.value) - std::round(std::log10(t.value))) > 1e-6) t.major = false, t.label.clear();
    return ticks;
  }
  const int k0 = static_cast<int>(std::ceil(l0 - kEps)), k1 = static_cast<int>(std::floor(l1 + kEps));
  const int decades = k1 - k0 + 1;
  const int every = (decades + max_ticks - 1) / max_ticks;  // label every n-th decade: ≤ max_ticks labels
  const bool minor = decades <= 6;                            // 2…9 × 10^k grid lines while they stay apart
  for (int k = k0 - 1; k <= k1; ++k) {
    if (k >= k0) {
      const bool labelled = k % every == 0;
      ticks.push_back({pow10i(k), labelled ? decade_label(k, style) : "", labelled});
    }
    if (minor)
      for (int m = 2; m <= 9; ++m)
        if (inside(m * pow10i(k))) ticks.push_back({m * pow10i(k), "", false});
  }
  return ticks;
}

AxisRange padded_range(const std::vector<double>& values, bool log, bool include_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (log && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (log) {
    if (lo > hi) return {1, 10};
    if (lo == hi) return {lo / std::sqrt(10.0), hi * std::sqrt(10.0)};
    const double pad = 0.05 * (std::log10(hi) - std::log10(lo));
    return {lo / std::pow(10.0, pad), hi * std::pow(10.0, pad)};
  }
  if (lo > hi) return {0, 1};
  if (include_zero) {
    const bool zero_low = lo >= 0, zero_high = hi <= 0;
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
    if (lo == hi) return {0, 1};
    const double pad = 0.05 * (hi - lo);
    return {zero_low ? 0.0 : lo - pad, zero_high ? 0.0 : hi + pad};
  }
  if (lo == hi) {
    const double d = lo == 0 ? 1.0 : 0.1 * std::fabs(lo);
    return {lo - d, hi + d};
  }
  const double pad = 0.05 * (hi - lo);
  return {lo - pad, hi + pad};
}

double to_pixel(double value, const AxisRange& range, double pixel0, double pixel1, bool log) {
  double v = value, a = range.lo, b = range.hi;
  if (!std::isfinite(v)) return kNaN;
  if (log) {
    if (v <= 0 || a <= 0 || b <= 0) return kNaN;
    v = std::log10(v), a = std::log10(a), b = std::log10(b);
  }
  if (a == b) return 0.5 * (pixel0 + pixel1);
  return pixel0 + (v - a) / (b - a) * (pixel1 - pixel0);
}

double from_pixel(double pixel, const AxisRange& range, double pixel0, double pixel1, bool log) {
  double a = range.lo, b = range.hi;
  if (log) {
    if (a <= 0 || b <= 0) return kNaN;
    a = std::log10(a), b = std::log10(b);
  }
  const double t = pixel1 == pixel0 ? 0.5 : (pixel - pixel0) / (pixel1 - pixel0);
  const double v = a + t * (b - a);
  return log ? std::pow(10.0, v) : v;
}

PlotLayout layout_plot(float width, float height, float y_tick_label_width, float font_height, bool has_title,
                       bool has_legend, float x_tick_label_height, bool has_x_label) {
  PlotLayout l;
  width = std::max(0.0f, width), height = std::max(0.0f, height);
  font_height = std::max(1.0f, font_height);
  y_tick_label_width = std::max(0.0f, y_tick_label_width);
  const float fh = font_height;
  l.font_height = fh;
  l.gap = std::round(std::max(2.0f, 0.3f * fh));
  l.tick_length = std::round(std::max(3.0f, 0.35f * fh));
  l.x_tick_label_height = x_tick_label_height > 0 ? x_tick_label_height : fh;
  l.frame = {0, 0, width, height};
  const float g = l.gap;

  float top = g;
  l.title = {g, top, width - g, top + (has_title ? fh : 0)};
  if (has_title) top += fh + g;
  l.legend = {g, top, width - g, top + (has_legend ? fh : 0)};
  if (has_legend) top += fh + g;
  top += fh / 2;  // the top y tick label is centred on the top edge of the data area

  const float left = g + fh + g + y_tick_label_width + g + l.tick_length;
  const float right = width - g - fh;  // room for half of the last x tick label
  const float bottom = height - (g + (has_x_label ? fh + g : 0) + l.x_tick_label_height + g + l.tick_length);
  l.fits = right - left >= fh && bottom - top >= fh;
  auto clamp_x = [&](float x) { return std::clamp(x, 0.0f, width); };
  auto clamp_y = [&](float y) { return std::clamp(y, 0.0f, height); };
  l.inner = {clamp_x(left), clamp_y(top), clamp_x(std::max(left, right)), clamp_y(std::max(top, bottom))};
  if (!l.fits) l.inner.x1 = l.inner.x0, l.inner.y1 = l.inner.y0;
  l.title.x1 = std::max(l.title.x0, l.title.x1);
  l.legend.x1 = std::max(l.legend.x0, l.legend.x1);
  l.x_label = has_x_label ? PlotRect{l.inner.x0, clamp_y(height - g - fh), l.inner.x1, clamp_y(height - g)}
                          : PlotRect{l.inner.x0, clamp_y(height - g), l.inner.x1, clamp_y(height - g)};
  l.y_label = {clamp_x(g), l.inner.y0, clamp_x(g + fh), l.inner.y1};
  return l;
}

PlotRect x_tick_label_rect(const PlotLayout& l, float x, float label_width) {
  const float w = std::min(std::max(0.0f, label_width), l.frame.width());
  const float x0 = std::clamp(x - w / 2, l.frame.x0, l.frame.x1 - w);
  const float y0 = std::min(l.inner.y1 + l.tick_length + l.gap, l.frame.y1 - l.font_height);
  return {x0, std::max(l.frame.y0, y0), x0 + w, std::min(l.frame.y1, y0 + l.font_height)};
}

PlotRect y_tick_label_rect(const PlotLayout& l, float y, float label_width) {
  const float w = std::min(std::max(0.0f, label_width), l.frame.width());
  const float x1 = std::max(l.inner.x0 - l.tick_length - l.gap, l.frame.x0 + w);
  const float y0 = std::clamp(y - l.font_height / 2, l.frame.y0, std::max(l.frame.y0, l.frame.y1 - l.font_height));
  return {x1 - w, y0, x1, std::min(l.frame.y1, y0 + l.font_height)};
}

}  // namespace headlab::app
