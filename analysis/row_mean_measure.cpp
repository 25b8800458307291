#include "analysis/row_mean_measure.h"

#include "analysis/head_stats.h"
#include "analysis/measure_kit.h"

#include "core/model/attention.h"
#include "core/model/model.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace headlab::analysis {

using kit::stat_of;

void RowMeanMeasure::begin(HeadReport& /*report*/, core::Model& model, const AnalyzeOptions& /*options*/) {
  config_ = model.config;
}

void RowMeanMeasure::add_layer(HeadReport& report, core::Stack stack, int layer, int /*heads_per_layer*/,
                               const at::Tensor& maps, const RowMaxima& rows, const SentenceLayout& /*layout*/) {
  // maps [heads, T, S] float32, contiguous (analysis/analyze.cpp)
  const int64_t T = maps.size(1), S = maps.size(2);
  const float* data = maps.data_ptr<float>();
  // The keys each query may attend to, for a baseline that needs them, from the mask the model
  // applies: self-attention's causal and windowed patterns (a weight that underflowed to 0 is still
  // an allowed key); every key for cross-attention.
  std::vector<int64_t> allowed(size_t(T), S);
  const bool sinks = has_sinks(stack, layer);
  if (has_baseline_ && stack != core::Stack::Cross) {
    const auto& s = stack == core::Stack::Encoder ? *config_.encoder : *config_.decoder;
    const auto mask = core::attention_allowed(T, S, stack == core::Stack::Decoder, s.layer_attention(layer).pattern)
                          .sum(1)
                          .to(at::kLong)
                          .contiguous();  // [T]
    const int64_t* counts = mask.data_ptr<int64_t>();
    allowed.assign(counts, counts + T);
  }
  for (int64_t h = 0; h < rows.heads; ++h) {
    HeadEntry& e = *report.find(stack, layer, static_cast<int>(h));
    double& sum = e.values[stat("sum")];
    double& base = e.values[stat("baseline_sum")];
    double& counted = e.values[stat("rows")];
    double& invalid = e.values[stat("invalid_rows")];
    for (int64_t t = 0; t < T; ++t) {
      if (!rows.counted[size_t(t)]) continue;
      Row row{data + (h * T + t) * S, S, t, allowed[size_t(t)]};
      if (sinks) {
        // W's row and the sink's share together are the softmax: weights ≥ 0 summing to at most 1.
        double sum = 0;
        float least = 0;
        for (int64_t s = 0; s < S; ++s) {
          sum += row.weights[s];
          least = std::min(least, row.weights[s]);
        }
        if (least < -1e-6f || sum > 1.0 + 1e-3) {
          invalid += 1;
          continue;
        }
        row.sinks = true;
        row.sink = std::max(0.0, 1.0 - sum);
      } else if (!rows.distribution[rows.at(h, t)]) {
        invalid += 1;
        continue;
      }
      const Value v = row_value(row);
      sum += v.value;
      base += v.baseline;
      counted += 1;
    }
  }
}

bool RowMeanMeasure::has_sinks(core::Stack stack, int layer) const {
  if (stack == core::Stack::Cross) return false;
  const auto& s = stack == core::Stack::Encoder ? config_.encoder : config_.decoder;
  return s && s->layer_attention(layer).sinks;
}

void RowMeanMeasure::end(HeadReport& report) {
  bool sinks = false;
  for (const auto& h : report.heads) sinks = sinks || has_sinks(h.stack, h.layer);
  if (sinks) report.notes.push_back(key_ + " with learned attention sinks: " + sink_treatment());
  int64_t heads = 0;
  for (const auto& h : report.heads) heads += stat_of(h, stat("invalid_rows")) > 0;
  if (heads > 0)
    report.notes.push_back(key_ + ": left empty for " + std::to_string(heads) +
                           " heads whose maps are not probability distributions (negative weights or rows not "
                           "summing to 1: talking heads or a mixing matrix, read at stage U; --stage softmax reads "
                           "W, which is one)");
}

std::optional<double> RowMeanMeasure::mean(const HeadEntry& h) const {
  const double rows = stat_of(h, stat("rows"));
  if (rows <= 0 || stat_of(h, stat("invalid_rows")) > 0) return std::nullopt;
  return stat_of(h, stat("sum")) / rows;
}

std::optional<double> RowMeanMeasure::baseline(const HeadEntry& h) const {
  const double rows = stat_of(h, stat("rows"));
  if (!has_baseline_ || rows <= 0 || stat_of(h, stat("invalid_rows")) > 0) return std::nullopt;
  return stat_of(h, stat("baseline_sum")) / rows;
}

void RowMeanMeasure::finalize(HeadReport& report) const {
  for (auto& h : report.heads) {
    h.values.erase(key_);
    h.values.erase(key_ + "_baseline");
    if (const auto m = mean(h)) h.values[key_] = *m;
    if (const auto b = baseline(h)) h.values[key_ + "_baseline"] = *b;
  }
}

void RowMeanMeasure::merge(HeadReport& into, const HeadReport& other) const {
  for (size_t i = 0; i < into.heads.size(); ++i)
    for (const char* part : {"sum", "baseline_sum", "rows", "invalid_rows"})
      into.heads[i].values[stat(part)] += stat_of(other.heads[i], stat(part));
}

void RowMeanMeasure::head_stats(StatsFields& f, HeadEntry& h) const {
  for (const char* part : {"sum", "baseline_sum", "rows", "invalid_rows"}) f.added_real(stat(part).c_str(), h.values[stat(part)]);
}

void RowMeanMeasure::write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const {
  if (!report.settings.has(name())) return;
  const auto m = mean(h);
  entry[key_] = m ? nlohmann::json(*m) : nlohmann::json();
  if (has_baseline_) {
    const auto b = baseline(h);
    entry[key_ + "_baseline"] = b ? nlohmann::json(*b) : nlohmann::json();
  }
}

std::vector<std::string> RowMeanMeasure::markdown_columns() const {
  std::vector<std::string> out{key_ + (unit_.empty() ? "" : " (" + unit_ + ")")};
  if (has_baseline_) out.push_back(key_ + " baseline");
  return out;
}

std::vector<std::string> RowMeanMeasure::markdown_cells(const HeadEntry& h) const {
  const auto m = mean(h), b = baseline(h);
  std::vector<std::string> out{m ? kit::fixed(*m, digits_) : ""};
  if (has_baseline_) out.push_back(b ? kit::fixed(*b, digits_) : "");
  return out;
}

std::vector<Evidence> RowMeanMeasure::evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const {
  const auto m = mean(h);
  Evidence e;
  if (m) {
    e.text = describe(*m, baseline(h).value_or(0.0), static_cast<int64_t>(stat_of(h, stat("rows"))));
  } else if (stat_of(h, stat("invalid_rows")) > 0) {
    e.text = key_ + ": none — this head's map rows are not probability distributions";
  } else {
    return {};
  }
  e.description = e.text;
  return {e};
}

}  // namespace headlab::analysis
