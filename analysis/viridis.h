// matplotlib's viridis colormap (perceptually uniform), shared by the report figures and the
// window's heatmaps. Header-only and torch-free, so GUI translation units may include it.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>

namespace headlab::analysis {

// viridis(t) for t in [0, 1] as RGB in [0, 1]: a degree-6 polynomial per channel (fit by Matt Zucker,
// CC0; max error under one 8-bit step); viridis(0) = #440154, viridis(1) = #fde725. Non-finite t → 0.
inline std::array<double, 3> viridis(double t) {
  t = std::isfinite(t) ? std::clamp(t, 0.0, 1.0) : 0.0;
  static const double c[7][3] = {{0.2777273272234177, 0.005407344544966578, 0.3340998053353061},
                                 {0.1050930431085774, 1.404613529898575, 1.384590162594685},
                                 {-0.3308618287255563, 0.214847559468213, 0.09509516302823659},
                                 {-4.634230498983486, -5.799100973351585, -19.33244095627987},
                                 {6.228269936347081, 14.17993336680509, 56.69055260068105},
                                 {4.776384997670288, -13.74514537774601, -65.35303263337234},
                                 {-5.435455855934631, 4.645852612178535, 26.3124352495832}};
  std::array<double, 3> v{};
  for (int ch = 0; ch < 3; ++ch) {
    double acc = c[6][ch];
    for (int i = 5; i >= 0; --i) acc = acc * t + c[i][ch];
    v[ch] = std::clamp(acc, 0.0, 1.0);
  }
  return v;
}

}  // namespace headlab::analysis
