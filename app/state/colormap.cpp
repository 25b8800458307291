#include "app/state/colormap.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headlab::app {

const char* colormap_name(Colormap map) { return map == Colormap::Gray ? "gray" : "viridis"; }
Colormap colormap_from_name(const std::string& name) { return name == "gray" ? Colormap::Gray : Colormap::Viridis; }

Rgb colormap_rgb(Colormap map, float t) {
  t = std::isfinite(t) ? std::min(1.0f, std::max(0.0f, t)) : 0.0f;
  auto byte = [](double v) { return static_cast<uint8_t>(std::lround(std::min(1.0, std::max(0.0, v)) * 255.0)); };
  if (map == Colormap::Gray) return {byte(t), byte(t), byte(t)};
  // Polynomial fit of matplotlib's viridis (Matt Zucker, CC0), max error well under one 8-bit step.
  static const double c[7][3] = {{0.2777273272234177, 0.005407344544966578, 0.3340998053353061},
                                 {0.1050930431085774, 1.404613529898575, 1.384590162594685},
                                 {-0.3308618287255563, 0.214847559468213, 0.09509516302823659},
                                 {-4.634230498983486, -5.799100973351585, -19.33244095627987},
                                 {6.228269936347081, 14.17993336680509, 56.69055260068105},
                                 {4.776384997670288, -13.74514537774601, -65.35303263337234},
                                 {-5.435455855934631, 4.645852612178535, 26.3124352495832}};
  double v[3];
  for (int ch = 0; ch < 3; ++ch) {
    double acc = c[6][ch];
    for (int i = 5; i >= 0; --i) acc = acc * t + c[i][ch];
    v[ch] = acc;
  }
  return {byte(v[0]), byte(v[1]), byte(v[2])};
}

float MapRange::normalize(float v) const {
  if (!std::isfinite(v)) return 0.0f;
  if (log) {
    const float floor = hi * 1e-4f;
    if (v <= floor || hi <= 0) return 0.0f;
    return std::log10(v / floor) / 4.0f;
  }
  if (hi <= lo) return v >= hi ? 1.0f : 0.0f;
  return std::min(1.0f, std::max(0.0f, (v - lo) / (hi - lo)));
}

MapRange map_range(const float* data, size_t n, bool logits, bool log_scale, bool fixed_unit) {
  MapRange r;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(data[i])) lo = std::min(lo, data[i]), hi = std::max(hi, data[i]);
  if (lo > hi) lo = 0, hi = 1;
  if (logits) {
    r.lo = lo, r.hi = hi;
    return r;
  }
  r.lo = 0;
  r.hi = fixed_unit || hi <= 0 ? 1.0f : hi;
  r.log = log_scale;
  return r;
}

void colorize(const float* data, int rows, int cols, const MapRange& range, Colormap map, uint8_t* rgba) {
  // A 256-entry table: one polynomial per pixel is too slow for 144 maps of 512².
  Rgb lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = colormap_rgb(map, i / 255.0f);
  const size_t n = static_cast<size_t>(rows) * cols;
  for (size_t i = 0; i < n; ++i) {
    const int idx = static_cast<int>(range.normalize(data[i]) * 255.0f + 0.5f);
    const Rgb c = lut[std::min(255, std::max(0, idx))];
    rgba[4 * i] = c.r, rgba[4 * i + 1] = c.g, rgba[4 * i + 2] = c.b, rgba[4 * i + 3] = 255;
  }
}

}  // namespace headlab::app
