// What the measures that average one quantity of each attention row share (internal to analysis/):
// entropy, mean attention distance and sink share. Each is a mean over the counted (non-special)
// queries of every measured sentence of a value computed from the query's whole row — every key,
// special ones included — with an optional baseline averaged over the same rows (the entropy's
// uniform bound). With learned attention sinks a row of W sums to 1 − the sink's share: the row and
// the sink together are the softmax's distribution, and each measure says how it counts the sink
// (`sink_treatment`). Rows that are not probability distributions (talking heads or a mixing matrix
// reading U: negative weights, sums other than 1) have no such value; a head with one is left empty,
// and the report's notes say so.
#pragma once

#include "analysis/measure.h"
#include "core/config.h"

#include <string>
#include <vector>

namespace headlab::analysis {

class RowMeanMeasure : public Measure {
 public:
  struct Row {
    const float* weights;  // [S] the query's row
    int64_t keys;          // S
    int64_t query;         // its position t
    int64_t allowed;       // the keys the query may attend to (its causal or windowed mask; all for cross-attention)
    bool sinks = false;    // the layer's heads have learned sinks
    double sink = 0;       // the learned sink's share of the softmax, 1 − Σ weights (0 without sinks)
  };
  struct Value {
    double value = 0;
    double baseline = 0;
  };

  bool reads_maps() const override { return true; }
  void begin(HeadReport& report, core::Model& model, const AnalyzeOptions& options) override;
  void add_layer(HeadReport& report, core::Stack stack, int layer, int heads_per_layer, const at::Tensor& maps,
                 const RowMaxima& rows, const SentenceLayout& layout) override;
  void end(HeadReport& report) override;
  void finalize(HeadReport& report) const override;
  void merge(HeadReport& into, const HeadReport& other) const override;
  void head_stats(StatsFields& fields, HeadEntry& head) const override;
  void write_values(const HeadReport& report, const HeadEntry& head, nlohmann::json& entry) const override;
  std::vector<std::string> markdown_columns() const override;
  std::vector<std::string> markdown_cells(const HeadEntry& head) const override;
  std::vector<Evidence> evidence(const HeadEntry& head, const ReportSettings& settings) const override;

  // The head's mean, or nothing when no row was measured or a row was not a distribution.
  std::optional<double> mean(const HeadEntry& head) const;
  std::optional<double> baseline(const HeadEntry& head) const;

 protected:
  // `key` names the statistics (KEY_sum, KEY_rows, …) and the value (KEY, KEY_baseline).
  RowMeanMeasure(std::string key, bool has_baseline, std::string unit, int digits)
      : key_(std::move(key)), has_baseline_(has_baseline), unit_(std::move(unit)), digits_(digits) {}
  // The row's value (and baseline); rows reach it only when they are distributions.
  virtual Value row_value(const Row& row) const = 0;
  // One line of the head's evidence, given its mean and baseline.
  virtual std::string describe(double mean, double baseline, int64_t rows) const = 0;
  // How row_value counts a learned sink's share, for the report's notes on a model with sinks.
  virtual std::string sink_treatment() const = 0;

  const std::string& key() const { return key_; }

 private:
  std::string stat(const char* part) const { return key_ + "_" + part; }
  bool has_sinks(core::Stack stack, int layer) const;  // the layer's heads have learned sinks
  std::string key_;
  core::ModelConfig config_;  // the measured model's: which keys each query may attend to, which layers have sinks
  bool has_baseline_;
  std::string unit_;
  int digits_;
};

}  // namespace headlab::analysis
