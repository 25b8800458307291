// Attention entropy (Clark et al. 2019 §3, "broad attention"): the mean over query tokens of the
// entropy −Σ_s a_s ln a_s of the head's attention row, in nats, beside the entropy of a uniform row
// over the same keys (ln of the keys the query may attend to), which bounds it. A head that looks
// at one token has 0; a head that spreads evenly has its bound. A learned sink (gpt-oss) is one
// more outcome of the row's softmax, in the entropy and in its bound.
#include "analysis/measure_kit.h"
#include "analysis/row_mean_measure.h"

#include <cmath>
#include <cstdio>

namespace headlab::analysis {
namespace {

class EntropyMeasure : public RowMeanMeasure {
 public:
  EntropyMeasure() : RowMeanMeasure("entropy", /*has_baseline=*/true, "nats", 3) {}
  const char* name() const override { return "entropy"; }
  const char* definition() const override {
    return "Clark et al. 2019 §3: mean over query tokens of the attention row's entropy -sum_s a_s ln a_s (nats; "
           "entropy_baseline: the mean of ln(keys the query may attend to), a uniform row's)";
  }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"entropy", "entropy", true, false, [](H h) { return kit::value_cell(h, "entropy"); }},
            {"entropy_baseline", "entropy", true, false, [](H h) { return kit::value_cell(h, "entropy_baseline"); }}};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"entropy", "Entropy over its uniform bound (0: one key, 1: spread evenly)", "", true,
             [this](const HeadEntry& h) -> std::optional<double> {
               const auto m = mean(h), b = baseline(h);
               if (!m || !b || *b <= 0) return std::nullopt;
               return *m / *b;
             },
             [this](const HeadEntry& h) {
               const auto m = mean(h);
               return m ? kit::fixed(*m, 2) + " nats" : std::string();
             },
             [](const HeadEntry&) { return false; }}};
  }

 protected:
  Value row_value(const Row& row) const override {
    double entropy = 0;
    for (int64_t s = 0; s < row.keys; ++s) {
      const double a = row.weights[s];
      if (a > 0) entropy -= a * std::log(a);  // 0 · ln 0 = 0: masked keys and underflowed weights
    }
    if (row.sink > 0) entropy -= row.sink * std::log(row.sink);
    // A learned sink is one more outcome of the softmax: the uniform bound counts it.
    const int64_t outcomes = row.allowed + (row.sinks ? 1 : 0);
    return {entropy, outcomes > 0 ? std::log(double(outcomes)) : 0.0};
  }

  std::string sink_treatment() const override {
    return "the sink is one more outcome of each row's distribution: its share s adds -s ln s, and the uniform bound "
           "is ln(keys + 1)";
  }

  std::string describe(double mean, double baseline, int64_t rows) const override {
    char line[200];
    std::snprintf(line, sizeof line, "entropy %.3f nats over %lld queries (a uniform row over the same keys: %.3f)",
                  mean, static_cast<long long>(rows), baseline);
    return line;
  }
};

}  // namespace

std::unique_ptr<Measure> make_entropy_measure() { return std::make_unique<EntropyMeasure>(); }

}  // namespace headlab::analysis
