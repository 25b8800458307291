// Positional (Voita et al. 2019 §5.1): the share of queries whose maximum attention is at each
// relative offset (key − query); a positional head when one offset holds ≥ 90% of them.
#include "analysis/head_evidence.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"


namespace headlab::analysis {
namespace {

class PositionalMeasure : public Measure {
 public:
  const char* name() const override { return "positional"; }
  const char* definition() const override {
    return "Voita et al. 2019 §5.1: the share of queries whose maximum attention is at each relative offset (key − "
           "query); positional when ≥ 90% at one offset";
  }
  bool reads_maps() const override { return true; }

  void add_layer(HeadReport& report, core::Stack stack, int layer, int /*heads_per_layer*/,
                 const at::Tensor& /*maps*/, const RowMaxima& rows, const SentenceLayout& /*layout*/) override {
    for (int64_t h = 0; h < rows.heads; ++h) {
      HeadEntry& e = *report.find(stack, layer, static_cast<int>(h));
      for (int64_t t = 0; t < rows.queries; ++t) {
        const int best = rows.best[rows.at(h, t)];
        if (rows.counted[size_t(t)] && best >= 0) ++e.offsets[best - static_cast<int>(t)];
      }
    }
  }

  void finalize(HeadReport& report) const override {
    const auto& s = report.settings;
    for (auto& h : report.heads) {
      const auto [offset, count] = kit::best_offset(h.offsets);
      h.positional_offset = offset;
      h.positional_share = kit::share(count, h.queries);
      h.positional = s.has(name()) && h.queries > 0 && h.positional_share >= s.positional_threshold;
      if (h.positional) h.roles.push_back("positional(" + kit::signed_offset(h.positional_offset) + ")");
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i)
      for (const auto& [k, v] : other.heads[i].offsets) into.heads[i].offsets[k] += v;
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (report.settings.has(name()))
      entry["positional"] = {{"offset", h.positional_offset}, {"share", h.positional_share}, {"is_role", h.positional},
                             {"queries", h.queries}};
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override { f.offsets("offsets", h.offsets); }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"positional_offset", "positional", true, false,
             [](H h) { return kit::integer_if(h.queries > 0, h.positional_offset); }},
            {"positional_share", "positional", true, false, [](H h) { return kit::real_if(h.queries > 0, h.positional_share); }, 0, 1},
            {"positional", "positional", true, false, [](H h) { return kit::integer(h.positional ? 1 : 0); }, 0, 1}};
  }

  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- positional head: ≥ " + kit::percent(s.positional_threshold) +
            " of queries put their maximum attention at one relative offset (Voita et al. 2019)"};
  }
  std::vector<std::string> markdown_roles(const HeadEntry& h) const override {
    if (!h.positional) return {};
    return {"positional(" + kit::signed_offset(h.positional_offset) + ") — " + kit::percent(h.positional_share) +
            " of queries"};
  }
  std::vector<std::string> markdown_columns() const override { return {"top offset", "share at offset"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const bool q = h.queries > 0;
    return {q ? kit::signed_offset(h.positional_offset) : "", q ? kit::percent(h.positional_share) : ""};
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& s) const override {
    char threshold[16];
    std::snprintf(threshold, sizeof threshold, "%.0f", 100 * s.positional_threshold);
    return {{"positional_share", "Positional share: queries whose maximum is at the top offset",
             "outlined: positional heads (≥ " + std::string(threshold) + "% at one offset); small: the offset", true,
             [](const HeadEntry& h) { return h.queries > 0 ? std::optional<double>(h.positional_share) : std::nullopt; },
             [](const HeadEntry& h) { return h.queries > 0 ? kit::signed_offset(h.positional_offset) : std::string(); },
             [](const HeadEntry& h) { return h.positional; }}};
  }

  // The argmax offsets as shares of the queries, offsets beyond ±5 gathered into a bar at each end.
  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& s) const override {
    const auto bars = offset_histogram(h, 5);
    if (bars.empty()) return {};
    Evidence e;
    e.kind = Evidence::Kind::bars;
    e.text = "Where the maximum attention goes (key − query)";
    e.x_label = "offset";
    e.y_label = "share of queries";
    e.series = {"this head"};
    e.values.resize(1);
    std::vector<std::string> parts;
    for (const auto& b : bars) {
      const std::string o = kit::signed_offset(b.offset);
      e.categories.push_back(b.beyond ? (b.offset < 0 ? "≤" : "≥") + o : o);  // short labels stay upright
      e.values[0].push_back(b.share);
      parts.push_back(e.categories.back() + " " + kit::fixed(b.share, 3));
    }
    e.threshold = std::make_pair(s.positional_threshold, "positional ≥ " + kit::fixed(s.positional_threshold, 2));
    e.description = "offsets: " + kit::join(parts, ", ");
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_positional_measure() { return std::make_unique<PositionalMeasure>(); }

}  // namespace headlab::analysis
