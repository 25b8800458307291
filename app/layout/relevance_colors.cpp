#include "app/layout/relevance_colors.h"

#include <algorithm>
#include <cmath>

namespace headlab::app {

double relevance_scale(const std::vector<double>& values) {
  double scale = 0;
  for (double v : values)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  return scale > 0 ? scale : 1.0;
}

double shading_scale(bool shares, const std::vector<double>& values) { return shares ? 1.0 : relevance_scale(values); }

double relevance_strength(double value, double scale) {
  if (!std::isfinite(value) || !(scale > 0)) return 0;
  return std::clamp(value / scale, -1.0, 1.0);
}

Rgb relevance_rgb(double strength) {
  if (!std::isfinite(strength)) strength = 0;
  const double t = std::min(1.0, std::abs(strength));
  const Rgb end = strength >= 0 ? kRelevancePositive : kRelevanceNegative;
  auto mix = [t](uint8_t a, uint8_t b) { return static_cast<uint8_t>(std::lround(a + (b - a) * t)); };
  return {mix(kRelevanceNeutral.r, end.r), mix(kRelevanceNeutral.g, end.g), mix(kRelevanceNeutral.b, end.b)};
}

}  // namespace headlab::app
