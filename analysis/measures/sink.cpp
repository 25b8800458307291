// Sink share: the mean over query tokens of the attention on the input's first token — [CLS] or the
// begin-of-sequence token where the tokenizer frames text with one, else the first word's token.
// Clark et al. 2019 §3 found much of BERT's attention on [CLS] and [SEP]; Xiao et al. 2024 ("attention
// sinks") on a causal model's first token, whatever it is.
#include "analysis/measure_kit.h"
#include "analysis/row_mean_measure.h"

#include <cstdio>

namespace headlab::analysis {
namespace {

class SinkMeasure : public RowMeanMeasure {
 public:
  SinkMeasure() : RowMeanMeasure("sink", /*has_baseline=*/false, "", 3) {}
  const char* name() const override { return "sink"; }
  const char* definition() const override {
    return "mean over query tokens of the attention on the input's first token ([CLS] / BOS where the tokenizer "
           "frames text with one); Clark et al. 2019 §3, Xiao et al. 2024";
  }

  std::vector<ReportColumn> columns() const override {
    return {{"sink", "sink", true, false, [](const HeadEntry& h) { return kit::value_cell(h, "sink"); }, 0, 1}};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"sink", "Sink share: attention on the first token", "", true, [this](const HeadEntry& h) { return mean(h); },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry&) { return false; }}};
  }

 protected:
  Value row_value(const Row& row) const override { return {row.keys > 0 ? double(row.weights[0]) : 0.0, 0.0}; }

  std::string sink_treatment() const override {
    return "the sink share stays the first token's weight as a share of the whole softmax, learned sink included; the "
           "learned sink's own share is the run dump's sink_share.{l} and the Attention map's sink column";
  }

  std::string describe(double mean, double /*baseline*/, int64_t rows) const override {
    char line[160];
    std::snprintf(line, sizeof line, "sink share %.3f: attention on the first token, over %lld queries", mean,
                  static_cast<long long>(rows));
    return line;
  }
};

}  // namespace

std::unique_ptr<Measure> make_sink_measure() { return std::make_unique<SinkMeasure>(); }

}  // namespace headlab::analysis
