// LRP relevance (Voita et al. 2019 §4, with analysis/LRP.md's rules: Ali et al. 2022; Achtibat et
// al. 2024): each head's relevance R_i for the top-1 logit at the sentence's last word, raw and
// normalised within its layer, averaged over sentences; conservation is checked on every sentence.
#include "analysis/dataset.h"
#include "analysis/lrp.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "core/json_integer.h"

#include <algorithm>

namespace headlab::analysis {
namespace {

class LrpMeasure : public Measure {
 public:
  const char* name() const override { return "lrp"; }
  const char* definition() const override {
    return "Voita et al. 2019 §4 with analysis/LRP.md's rules (Ali et al. 2022; Achtibat et al. 2024): raw head "
           "relevance and relevance normalised within the layer, averaged over sentences; f is the top-1 logit at "
           "each sentence's last word; conservation is checked on every sentence";
  }

  void add_sentence(HeadReport& report, SentenceWork& work) override {
    LrpTarget target;
    target.position = kit::last_word_token(work.tokens);
    const LrpResult lrp = lrp_relevance(work.model, work.tokens.ids, target, {}, work.decoder_ids);
    const HeadValues normalized = normalize_per_layer(lrp.heads);
    for (const auto& [stack, layers] : lrp.heads)
      for (size_t l = 0; l < layers.size(); ++l)
        for (size_t h = 0; h < layers[l].size(); ++h)
          if (HeadEntry* e = report.find(stack, static_cast<int>(l), static_cast<int>(h))) {
            e->lrp_raw_sum += layers[l][h];
            e->lrp_normalized_sum += normalized.at(stack)[l][h];
            ++e->lrp_sentences;
          }
    const double residual = lrp.relative_residual();
    report.lrp_max_relative_residual = std::max(report.lrp_max_relative_residual, residual);
    if (residual > report.settings.lrp_tolerance) {
      ++report.lrp_sentences_over_tolerance;
      if (report.lrp_failures.size() < 10) report.lrp_failures.push_back(work.sentence.source);
    }
  }

  void finalize(HeadReport& report) const override {
    for (auto& h : report.heads) {
      h.lrp_raw = h.lrp_sentences > 0 ? h.lrp_raw_sum / double(h.lrp_sentences) : 0.0;
      h.lrp_normalized = h.lrp_sentences > 0 ? h.lrp_normalized_sum / double(h.lrp_sentences) : 0.0;
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i) {
      into.heads[i].lrp_raw_sum += other.heads[i].lrp_raw_sum;
      into.heads[i].lrp_normalized_sum += other.heads[i].lrp_normalized_sum;
      into.heads[i].lrp_sentences += other.heads[i].lrp_sentences;
    }
    into.lrp_max_relative_residual = std::max(into.lrp_max_relative_residual, other.lrp_max_relative_residual);
    into.lrp_sentences_over_tolerance += other.lrp_sentences_over_tolerance;
    for (const auto& f : other.lrp_failures)
      if (into.lrp_failures.size() < 10) into.lrp_failures.push_back(f);
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (report.settings.has(name()))
      entry["lrp"] = {{"raw", h.lrp_raw}, {"normalized", h.lrp_normalized}, {"sentences", h.lrp_sentences}};
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    f.real("lrp_raw_sum", h.lrp_raw_sum);
    f.real("lrp_normalized_sum", h.lrp_normalized_sum);
    f.count("lrp_sentences", h.lrp_sentences);
  }


  void write_report(const HeadReport& r, nlohmann::json& out) const override {
    out["lrp_conservation"] = {{"max_relative_residual", r.lrp_max_relative_residual},
                               {"sentences_over_tolerance", r.lrp_sentences_over_tolerance},
                               {"examples_over_tolerance", r.lrp_failures}};
  }

  void read_report(const nlohmann::json& in, HeadReport& r) const override {
    const nlohmann::json& c = in.at("lrp_conservation");
    r.lrp_max_relative_residual = c.at("max_relative_residual").get<double>();
    r.lrp_sentences_over_tolerance = core::get_integer<int64_t>(c.at("sentences_over_tolerance"));
    r.lrp_failures = c.value("examples_over_tolerance", std::vector<std::string>{});
  }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"lrp_raw", "lrp", true, false, [](H h) { return kit::real_if(h.lrp_sentences > 0, h.lrp_raw); }},
            {"lrp_normalized", "lrp", true, false, [](H h) { return kit::real_if(h.lrp_sentences > 0, h.lrp_normalized); }}};
  }

  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- LRP conservation tolerance: residual ≤ " + kit::general(s.lrp_tolerance) + " · |f|"};
  }
  std::vector<std::string> markdown_columns() const override { return {"LRP raw", "LRP normalised"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const bool any = h.lrp_sentences > 0;
    return {any ? kit::general(h.lrp_raw) : "", any ? kit::fixed(h.lrp_normalized, 3) : ""};
  }
  std::string markdown_section(const HeadReport& report) const override {
    std::string md = "## LRP conservation\n\n";
    md += "- max relative residual: " + kit::general(report.lrp_max_relative_residual) + "\n";
    md += "- sentences over tolerance (" + kit::general(report.settings.lrp_tolerance) +
          " · |f|): " + std::to_string(report.lrp_sentences_over_tolerance) + "\n";
    if (!report.lrp_failures.empty()) md += "- examples: " + kit::join(report.lrp_failures, ", ") + "\n";
    return md + "\n";
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"lrp_normalized", "LRP relevance, normalised within the layer", "outlined: heads with a role", false,
             [](const HeadEntry& h) { return h.lrp_sentences > 0 ? std::optional<double>(h.lrp_normalized) : std::nullopt; },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry& h) { return !h.roles.empty(); }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    char line[160];
    std::snprintf(line, sizeof line, "LRP relevance %.4g (%.3f of its layer, Voita et al. 2019 §4)", h.lrp_raw,
                  h.lrp_normalized);
    Evidence e;
    e.text = line;
    e.description = line;
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_lrp_measure() { return std::make_unique<LrpMeasure>(); }

}  // namespace headlab::analysis
