// Previous-token, duplicate-token and induction scores (Olsson et al. 2022, "In-context learning and
// induction heads": prefix matching; Elhage et al. 2021) on a probe HeadLab makes itself: sequences of
// random tokens, each repeated once, framed as the tokenizer frames text ([CLS] … [SEP], <s> …, or
// nothing). Over the queries of the second copy, a head's mean attention on the token before the query
// (previous-token), on the earlier copy of the query's token (duplicate-token) and on the token after
// that earlier copy (induction). The probe does not depend on the dataset: the first shard runs it
// once, the other shards add nothing, so merged shards give the one-pass report.
#include "analysis/analyze.h"
#include "analysis/induction_probe.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/stacks.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

namespace headlab::analysis {
namespace {

constexpr const char* kKeys[] = {"prev_token", "duplicate_token", "induction"};

using kit::stat_of;

}  // namespace

namespace {

class InductionMeasure : public Measure {
 public:
  const char* name() const override { return "induction"; }
  bool needs_data() const override { return false; }
  const char* definition() const override {
    return "Olsson et al. 2022 (prefix matching), Elhage et al. 2021: on random token sequences repeated once, the "
           "mean attention over the second copy's queries on the previous token (prev_token), on the earlier copy "
           "of the query's token (duplicate_token) and on the token after it (induction)";
  }

  void begin(HeadReport& report, core::Model& model, const AnalyzeOptions& options) override {
    const auto& s = report.settings;
    const auto probe = make_induction_probe(model, s.probe_length, s.probe_sequences, uint64_t(s.probe_seed));
    report.settings.probe_length = probe.length;  // as run: the report says what was measured
    if (s.shard_index != 0) return;               // the first shard measures the probe for all
    const bool enc_dec = model.config.kind == core::StackKind::EncoderDecoder;
    const auto stacks = core::stacks_of(model.config);
    const int64_t N = probe.length;
    for (const auto& ids : probe.sequences) {
      if (options.cancel && options.cancel->load()) return;
      core::RunRequest request;
      request.ids = ids;
      if (enc_dec) request.decoder_ids = ids;  // both sides read the sequence, as the analysis does
      request.capture = s.stage == core::Stage::W ? core::kCaptureWeights : core::kCaptureMixedWeights;
      request.logit_positions = {0};
      request.cancel = options.cancel;
      std::shared_ptr<const core::Trace> trace;
      try {
        trace = core::run(model, request);
      } catch (const core::Cancelled&) {
        return;
      }
      for (const core::Stack stack : stacks) {
        const int layers = core::layers_config(model.config, stack).layers;
        for (int l = 0; l < layers; ++l) {
          const auto& stages = core::stages_of(*trace, stack, l);
          // [heads, T, S] in float64: the three keys of each second-copy query
          const auto maps = (s.stage == core::Stage::W ? stages.weights : core::value_weights(stages))
                                .to(torch::kCPU, torch::kFloat64).contiguous();
          const auto a = maps.accessor<double, 3>();
          for (int64_t h = 0; h < maps.size(0); ++h) {
            HeadEntry& e = *report.find(stack, l, static_cast<int>(h));
            for (int64_t t = probe.start + N; t < probe.start + 2 * N; ++t) {
              e.values["prev_token_sum"] += a[h][t][t - 1];
              e.values["duplicate_token_sum"] += a[h][t][t - N];
              e.values["induction_sum"] += a[h][t][t - N + 1];
              e.values["probe_queries"] += 1;
            }
          }
        }
      }
    }
  }

  void finalize(HeadReport& report) const override {
    const auto& s = report.settings;
    for (auto& h : report.heads) {
      const double q = stat_of(h, "probe_queries");
      for (const char* key : kKeys) {
        h.values.erase(key);
        if (q > 0) h.values[key] = stat_of(h, std::string(key) + "_sum") / q;
      }
      if (!s.has(name()) || q <= 0) continue;
      if (h.values["prev_token"] >= s.prev_token_threshold) h.roles.push_back("prev-token");
      if (h.values["induction"] >= s.induction_threshold) h.roles.push_back("induction");
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (size_t i = 0; i < into.heads.size(); ++i)
      for (const std::string key : {"prev_token_sum", "duplicate_token_sum", "induction_sum", "probe_queries"})
        into.heads[i].values[key] += stat_of(other.heads[i], key);
  }

  void head_stats(StatsFields& f, HeadEntry& h) const override {
    for (const std::string key : {"prev_token_sum", "duplicate_token_sum", "induction_sum", "probe_queries"})
      f.added_real(key.c_str(), h.values[key]);
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (!report.settings.has(name())) return;
    for (const char* key : kKeys) {
      const auto v = kit::value_of(h, key);
      entry[key] = v ? nlohmann::json(*v) : nlohmann::json();
    }
  }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"prev_token", "induction", true, false, [](H h) { return kit::value_cell(h, "prev_token"); }, 0, 1},
            {"duplicate_token", "induction", true, false, [](H h) { return kit::value_cell(h, "duplicate_token"); }, 0, 1},
            {"induction", "induction", true, false, [](H h) { return kit::value_cell(h, "induction"); }, 0, 1}};
  }

