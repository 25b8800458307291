// The copying score of each head's OV circuit (Elhage et al. 2021): Re(Σλ)/Σ|λ| over the eigenvalues
// of W_E W_V^h W_O^h W_U, folded as TransformerLens folds the norms (analysis/circuits.h). From the
// weights, no data needed; a head is a copying head when its score is ≥ the threshold.
#include "analysis/circuits.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"

#include <complex>
#include <cstdio>

namespace headlab::analysis {
namespace {

std::optional<double> score_of(const HeadEntry& h) {
  if (kit::stat_of(h, "copying_measured") <= 0) return std::nullopt;
  return kit::stat_of(h, "copying_score");
}

class CopyingMeasure : public Measure {
 public:
  const char* name() const override { return "copying"; }
  bool needs_data() const override { return false; }
  const char* definition() const override {
    return "Elhage et al. 2021: Re(sum of eigenvalues) / sum of |eigenvalues| of the OV circuit W_E W_V^h W_O^h W_U, "
           "its norms folded as TransformerLens folds them; 1 copies the attended token to the output, -1 suppresses "
           "it. No data needed";
  }

  void begin(HeadReport& report, core::Model& model, const AnalyzeOptions& /*options*/) override {
    const auto circuits = ov_circuits(model);
    for (const auto& note : circuits.notes) report.notes.push_back(note);
    for (const auto& c : circuits.heads) {
      HeadEntry* e = report.find(c.stack, c.layer, c.head);
      if (!e || !c.copying) continue;
      e->values["copying_score"] = *c.copying;
      e->values["copying_measured"] = 1;
      // The three largest eigenvalues, for the evidence.
      for (size_t i = 0; i < 3 && i < c.eigenvalues.size(); ++i) {
        e->values["copying_eig" + std::to_string(i) + "_re"] = c.eigenvalues[i].real();
        e->values["copying_eig" + std::to_string(i) + "_im"] = c.eigenvalues[i].imag();
      }
    }
  }

  void finalize(HeadReport& report) const override {
    const auto& s = report.settings;
    if (!s.has(name())) return;
    for (auto& h : report.heads)
      if (const auto score = score_of(h); score && *score >= s.copying_threshold) h.roles.push_back("copying");
  }

  // Every shard computes the same weights' scores: a merge keeps one copy.
  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i)
      if (!score_of(into.heads[i]) && score_of(other.heads[i]))
        for (const auto& [key, value] : other.heads[i].values)
          if (key.rfind("copying_", 0) == 0) into.heads[i].values[key] = value;
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    f.added_real("copying_measured", h.values["copying_measured"]);
    f.added_real("copying_score", h.values["copying_score"]);
    for (int i = 0; i < 3; ++i)
      for (const char* part : {"_re", "_im"}) {
        const std::string key = "copying_eig" + std::to_string(i) + part;
        f.added_real(key.c_str(), h.values[key]);
      }
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (!report.settings.has(name())) return;
    const auto score = score_of(h);
    entry["copying"] = score ? nlohmann::json(*score) : nlohmann::json();
  }

  std::vector<ReportColumn> columns() const override {
    return {{"copying", "copying", true, false, [](const HeadEntry& h) {
               const auto s = score_of(h);
               return s ? kit::real(*s) : ReportCell{};
             }, -1, 1}};
  }

  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- copying head: OV copying score ≥ " + kit::fixed(s.copying_threshold, 2) +
            " (Elhage et al. 2021 give none; HeadLab's threshold)"};
  }
  std::vector<std::string> markdown_roles(const HeadEntry& h) const override {
    for (const auto& role : h.roles)
      if (role == "copying") return {"copying — OV copying score " + kit::fixed(*score_of(h), 3)};
    return {};
  }
  std::vector<RoleThreshold> role_thresholds() const override {
    return {{"copying_threshold", "copying ≥", "OV copying score (Elhage et al. 2021)", -1.0, 1.0,
             &ReportSettings::copying_threshold}};
  }
  std::vector<std::string> markdown_columns() const override { return {"copying"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const auto s = score_of(h);
    return {s ? kit::fixed(*s, 3) : ""};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& s) const override {
    const double threshold = s.copying_threshold;
    return {{"copying", "OV copying score (-1 suppresses, 1 copies)",
             "outlined: copying heads (≥ " + kit::fixed(threshold, 2) + ")", false,
             [](const HeadEntry& h) { return score_of(h); }, [](const HeadEntry&) { return std::string(); },
             [threshold](const HeadEntry& h) {
               const auto score = score_of(h);
               return score && *score >= threshold;
             }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    const auto score = score_of(h);
    if (!score) return {};
    std::string eig;
    for (int i = 0; i < 3; ++i) {
      const auto re = kit::value_of(h, "copying_eig" + std::to_string(i) + "_re");
      if (!re) break;
      const double im = kit::stat_of(h, "copying_eig" + std::to_string(i) + "_im");
      char z[64];
      std::snprintf(z, sizeof z, "%s%.3g%+.3gi", i ? ", " : "", *re, im);
      eig += z;
    }
    char line[240];
    std::snprintf(line, sizeof line, "OV copying score %.3f (largest eigenvalues of W_E W_V W_O W_U: %s)", *score,
                  eig.c_str());
    Evidence e;
    e.text = line;
    e.description = line;
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_copying_measure() { return std::make_unique<CopyingMeasure>(); }

}  // namespace headlab::analysis
