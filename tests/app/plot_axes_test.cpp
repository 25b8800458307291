// Plot axes: nice linear steps and their labels, decade ticks, padded data ranges, value ↔ pixel
// mapping, and a frame layout whose labels stay inside the frame.
#include "test_common.h"

#include "app/layout/plot_axes.h"

#include <cmath>
#include <limits>
#include <random>
#include <set>

using namespace headlab::app;

namespace {

std::vector<std::string> labels(const std::vector<Tick>& ticks) {
  std::vector<std::string> out;
  for (const auto& t : ticks)
    if (!t.label.empty()) out.push_back(t.label);
  return out;
}

std::vector<double> values(const std::vector<Tick>& ticks) {
  std::vector<double> out;
  for (const auto& t : ticks) out.push_back(t.value);
  return out;
}

// The step between neighbouring ticks is 1, 2 or 5 times a power of ten.
bool nice(double step) {
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (std::fabs(mantissa - m) < 1e-6) return true;
  return false;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("compact numbers drop trailing zeros and switch to exponents outside 1e-3 to 1e5", "[plot]") {
  CHECK(format_compact(0.5) == "0.5");
  CHECK(format_compact(2.0) == "2");
  CHECK(format_compact(0.001) == "0.001");
  CHECK(format_compact(0.0001) == "1e-4");
  CHECK(format_compact(0.00123) == "0.00123");
  CHECK(format_compact(-0.25) == "-0.25");
  CHECK(format_compact(12345.0) == "12345");
  CHECK(format_compact(2e6) == "2e6");
  CHECK(format_compact(1.5e-5) == "1.5e-5");
  CHECK(format_compact(9.999e-5, 3) == "1e-4");  // rounding carries into the exponent
  CHECK(format_compact(0.0) == "0");
  CHECK(format_compact(kNaN) == "nan");
  CHECK(format_compact(-kInf) == "-inf");
}

TEST_CASE("linear ticks take 1/2/5 steps and label them compactly", "[plot]") {
  CHECK(labels(linear_ticks(0, 1, 6)) == std::vector<std::string>{"0", "0.2", "0.4", "0.6", "0.8", "1"});
  CHECK(labels(linear_ticks(0, 1, 3)) == std::vector<std::string>{"0", "0.5", "1"});
  CHECK(labels(linear_ticks(0, 100, 3)) == std::vector<std::string>{"0", "50", "100"});
  // 3 × 0.1 is written 0.3, not 0.30000000000000004.
  CHECK(labels(linear_ticks(0.25, 0.55, 4)) == std::vector<std::string>{"0.3", "0.4", "0.5"});
  CHECK(linear_ticks(0.25, 0.55, 4)[0].value == 0.3);
  // Small magnitudes: fixed while ≥ 1e-3, exponents below.
  CHECK(labels(linear_ticks(0, 0.003, 4)) == std::vector<std::string>{"0", "0.001", "0.002", "0.003"});
  CHECK(labels(linear_ticks(0, 4e-4, 3)) == std::vector<std::string>{"0", "2e-4", "4e-4"});
  CHECK(labels(linear_ticks(0, 2e6, 5)) == std::vector<std::string>{"0", "5e5", "1e6", "1.5e6", "2e6"});
}

TEST_CASE("linear ticks on negative, reversed, equal and non-finite ranges", "[plot]") {
  CHECK(labels(linear_ticks(-3, -1, 5)) == std::vector<std::string>{"-3", "-2.5", "-2", "-1.5", "-1"});
  CHECK(labels(linear_ticks(-0.3, 0.3, 7)) == std::vector<std::string>{"-0.3", "-0.2", "-0.1", "0", "0.1", "0.2", "0.3"});
  CHECK(values(linear_ticks(1, 0, 3)) == values(linear_ticks(0, 1, 3)));
  auto same = linear_ticks(2.5, 2.5, 5);
  REQUIRE(same.size() == 1);
  CHECK(same[0].value == 2.5);
  CHECK(same[0].label == "2.5");
  CHECK(linear_ticks(kNaN, 1, 5).empty());
  CHECK(linear_ticks(0, kInf, 5).empty());
  CHECK(linear_ticks(-1e308, 1e308, 5).empty());  // the span itself overflows
  CHECK(linear_ticks(0, 1, 0).empty());
  // A step wider than the range would leave no tick: the middle one is kept.
  CHECK(labels(linear_ticks(0.1, 0.9, 2)) == std::vector<std::string>{"0.5"});
}

TEST_CASE("linear ticks stay within the range and the count on random ranges", "[plot]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-9, 9), unit(-1, 1);
  for (int i = 0; i < 500; ++i) {
    const double scale = std::pow(10.0, exponent(rng));
    double lo = unit(rng) * scale, hi = unit(rng) * scale;
    if (lo > hi) std::swap(lo, hi);
    const int max_ticks = 2 + i % 9;
    const auto ticks = linear_ticks(lo, hi, max_ticks);
    INFO("[" << lo << ", " << hi << "] max " << max_ticks);
    REQUIRE(ticks.size() <= size_t(max_ticks));
    CHECK(ticks.size() >= 1);
    const double tol = 1e-9 * (hi - lo);
    std::set<std::string> distinct;
    for (const auto& t : ticks) {
      CHECK(t.value >= lo - tol);
      CHECK(t.value <= hi + tol);
      distinct.insert(t.label);
    }
    CHECK(distinct.size() == ticks.size());
    if (ticks.size() >= 2) CHECK(nice(ticks[1].value - ticks[0].value));
  }
}

TEST_CASE("log ticks: decades, 2 and 5 under two decades, thinned labels over many", "[plot]") {
  CHECK(labels(log_ticks(1e-3, 1)) == std::vector<std::string>{"10⁻³", "10⁻²", "10⁻¹", "1"});
  CHECK(labels(log_ticks(1e-3, 1, 10, LogLabels::Exponent)) == std::vector<std::string>{"1e-3", "1e-2", "1e-1", "1"});
  CHECK(labels(log_ticks(10, 1e4)) == std::vector<std::string>{"10", "10²", "10³", "10⁴"});
  // Minor ticks (2…9 × 10^k) are grid lines without labels.
  auto three = log_ticks(1e-3, 1);
  CHECK(three.size() == 4 + 3 * 8);
  for (const auto& t : three) CHECK(t.major == !t.label.empty());

  // One decade: 1, 2 and 5 labelled as plain numbers.
  CHECK(labels(log_ticks(1, 10)) == std::vector<std::string>{"1", "2", "5", "10"});
  CHECK(labels(log_ticks(0.01, 0.5)) == std::vector<std::string>{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5"});
  // A range holding no 1/2/5 value falls back to linear ticks.
  CHECK(labels(log_ticks(3, 4.5, 4)) == std::vector<std::string>{"3", "3.5", "4", "4.5"});

  // Thirteen decades with at most 10 labels: every decade a tick, every second one labelled.
  auto wide = log_ticks(1e-12, 1, 10);
  CHECK(wide.size() == 13);
  CHECK(labels(wide) == std::vector<std::string>{"10⁻¹²", "10⁻¹⁰", "10⁻⁸", "10⁻⁶", "10⁻⁴", "10⁻²", "1"});
  CHECK(wide.front().value == Approx(1e-12));

  CHECK(log_ticks(0, 1).empty());
  CHECK(log_ticks(-1, 10).empty());
  CHECK(log_ticks(kNaN, 10).empty());
  REQUIRE(log_ticks(5, 5).size() == 1);
  CHECK(log_ticks(5, 5)[0].label == "5");
}

TEST_CASE("padded ranges ignore what the axis cannot show", "[plot]") {
  auto r = padded_range({0, 10, kNaN, kInf}, false);
  CHECK(r.lo == Approx(-0.5));
  CHECK(r.hi == Approx(10.5));
  auto bars = padded_range({0.2, 0.8}, false, true);
  CHECK(bars.lo == 0);  // bars start at zero, without a margin below it
  CHECK(bars.hi == Approx(0.84));
  auto below = padded_range({-4, -2}, false, true);
  CHECK(below.lo == Approx(-4.2));
  CHECK(below.hi == 0);
  auto log = padded_range({-1, 0, 1e-3, 1, kNaN}, true);
  CHECK(std::log10(log.lo) == Approx(-3.15));
  CHECK(std::log10(log.hi) == Approx(0.15));
  auto one = padded_range({5}, false);
  CHECK(one.lo == Approx(4.5));
  CHECK(one.hi == Approx(5.5));
  auto zero = padded_range({0, 0}, false);
  CHECK(zero.lo == -1);
  CHECK(zero.hi == 1);
  auto one_log = padded_range({100}, true);
  CHECK(std::log10(one_log.lo) == Approx(1.5));
  CHECK(std::log10(one_log.hi) == Approx(2.5));
  CHECK(padded_range({kNaN}, false).hi == 1);
  CHECK(padded_range({0, -3}, true).lo == 1);
  CHECK(padded_range({0, -3}, true).hi == 10);
}

TEST_CASE("values map to pixels and back, linearly or by decades", "[plot]") {
  const AxisRange r{0, 10};
  CHECK(to_pixel(0, r, 100, 200, false) == 100);
  CHECK(to_pixel(2.5, r, 100, 200, false) == 125);
  CHECK(to_pixel(5, r, 300, 100, false) == 200);  // y axes grow upwards
  CHECK(from_pixel(125, r, 100, 200, false) == Approx(2.5));
  const AxisRange d{1e-3, 1};
  CHECK(to_pixel(1e-2, d, 0, 300, true) == Approx(100));
  CHECK(from_pixel(200, d, 0, 300, true) == Approx(0.1));
  CHECK(std::isnan(to_pixel(0, d, 0, 300, true)));
  CHECK(std::isnan(to_pixel(-1, d, 0, 300, true)));
  CHECK(std::isnan(to_pixel(kNaN, r, 0, 300, false)));
  CHECK(std::isnan(to_pixel(1, AxisRange{0, 1}, 0, 300, true)));
  CHECK(to_pixel(7, AxisRange{3, 3}, 0, 300, false) == 150);
  for (double v : {-3.0, 0.0, 4.2, 17.0}) CHECK(from_pixel(to_pixel(v, r, 20, 620, false), r, 20, 620, false) == Approx(v));
}

TEST_CASE("plot layout keeps every label inside the frame", "[plot]") {
  for (float w : {60.f, 120.f, 300.f, 900.f})
    for (float h : {40.f, 90.f, 240.f, 700.f})
      for (int flags = 0; flags < 4; ++flags) {
        const float fh = 15, ytw = 40;
        const bool title = flags & 1, legend = flags & 2;
        const PlotLayout l = layout_plot(w, h, ytw, fh, title, legend);
        INFO(w << " × " << h << " title " << title << " legend " << legend);
        CHECK(l.frame.contains(l.inner));
        CHECK(l.frame.contains(l.x_label));
        CHECK(l.frame.contains(l.y_label));
        if (!l.fits) {
          CHECK(l.inner.width() == 0);
          continue;
        }
        CHECK(l.frame.contains(l.title));
        CHECK(l.frame.contains(l.legend));
        CHECK(l.legend.y0 >= l.title.y1);
        CHECK(l.title.height() == (title ? fh : 0));
        CHECK(l.legend.height() == (legend ? fh : 0));
        CHECK(l.y_label.x1 <= l.inner.x0);
        CHECK(l.x_label.y0 >= l.inner.y1);
        // Ticks at the corners of the data area, with labels up to four text heights wide.
        for (float x : {l.inner.x0, l.inner.x1})
          for (float lw : {5.f, 30.f, 60.f}) {
            const PlotRect r = x_tick_label_rect(l, x, lw);
            CHECK(l.frame.contains(r));
            CHECK(r.width() == Approx(lw));
            CHECK(r.y0 >= l.inner.y1);
            CHECK(r.y1 <= l.x_label.y0);
          }
        for (float y : {l.inner.y0, l.inner.y1}) {
          const PlotRect r = y_tick_label_rect(l, y, ytw);
          CHECK(l.frame.contains(r));
          CHECK(r.x1 <= l.inner.x0);
          CHECK(r.x0 >= l.y_label.x1);
          CHECK(r.y0 >= l.legend.y1);
          CHECK(r.y0 + fh / 2 == Approx(y));
        }
        // A y label wider than the room reserved is moved inwards, never out of the frame.
        CHECK(l.frame.contains(y_tick_label_rect(l, l.inner.y0, 2 * w)));
      }
  const PlotLayout big = layout_plot(400, 300, 40, 15, true, true);
  CHECK(big.fits);
  CHECK(big.inner.width() > 300);
  CHECK(big.inner.height() > 180);
  CHECK_FALSE(layout_plot(30, 20, 40, 15, false, false).fits);
  // Room for rotated category labels comes out of the data area.
  const PlotLayout rotated = layout_plot(400, 300, 40, 15, false, false, 80);
  CHECK(rotated.inner.y1 == Approx(layout_plot(400, 300, 40, 15, false, false).inner.y1 - 65));
}