  std::vector<std::string> markdown_data(const HeadReport& report) const override {
    const auto& s = report.settings;
    return {"- induction probe: " + std::to_string(s.probe_sequences) + " sequences of " +
            std::to_string(s.probe_length) + " random tokens, each repeated once (seed " +
            std::to_string(s.probe_seed) + ")"};
  }
  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- prev-token head: previous-token score ≥ " + kit::fixed(s.prev_token_threshold, 2) +
                " on the repeated random tokens (HeadLab's threshold)",
            "- induction head: induction score ≥ " + kit::fixed(s.induction_threshold, 2) +
                " on the repeated random tokens (Olsson et al. 2022 give none; HeadLab's threshold)"};
  }
  std::vector<std::string> markdown_roles(const HeadEntry& h) const override {
    std::vector<std::string> out;
    for (const auto& role : h.roles) {
      if (role == "prev-token") out.push_back("prev-token — previous-token score " + kit::fixed(stat_of(h, "prev_token"), 3));
      if (role == "induction") out.push_back("induction — induction score " + kit::fixed(stat_of(h, "induction"), 3));
    }
    return out;
  }
  std::vector<RoleThreshold> role_thresholds() const override {
    return {{"prev_token_threshold", "prev-token ≥", "previous-token score on repeated random tokens", 0.0, 1.0,
             &ReportSettings::prev_token_threshold},
            {"induction_threshold", "induction ≥", "induction score on repeated random tokens (Olsson et al. 2022)", 0.0,
             1.0, &ReportSettings::induction_threshold}};
  }
  std::vector<std::string> markdown_columns() const override { return {"prev-token", "duplicate", "induction"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    std::vector<std::string> out;
    for (const char* key : kKeys) {
      const auto v = kit::value_of(h, key);
      out.push_back(v ? kit::fixed(*v, 3) : "");
    }
    return out;
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& s) const override {
    auto value = [](const char* key) { return [key](const HeadEntry& h) { return kit::value_of(h, key); }; };
    const double prev = s.prev_token_threshold, ind = s.induction_threshold;
    return {{"prev_token", "Previous-token score (repeated random tokens)",
             "outlined: prev-token heads (≥ " + kit::fixed(prev, 2) + ")", true, value("prev_token"),
             [](const HeadEntry&) { return std::string(); },
             [prev](const HeadEntry& h) { return stat_of(h, "prev_token") >= prev && stat_of(h, "probe_queries") > 0; }},
            {"induction", "Induction score (repeated random tokens)",
             "outlined: induction heads (≥ " + kit::fixed(ind, 2) + ")", true, value("induction"),
             [](const HeadEntry&) { return std::string(); },
             [ind](const HeadEntry& h) { return stat_of(h, "induction") >= ind && stat_of(h, "probe_queries") > 0; }}};
  }

  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& s) const override {
    if (stat_of(h, "probe_queries") <= 0) return {};
    char line[240];
    std::snprintf(line, sizeof line,
                  "repeated random tokens: previous-token %.3f, duplicate-token %.3f, induction %.3f "
                  "(%lld queries of the second copies; %lld sequences of %lld, seed %lld)",
                  stat_of(h, "prev_token"), stat_of(h, "duplicate_token"), stat_of(h, "induction"),
                  static_cast<long long>(stat_of(h, "probe_queries")), static_cast<long long>(s.probe_sequences),
                  static_cast<long long>(s.probe_length), static_cast<long long>(s.probe_seed));
    Evidence e;
    e.text = line;
    e.description = line;
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_induction_measure() { return std::make_unique<InductionMeasure>(); }

}  // namespace headlab::analysis
