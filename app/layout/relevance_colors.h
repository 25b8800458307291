// How the Relevance view shades tokens and heads: signed relevance on a diverging scale (positive
// red, negative blue, zero the neutral background), symmetric around 0 so equal magnitudes get
// equal strength; non-negative scores (rollout, flow) use the positive half. No ImGui: tested headless.
#pragma once

#include "app/layout/colormap.h"

#include <vector>

namespace headlab::app {

// The scale's half-width: the largest |value| (non-finite values ignored); 1 when every value is 0.
double relevance_scale(const std::vector<double>& values);
// The scale of a token shading, the same on screen and in the figure: LRP's relevance has no unit of
// its own, so its largest |value|; rollout and flow (`shares`) are shares of the target's attention in
// [0, 1], so 1 — a row spread evenly over the input stays faint instead of every token drawn at full
// strength because none is larger.
double shading_scale(bool shares, const std::vector<double>& values);
// A value's strength in [-1, 1] on that scale (0 for non-finite values).
double relevance_strength(double value, double scale);
// The colour of a strength: the neutral colour at 0, kPositive at +1, kNegative at −1, linear between.
Rgb relevance_rgb(double strength);

inline constexpr Rgb kRelevanceNeutral{52, 52, 58};
inline constexpr Rgb kRelevancePositive{214, 39, 40};
inline constexpr Rgb kRelevanceNegative{31, 119, 220};

}  // namespace headlab::app
