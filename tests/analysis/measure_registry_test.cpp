// A new head measure is one implementation of analysis::Measure and one registration: it is then
// measured by analyze, written to head_report.json (and read back), merged across shards, a column
// of head_report.csv and the Head table, a column of the Markdown, a grid figure and a piece of the
// Head detail's evidence — checked here with a measure the product does not have, against a direct
// computation over the model's own maps.
#include "test_common.h"

#include "analysis/analyze.h"
#include "analysis/dataset.h"
#include "analysis/head_stats.h"
#include "analysis/measure.h"
#include "analysis/report_columns.h"
#include "core/model/model.h"
#include "core/model/run.h"

#include <nlohmann/json.hpp>

#include <cmath>

using namespace headlab;

namespace {

const std::string kDefault = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
const std::string kUd = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/ud/en_ewt-dev-100.conllu";

// The mean weight a query puts on itself (the diagonal of the map), over non-special queries.
class SelfAttentionMeasure : public analysis::Measure {
 public:
  const char* name() const override { return "self_weight"; }
  const char* definition() const override { return "mean attention of a query on its own position"; }
  bool reads_maps() const override { return true; }
  void add_layer(analysis::HeadReport& r, headlab::core::Stack stack, int layer, int, const at::Tensor& maps,
                 const analysis::RowMaxima& rows, const analysis::SentenceLayout&) override {
    const auto a = maps.accessor<float, 3>();
    for (int64_t h = 0; h < rows.heads; ++h)
      for (int64_t t = 0; t < rows.queries; ++t)
        if (rows.counted[size_t(t)]) r.find(stack, layer, int(h))->values["self_weight_sum"] += a[h][t][t];
  }
  void finalize(analysis::HeadReport& r) const override {
    for (auto& h : r.heads)
      h.values["self_weight"] = h.queries > 0 ? h.values["self_weight_sum"] / double(h.queries) : 0.0;
  }
  void merge(analysis::HeadReport& into, const analysis::HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i)
      into.heads[i].values["self_weight_sum"] += other.heads[i].values.count("self_weight_sum")
                                                      ? other.heads[i].values.at("self_weight_sum")
                                                      : 0.0;
  }
  void write_values(const analysis::HeadReport& r, const analysis::HeadEntry& h, nlohmann::json& entry) const override {
    if (r.settings.has(name())) entry["self_weight"] = h.values.at("self_weight");
  }
  // finalize() has put the sum into every head's values, so writing adds no key.
  void head_stats(analysis::StatsFields& f, analysis::HeadEntry& h) const override {
    f.real("self_weight_sum", h.values["self_weight_sum"]);
  }
  std::vector<analysis::ReportColumn> columns() const override {
    return {{"self_weight", "self_weight", true, false, [](const analysis::HeadEntry& h) {
               analysis::ReportCell c;
               c.kind = analysis::ReportCell::Kind::real;
               c.real = h.values.count("self_weight") ? h.values.at("self_weight") : 0.0;
               return c;
             }}};
  }
  std::vector<std::string> markdown_columns() const override { return {"self weight"}; }
  std::vector<std::string> markdown_cells(const analysis::HeadEntry& h) const override {
    return {std::to_string(h.values.at("self_weight"))};
  }
  std::vector<analysis::GridFigureSpec> grids(const analysis::ReportSettings&) const override {
    return {{"self_weight", "Self weight", "outlined: none", true,
             [](const analysis::HeadEntry& h) { return std::optional<double>(h.values.at("self_weight")); },
             [](const analysis::HeadEntry&) { return std::string(); }, [](const analysis::HeadEntry&) { return false; }}};
  }
  std::vector<analysis::Evidence> evidence(const analysis::HeadEntry& h, const analysis::ReportSettings&) const override {
    analysis::Evidence e;
    e.text = "self weight " + std::to_string(h.values.at("self_weight"));
    return {e};
  }
};

}  // namespace

TEST_CASE("a measure registered in one line is measured, written, merged and shown everywhere", "[analysis][measures]") {
  if (!analysis::find_measure("self_weight"))
    analysis::register_measure([] { return std::make_unique<SelfAttentionMeasure>(); });
  CHECK(analysis::all_metrics().back() == "self_weight");
  CHECK_THROWS_WITH(analysis::register_measure([] { return std::make_unique<SelfAttentionMeasure>(); }),
                    Catch::Contains("registered already"));

  auto model = core::load_model(kDefault);
  analysis::AnalyzeOptions o;
  o.data = {kUd};
  o.settings.metrics = {"confidence", "self_weight"};
  o.settings.limit = 6;
  o.examples = 0;
  const auto report = analysis::analyze(*model, o).report;

  // Against the model's own maps, sentence by sentence.
  double direct = 0;
  int64_t queries = 0;
  analysis::DatasetReader reader({kUd});
  int n = 0;
  for (analysis::DatasetSentence sentence; n < 6 && reader.next(sentence); ++n) {
    const auto ts = analysis::tokenize_sentence(model->config, *model->tokenizer, sentence);
    core::RunRequest request;
    request.ids = ts.ids;
    request.capture = core::kCaptureMixedWeights;
    const auto trace = core::run(*model, request);
    const auto maps = core::value_weights(trace->encoder.layers[3].self).to(torch::kFloat32);  // [heads, T, T]
    for (size_t t = 0; t < ts.ids.size(); ++t)
      if (!ts.special[t]) direct += maps[5][int64_t(t)][int64_t(t)].item<double>(), ++queries;
  }
  const auto* head = report.find(headlab::core::Stack::Encoder, 3, 5);
  REQUIRE(head);
  CHECK(head->queries == queries);
  CHECK(head->values.at("self_weight") == Approx(direct / double(queries)).epsilon(1e-9));

  // head_report.json: written and read back.
  const auto json = analysis::to_json(report);
  const auto& entry = json["heads"][size_t(3 * 8 + 5)];
  CHECK(entry["self_weight"].get<double>() == head->values.at("self_weight"));
  const auto back = analysis::head_report_from_json(json);
  CHECK(back.find(headlab::core::Stack::Encoder, 3, 5)->values.at("self_weight") == head->values.at("self_weight"));

  // Two shards merge into the one-pass value.
  auto shard = [&](int i) {
    analysis::AnalyzeOptions so = o;
    so.settings.shard_index = i;
    so.settings.shard_count = 2;
    return analysis::analyze(*model, so).report;
  };
  const auto merged = analysis::merge_shards({shard(0), shard(1)}, false);
  CHECK(merged.find(headlab::core::Stack::Encoder, 3, 5)->values.at("self_weight") == Approx(head->values.at("self_weight")).epsilon(1e-12));

  // A column of head_report.csv and the Head table, a Markdown column, a grid figure, evidence.
  const auto columns = analysis::report_columns(report.settings);
  CHECK(std::any_of(columns.begin(), columns.end(), [](const auto& c) { return std::string(c.name) == "self_weight"; }));
  CHECK(analysis::to_csv(report).find(",self_weight,") != std::string::npos);
  CHECK(analysis::to_markdown(report).find("| self weight |") != std::string::npos);
  const auto* m = analysis::find_measure("self_weight");
  CHECK(m->grids(report.settings).size() == 1);
  CHECK(m->evidence(*head, report.settings).front().text.rfind("self weight ", 0) == 0);
}
