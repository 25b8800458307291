// The Relevance view's shading: symmetric around zero, equal magnitudes equal strength, robust to
// non-finite values and all-zero inputs.
#include "test_common.h"

#include "app/layout/relevance_colors.h"

#include <limits>

using namespace headlab::app;

TEST_CASE("relevance shades on a scale symmetric around zero", "[app][relevance]") {
  const std::vector<double> r{0.5, -2.0, 1.0, std::numeric_limits<double>::quiet_NaN()};
  const double scale = relevance_scale(r);
  CHECK(scale == 2.0);
  CHECK(relevance_strength(-2.0, scale) == -1.0);
  CHECK(relevance_strength(1.0, scale) == 0.5);
  CHECK(relevance_strength(std::numeric_limits<double>::infinity(), scale) == 0.0);
  CHECK(relevance_scale({0.0, 0.0}) == 1.0);  // nothing to shade: no division by zero
  CHECK(relevance_scale({}) == 1.0);

  const Rgb zero = relevance_rgb(0), pos = relevance_rgb(1), neg = relevance_rgb(-1), half = relevance_rgb(0.5);
  CHECK((zero.r == kRelevanceNeutral.r && zero.g == kRelevanceNeutral.g && zero.b == kRelevanceNeutral.b));
  CHECK((pos.r == kRelevancePositive.r && pos.b == kRelevancePositive.b));
  CHECK((neg.r == kRelevanceNegative.r && neg.b == kRelevanceNegative.b));
  CHECK(half.r == (kRelevanceNeutral.r + kRelevancePositive.r + 1) / 2);
  // Equal magnitudes: as far from neutral on either side (in the red and blue channels' sum).
  const Rgb p = relevance_rgb(0.3), n = relevance_rgb(-0.3);
  CHECK(std::abs((p.r - kRelevanceNeutral.r) / double(kRelevancePositive.r - kRelevanceNeutral.r) -
                 (n.b - kRelevanceNeutral.b) / double(kRelevanceNegative.b - kRelevanceNeutral.b)) < 0.02);
  CHECK(relevance_rgb(5).r == kRelevancePositive.r);  // clamped
}

TEST_CASE("rollout and flow shade from 0 to 1: a row spread evenly stays faint", "[app][relevance]") {
  // The default model's rollout row into [MASK]: 0.060 … 0.114 over 11 tokens, near uniform (1/11).
  const std::vector<double> rollout{0.060, 0.071, 0.114, 0.090, 0.085, 0.101, 0.088, 0.095, 0.099, 0.097, 0.100};
  const double scale = shading_scale(true, rollout);
  CHECK(scale == 1.0);
  for (double v : rollout) CHECK(relevance_strength(v, scale) < 0.12);
  // One token holding most of the attention is drawn strong.
  CHECK(relevance_strength(0.8, shading_scale(true, {0.8, 0.1, 0.1})) == Approx(0.8));
  // LRP's relevance has no unit: its largest |value|.
  CHECK(shading_scale(false, {0.5, -2.0}) == 2.0);
}
