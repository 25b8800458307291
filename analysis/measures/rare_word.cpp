// Rare word (Voita et al. 2019 §5.3): the share of queries whose maximum attention goes to the
// sentence's rarest token, over sentences whose rarest token ranks beyond the 500 most frequent; a
// rare-word head when > 50% (HeadLab's threshold; the paper gives none). Frequency ranks come from
// --freq files, else the model folder's token_counts.json, else the dataset itself.
#include "analysis/analyze.h"
#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "core/json_integer.h"
#include "core/model/model.h"
#include "core/token_counts.h"

#include <filesystem>

namespace headlab::analysis {
namespace {

class RareWordMeasure : public Measure {
 public:
  const char* name() const override { return "rare"; }
  const char* definition() const override {
    return "Voita et al. 2019 §5.3: the share of queries whose maximum attention goes to the sentence's rarest token, "
           "over sentences whose rarest token ranks beyond the 500 most frequent; a rare-word head when > 50% "
           "(HeadLab's threshold, not the paper's); also the share for one of the two rarest";
  }
  bool reads_maps() const override { return true; }

  // The frequency corpus: --freq files, the model folder's training counts, or (counted over every
  // sentence of the dataset, whatever the shard, so shards agree) the dataset itself.
  void begin(HeadReport& report, core::Model& model, const AnalyzeOptions& o) override {
    auto& s = report.settings;
    const auto& tok = *model.tokenizer;
    const std::string folder_counts = model.folder.empty() ? "" : model.folder + "/token_counts.json";
    if (!o.freq_files.empty()) {
      counts_ = core::count_tokens_in_files(tok, o.freq_files);
      s.frequency_source = "freq-files";
      s.frequency_files = o.freq_files;
    } else if (!folder_counts.empty() && std::filesystem::exists(folder_counts)) {
      counts_ = core::load_token_counts(folder_counts);
      s.frequency_source = "model-folder";
      s.frequency_files = counts_.files;
    } else {
      count_dataset_ = true;
      s.frequency_source = "dataset";
      s.frequency_files = report.files;
      counts_.counts.assign(static_cast<size_t>(tok.vocab_size()), 0);
    }
  }
  void read_sentence(const core::Tokenizer& tokenizer, const std::string& text) override {
    if (count_dataset_) core::count_tokens(tokenizer, text, counts_);
  }
  void after_reading(HeadReport& /*report*/, const core::Tokenizer& tokenizer) override {
    ranks_ = core::frequency_ranks(counts_, tokenizer);
  }
  void prepare(HeadReport& report, SentenceWork& work) override {
    const auto& ids = work.tokens.ids;
    std::vector<int64_t> token_ranks(ids.size(), 0);
    for (size_t t = 0; t < ids.size(); ++t)
      if (ids[t] >= 0 && ids[t] < static_cast<int64_t>(ranks_.size())) token_ranks[t] = ranks_[size_t(ids[t])];
    set_rare_positions(work.layout, token_ranks, report.settings.rare_min_rank);
  }
  void add_layer(HeadReport& report, core::Stack stack, int layer, int /*heads_per_layer*/,
                 const at::Tensor& /*maps*/, const RowMaxima& rows, const SentenceLayout& layout) override {
    if (!layout.rare_counted) return;
    for (int64_t h = 0; h < rows.heads; ++h) {
      HeadEntry& e = *report.find(stack, layer, static_cast<int>(h));
      for (int64_t t = 0; t < rows.queries; ++t) {
        const int best = rows.best[rows.at(h, t)];
        if (!rows.counted[size_t(t)] || best < 0) continue;
        ++e.rare_queries;
        if (best == layout.rarest) ++e.rare_hits;
        if (best == layout.rarest || best == layout.second_rarest) ++e.rare_two_hits;
      }
    }
  }
  void end(HeadReport& report) override {
    if (report.settings.frequency_source == "dataset")
      report.notes.push_back("rare-word ranks come from the dataset itself; on a small dataset most tokens tie, so give "
                             "--freq FILE… (or a model folder with token_counts.json) for ranks from a larger corpus");
  }

