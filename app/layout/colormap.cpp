#include "app/layout/colormap.h"

#include "analysis/viridis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headlab::app {

const char* colormap_name(Colormap map) { return map == Colormap::Gray ? "gray" : "viridis"; }
Colormap colormap_from_name(const std::string& name) { return name == "gray" ? Colormap::Gray : Colormap::Viridis; }
bool is_colormap_name(const std::string& name) { return name == "viridis" || name == "gray"; }

Rgb colormap_rgb(Colormap map, float t) {
  t = std::isfinite(t) ? std::min(1.0f, std::max(0.0f, t)) : 0.0f;
  auto byte = [](double v) { return static_cast<uint8_t>(std::lround(std::min(1.0, std::max(0.0, v)) * 255.0)); };
  if (map == Colormap::Gray) return {byte(t), byte(t), byte(t)};
  const auto v = analysis::viridis(t);
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
  // Weights from 0 — or from the map's most negative one: a talking-heads mix or a Mixer matrix with
  // negative entries gives some, and drawn as 0 they would look like no attention — to 1 on the
  // absolute scale (or to more, where a mix gives more), else to the map's maximum.
  r.lo = std::min(0.0f, lo);
  if (fixed_unit)
    r.hi = std::max(1.0f, hi);
  else
    r.hi = hi > 0 ? hi : r.lo < 0 ? 0.0f : 1.0f;
  r.log = log_scale && r.lo >= 0;  // a log scale has no place for a negative weight: linear then
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
