// Importance (Michel et al. 2019): |∂loss/∂g_i| of each head's gate at g = 1, averaged over
// sentences. A masked LM's loss masks every 7th word token from the 3rd (a sentence shorter than
// that masks its last word token); a causal model's is its next-token loss (a one-token sentence has
// none and is left out of the average).
#include "analysis/dataset.h"
#include "analysis/lrp.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "core/json_integer.h"
#include "core/model/model.h"

namespace headlab::analysis {
namespace {

class ImportanceMeasure : public Measure {
 public:
  const char* name() const override { return "importance"; }
  const char* definition() const override {
    return "Michel et al. 2019: |∂loss/∂g_i| of each head's gate, averaged over sentences";
  }

  void add_sentence(HeadReport& report, SentenceWork& work) override {
    const auto& ts = work.tokens;
    const int64_t T = static_cast<int64_t>(ts.ids.size());
    // A causal model's next-token loss needs a token after the first: a one-token sentence (a lone
    // word under a tokenizer that adds no begin token) has nothing to predict and adds nothing here,
    // while the other measures still read it.
    if (work.model.config.kind == core::StackKind::Decoder && T < 2) return;
    std::vector<int64_t> masked;
    for (int64_t t = 0, k = 0; t < T; ++t)
      if (!ts.special[size_t(t)] && k++ % 7 == 2) masked.push_back(t);
    if (masked.empty()) masked.push_back(kit::last_word_token(ts));
    const ImportanceResult imp = head_importance(work.model, ts.ids, {}, masked, work.decoder_ids);
    for (const auto& [stack, layers] : imp.heads)
      for (size_t l = 0; l < layers.size(); ++l)
        for (size_t h = 0; h < layers[l].size(); ++h)
          if (HeadEntry* e = report.find(stack, static_cast<int>(l), static_cast<int>(h))) {
            e->importance_sum += layers[l][h];
            ++e->importance_sentences;
          }
  }

  void finalize(HeadReport& report) const override {
    for (auto& h : report.heads)
      h.importance = h.importance_sentences > 0 ? h.importance_sum / double(h.importance_sentences) : 0.0;
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i) {
      into.heads[i].importance_sum += other.heads[i].importance_sum;
      into.heads[i].importance_sentences += other.heads[i].importance_sentences;
    }
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (report.settings.has(name())) entry["importance"] = h.importance;
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    f.real("importance_sum", h.importance_sum);
    f.count("importance_sentences", h.importance_sentences);
  }


  std::vector<ReportColumn> columns() const override {
    return {{"importance", "importance", true, false,
             [](const HeadEntry& h) { return kit::real_if(h.importance_sentences > 0, h.importance); }}};
  }

  std::vector<std::string> markdown_columns() const override { return {"importance"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    return {h.importance_sentences > 0 ? kit::general(h.importance) : ""};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& /*settings*/) const override {
    return {{"importance", "Importance: mean |∂loss/∂gate|", "outlined: heads with a role", false,
             [](const HeadEntry& h) {
               return h.importance_sentences > 0 ? std::optional<double>(h.importance) : std::nullopt;
             },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry& h) { return !h.roles.empty(); }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    char line[120];
    std::snprintf(line, sizeof line, "importance |∂L/∂g| %.4g (Michel et al. 2019)", h.importance);
    Evidence e;
    e.text = line;
    e.description = line;
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_importance_measure() { return std::make_unique<ImportanceMeasure>(); }

}  // namespace headlab::analysis