  void finalize(HeadReport& report) const override {
    const auto& s = report.settings;
    for (auto& h : report.heads) {
      h.rare_share = kit::share(h.rare_hits, h.rare_queries);
      h.rare_share_two = kit::share(h.rare_two_hits, h.rare_queries);
      h.rare = s.has(name()) && h.rare_queries > 0 && h.rare_share > s.rare_threshold;
      if (h.rare) h.roles.push_back("rare-word");
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i) {
      into.heads[i].rare_queries += other.heads[i].rare_queries;
      into.heads[i].rare_hits += other.heads[i].rare_hits;
      into.heads[i].rare_two_hits += other.heads[i].rare_two_hits;
    }
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (report.settings.has(name()))
      entry["rare"] = {{"share", h.rare_share}, {"share_two_rarest", h.rare_share_two}, {"queries", h.rare_queries},
                       {"is_role", h.rare}};
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    f.count("rare_queries", h.rare_queries);
    f.count("rare_hits", h.rare_hits);
    f.count("rare_two_hits", h.rare_two_hits);
  }


  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"rare_share", "rare", true, false, [](H h) { return kit::real_if(h.rare_queries > 0, h.rare_share); }, 0, 1},
            {"rare_share_two_rarest", "rare", true, false,
             [](H h) { return kit::real_if(h.rare_queries > 0, h.rare_share_two); }, 0, 1},
            {"rare_queries", "rare", true, false, [](H h) { return kit::integer(h.rare_queries); }},
            {"rare_word", "rare", true, false, [](H h) { return kit::integer(h.rare ? 1 : 0); }, 0, 1}};
  }

  std::vector<std::string> markdown_data(const HeadReport& report) const override {
    const auto& s = report.settings;
    std::string line = "- frequency source: " + (s.frequency_source.empty() ? std::string("(none)") : s.frequency_source);
    if (!s.frequency_files.empty()) line += " (" + kit::join(s.frequency_files, ", ") + ")";
    return {line};
  }
  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- rare-word head: > " + kit::percent(s.rare_threshold) +
            " of queries put their maximum attention on the sentence's rarest token, over sentences whose rarest "
            "token's frequency rank is > " +
            std::to_string(s.rare_min_rank) + "; this threshold is HeadLab's (Voita et al. 2019 give none)"};
  }
  std::vector<std::string> markdown_roles(const HeadEntry& h) const override {
    if (!h.rare) return {};
    return {"rare-word — " + kit::percent(h.rare_share) + " of " + std::to_string(h.rare_queries) +
            " queries on the sentence's rarest token"};
  }
  std::vector<std::string> markdown_columns() const override { return {"rare share", "rare share (two rarest)"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const bool q = h.rare_queries > 0;
    return {q ? kit::percent(h.rare_share) : "", q ? kit::percent(h.rare_share_two) : ""};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& s) const override {
    return {{"rare_share", "Rare-word share: queries whose maximum is on the rarest token",
             "outlined: rare-word heads (> " + kit::fixed(100 * s.rare_threshold, 0) + "%, HeadLab's threshold)", true,
             [](const HeadEntry& h) { return h.rare_queries > 0 ? std::optional<double>(h.rare_share) : std::nullopt; },
             [](const HeadEntry&) { return std::string(); }, [](const HeadEntry& h) { return h.rare; }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& s) const override {
    Evidence e;
    char line[200];
    if (h.rare_queries > 0)
      std::snprintf(line, sizeof line, "rare word: %.1f%% of %lld queries attend most to the rarest token (%.1f%% to one of the two rarest)",
                    100 * h.rare_share, static_cast<long long>(h.rare_queries), 100 * h.rare_share_two);
    else
      std::snprintf(line, sizeof line, "rare word: no sentence had a token rarer than rank %lld",
                    static_cast<long long>(s.rare_min_rank));
    e.text = line;
    e.description = line;
    return {e};
  }

 private:
  core::TokenCounts counts_;
  bool count_dataset_ = false;
  std::vector<int64_t> ranks_;
};

}  // namespace

std::unique_ptr<Measure> make_rare_word_measure() { return std::make_unique<RareWordMeasure>(); }

}  // namespace headlab::analysis
