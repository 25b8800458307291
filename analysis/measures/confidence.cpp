// Confidence (Voita et al. 2019 §4): the mean over query tokens of the head's maximum attention
// weight, over non-special keys (and, as confidence_all_keys, over every key).
#include "analysis/measure.h"
#include "analysis/measure_kit.h"

namespace headlab::analysis {
namespace {

class ConfidenceMeasure : public Measure {
 public:
  const char* name() const override { return "confidence"; }
  const char* definition() const override {
    return "Voita et al. 2019 §4: mean over query tokens of the head's maximum attention weight (over non-special "
           "keys; confidence_all_keys over every key)";
  }
  bool reads_maps() const override { return true; }

  void add_layer(HeadReport& report, core::Stack stack, int layer, int /*heads_per_layer*/,
                 const at::Tensor& /*maps*/, const RowMaxima& rows, const SentenceLayout& /*layout*/) override {
    for (int64_t h = 0; h < rows.heads; ++h) {
      HeadEntry& e = *report.find(stack, layer, static_cast<int>(h));
      for (int64_t t = 0; t < rows.queries; ++t) {
        if (!rows.counted[size_t(t)]) continue;
        const size_t i = rows.at(h, t);
        e.confidence_sum += rows.best[i] < 0 ? 0.0 : rows.best_value[i];
        e.confidence_all_keys_sum += rows.all_keys_max[i];
      }
    }
  }

  void finalize(HeadReport& report) const override {
    for (auto& h : report.heads) {
      h.confidence = h.queries > 0 ? h.confidence_sum / double(h.queries) : 0.0;
      h.confidence_all_keys = h.queries > 0 ? h.confidence_all_keys_sum / double(h.queries) : 0.0;
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i) {
      into.heads[i].confidence_sum += other.heads[i].confidence_sum;
      into.heads[i].confidence_all_keys_sum += other.heads[i].confidence_all_keys_sum;
    }
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (report.settings.has(name())) {
      entry["confidence"] = h.confidence;
      entry["confidence_all_keys"] = h.confidence_all_keys;
    }
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    f.real("confidence_sum", h.confidence_sum);
    f.real("confidence_all_keys_sum", h.confidence_all_keys_sum);
  }


  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"confidence", "confidence", true, false, [](H h) { return kit::real_if(h.queries > 0, h.confidence); }, 0, 1},
            {"confidence_all_keys", "confidence", true, false,
             [](H h) { return kit::real_if(h.queries > 0, h.confidence_all_keys); }, 0, 1}};
  }

  std::vector<std::string> markdown_columns() const override { return {"confidence", "confidence (all keys)"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const bool q = h.queries > 0;
    return {q ? kit::fixed(h.confidence, 3) : "", q ? kit::fixed(h.confidence_all_keys, 3) : ""};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"confidence", "Confidence: mean maximum attention weight", "outlined: heads with a role", true,
             [](const HeadEntry& h) { return h.queries > 0 ? std::optional<double>(h.confidence) : std::nullopt; },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry& h) { return !h.roles.empty(); }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    if (h.queries <= 0) return {};
    char line[160];
    std::snprintf(line, sizeof line, "confidence %.3f (%.3f over every key) over %lld queries", h.confidence,
                  h.confidence_all_keys, static_cast<long long>(h.queries));
    Evidence e;
    e.text = line;
    e.description = line;
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_confidence_measure() { return std::make_unique<ConfidenceMeasure>(); }

}  // namespace headlab::analysis
