// Mean attention distance (Vig & Belinkov 2019 §4.3): the mean over query tokens of Σ_s a_s |t − s|,
// the distance from the query t to its keys weighted by attention, in tokens. Cross-attention reads
// the same sentence on both sides here (analysis/README.md), so its distances compare positions too.
// A learned sink has no position: its share is left out and the tokens' share renormalised.
#include "analysis/measure_kit.h"
#include "analysis/row_mean_measure.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace headlab::analysis {
namespace {

class DistanceMeasure : public RowMeanMeasure {
 public:
  DistanceMeasure() : RowMeanMeasure("distance", /*has_baseline=*/false, "tokens", 2) {}
  const char* name() const override { return "distance"; }
  const char* definition() const override {
    return "Vig & Belinkov 2019 §4.3: mean over query tokens t of sum_s a_s |t - s|, the attention-weighted "
           "distance to the keys, in tokens";
  }

  std::vector<ReportColumn> columns() const override {
    return {{"distance", "distance", true, false, [](const HeadEntry& h) { return kit::value_cell(h, "distance"); }}};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"distance", "Mean attention distance (tokens)", "", false, [this](const HeadEntry& h) { return mean(h); },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry&) { return false; }}};
  }

 protected:
  Value row_value(const Row& row) const override {
    double d = 0;
    for (int64_t s = 0; s < row.keys; ++s) d += double(row.weights[s]) * double(std::llabs(row.query - s));
    // A learned sink has no position: the distance is the tokens' share's, renormalised to 1.
    const double tokens = 1.0 - row.sink;
    return {tokens > 1e-12 ? d / tokens : 0.0, 0.0};
  }

  std::string sink_treatment() const override {
    return "the sink has no position, so the distance is over the tokens' share of each row, renormalised to 1 (the "
           "distance given that the head reads a token)";
  }

  std::string describe(double mean, double /*baseline*/, int64_t rows) const override {
    char line[160];
    std::snprintf(line, sizeof line, "mean attention distance %.2f tokens over %lld queries", mean,
                  static_cast<long long>(rows));
    return line;
  }
};

}  // namespace

std::unique_ptr<Measure> make_distance_measure() { return std::make_unique<DistanceMeasure>(); }

}  // namespace headlab::analysis
