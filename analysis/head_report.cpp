#include "analysis/head_report.h"

#include "analysis/measure.h"

#include "core/json_file.h"
#include "core/json_integer.h"

#include "core/atomic_file.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace headlab::analysis {

using nlohmann::json;

bool ReportSettings::has(const std::string& metric) const {
  return std::find(metrics.begin(), metrics.end(), metric) != metrics.end();
}

HeadEntry* HeadReport::find(const std::string& stack, int layer, int head) {
  for (auto& h : heads)
    if (h.stack == stack && h.layer == layer && h.head == head) return &h;
  return nullptr;
}

const HeadEntry* HeadReport::find(const std::string& stack, int layer, int head) const {
  return const_cast<HeadReport*>(this)->find(stack, layer, head);
}


void HeadReport::finalize() {
  // Every measure derives its values and appends its roles, in the registry's order (positional,
  // rare-word, syntactic …), from the statistics and the settings' thresholds.
  for (auto& h : heads) h.roles.clear();
  for (const Measure* m : measures()) m->finalize(*this);
}

// Per-direction baselines need the offset from the reading word: for dependent->head it is
// head − dependent, for head->dependent the opposite. RelationStats::baseline_hits counts offsets
// head − dependent; one fixed offset per relation serves both directions (the same arcs, read from
// either end), which is how Clark et al.'s baseline is defined.

std::vector<BestRelationHead> best_heads_per_relation(const HeadReport& report) {
  std::vector<std::string> stacks;
  for (const auto& h : report.heads)
    if (std::find(stacks.begin(), stacks.end(), h.stack) == stacks.end()) stacks.push_back(h.stack);
  std::vector<BestRelationHead> out;
  for (const auto& stack : stacks) {
    std::vector<std::pair<std::string, std::string>> keys;  // (relation, direction)
    for (const auto& h : report.heads)
      if (h.stack == stack)
        for (const auto& sc : h.syntactic)
          if (std::find(keys.begin(), keys.end(), std::make_pair(sc.relation, sc.direction)) == keys.end())
            keys.emplace_back(sc.relation, sc.direction);
    for (const auto& [relation, direction] : keys) {
      BestRelationHead best{stack, nullptr, nullptr};
      for (const auto& h : report.heads)
        if (h.stack == stack)
          for (const auto& sc : h.syntactic)
            if (sc.relation == relation && sc.direction == direction && (!best.score || sc.accuracy > best.score->accuracy))
              best.head = &h, best.score = &sc;
      if (best.score) out.push_back(best);
    }
  }
  return out;
}

// ---- JSON ----------------------------------------------------------------------------------------

json to_json(const HeadReport& r) {
  const auto& s = r.settings;
  json settings = {{"metrics", s.metrics},
                   {"positional_threshold", s.positional_threshold},
                   {"rare_threshold", s.rare_threshold},
                   {"rare_threshold_note", "the rare-word threshold (> 0.5) is HeadLab's; Voita et al. 2019 give none"},
                   {"rare_min_rank", s.rare_min_rank},
                   {"syntactic_margin", s.syntactic_margin},
                   {"min_relation_count", s.min_relation_count},
                   {"always_relations", s.always_relations},
                   {"baseline_max_offset", s.baseline_max_offset},
                   {"strip_subtypes", s.strip_subtypes},
                   {"lrp_tolerance", s.lrp_tolerance},
                   {"frequency_source", s.frequency_source},
                   {"frequency_files", s.frequency_files},
                   {"limit", s.limit},
                   {"max_tokens", s.max_tokens},
                   {"stage", s.stage},
                   {"shard", {{"index", s.shard_index}, {"count", s.shard_count}}}};
  json heads = json::array();
  for (const auto& h : r.heads) {
    json e = {{"stack", h.stack}, {"layer", h.layer}, {"head", h.head}};
    // Sufficient statistics: what `headlab merge` adds up (every measure's, whatever the report holds).
    json stats = {{"queries", h.queries}};
    for (const Measure* m : measures()) m->write_head(r, h, e, stats);
    e["roles"] = h.roles;
    e["stats"] = std::move(stats);
    heads.push_back(std::move(e));
  }
  json out = {{"format", "headlab-head-report"},
          {"format_version", kHeadReportFormatVersion},
          {"model", r.model},
          {"data", {{"files", r.files}, {"sentences", r.sentences}, {"tokens", r.tokens}, {"skipped", r.skipped},
                    {"skipped_reasons", r.skipped_reasons}, {"tree_sentences", r.tree_sentences},
                    {"skipped_arcs", r.skipped_arcs}}},
          {"settings", settings},
          {"partial", r.partial},
          {"heads", heads},
          {"notes", r.notes}};
  // The measures' report-level fields (relations, layers' spectra, LRP conservation), written
  // whatever the report holds so that every report has the same keys.
  for (const Measure* m : measures()) m->write_report(r, out);
  if (!r.model_weights.empty()) out["model_weights"] = r.model_weights;
  return out;
}

HeadReport head_report_from_json(const json& j) {
  std::string where = "head report";
  try {
    if (j.value("format", "") != "headlab-head-report")
      throw std::runtime_error("'format' is not \"headlab-head-report\"");
    const int version = core::get_integer<int>(j.at("format_version"));
    if (version > kHeadReportFormatVersion)
      throw std::runtime_error("format_version " + std::to_string(version) + " is newer than this HeadLab reads (" +
                               std::to_string(kHeadReportFormatVersion) + ")");
    HeadReport r;
    r.model = j.at("model").get<std::string>();
    r.model_weights = j.value("model_weights", std::string());
    where = "data";
    const json& data = j.at("data");
    r.files = data.at("files").get<std::vector<std::string>>();
    r.sentences = core::get_integer<int64_t>(data.at("sentences"));
    r.tokens = core::get_integer<int64_t>(data.at("tokens"));
    r.skipped = core::get_integer<int64_t>(data.at("skipped"));
    if (data.contains("skipped_reasons")) r.skipped_reasons = data["skipped_reasons"].get<std::map<std::string, int64_t>>();
    r.tree_sentences = data.value("tree_sentences", int64_t{0});
    r.skipped_arcs = data.value("skipped_arcs", int64_t{0});
    where = "settings";
    const json& s = j.at("settings");
    auto& o = r.settings;
    o.metrics = s.at("metrics").get<std::vector<std::string>>();
    o.positional_threshold = s.at("positional_threshold").get<double>();
    o.rare_threshold = s.at("rare_threshold").get<double>();
    o.rare_min_rank = core::get_integer<int64_t>(s.at("rare_min_rank"));
    o.syntactic_margin = s.at("syntactic_margin").get<double>();
    o.min_relation_count = core::get_integer<int64_t>(s.at("min_relation_count"));
    o.always_relations = s.at("always_relations").get<std::vector<std::string>>();
    o.baseline_max_offset = core::get_integer<int>(s.at("baseline_max_offset"));
    o.strip_subtypes = s.at("strip_subtypes").get<bool>();
    o.lrp_tolerance = s.at("lrp_tolerance").get<double>();
    o.frequency_source = s.at("frequency_source").get<std::string>();
    o.frequency_files = s.at("frequency_files").get<std::vector<std::string>>();
    o.limit = core::get_integer<int64_t>(s.at("limit"));
    o.max_tokens = s.value("max_tokens", int64_t{0});
    o.stage = s.value("stage", "values");
    o.shard_index = core::get_integer<int>(s.at("shard").at("index"));
    o.shard_count = core::get_integer<int>(s.at("shard").at("count"));
    r.partial = j.at("partial").get<bool>();
    for (size_t i = 0; i < j.at("heads").size(); ++i) {
      where = "heads[" + std::to_string(i) + "]";
      const json& e = j["heads"][i];
      HeadEntry h;
      h.stack = e.at("stack").get<std::string>();
      h.layer = core::get_integer<int>(e.at("layer"));
      h.head = core::get_integer<int>(e.at("head"));
      const json& st = e.at("stats");
      h.queries = core::get_integer<int64_t>(st.at("queries"));
      for (const Measure* m : measures()) m->read_head(e, st, h);
      r.heads.push_back(std::move(h));
    }
    for (const Measure* m : measures()) {
      where = std::string("the ") + m->name() + " measure's fields";
      m->read_report(j, r);
    }
    r.notes = j.value("notes", std::vector<std::string>{});
    r.finalize();
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(where + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(where + ": " + e.what());
  }
}

// ---- merge ---------------------------------------------------------------------------------------

void merge_into(HeadReport& into, const HeadReport& other) {
  auto differ = [](const std::string& what) { throw std::runtime_error("cannot merge: the reports differ in " + what); };
  if (into.model != other.model) differ("model (" + into.model + " vs " + other.model + ")");
  if (into.model_weights != other.model_weights)
    differ("weights (" + into.model_weights + " vs " + other.model_weights + ": the model changed between shards)");
  const auto& a = into.settings;
  const auto& b = other.settings;
  if (a.metrics != b.metrics) differ("metrics");
  if (a.frequency_source != b.frequency_source || a.frequency_files != b.frequency_files) differ("frequency source");
  if (a.rare_min_rank != b.rare_min_rank || a.strip_subtypes != b.strip_subtypes ||
      a.baseline_max_offset != b.baseline_max_offset || a.limit != b.limit || a.stage != b.stage ||
      a.max_tokens != b.max_tokens)
    differ("settings");
  if (into.files != other.files) differ("data files");
  if (a.shard_count != b.shard_count)
    differ("shard count (" + std::to_string(a.shard_count) + " vs " + std::to_string(b.shard_count) + ")");
  if (a.shard_count > 1 && a.shard_index == b.shard_index)
    differ("nothing: both are shard " + std::to_string(a.shard_index) + " of " + std::to_string(a.shard_count) +
           " (merging it twice would count its sentences twice)");
  if (into.heads.size() != other.heads.size()) differ("heads");
  for (size_t i = 0; i < into.heads.size(); ++i) {
    HeadEntry& h = into.heads[i];
    const HeadEntry& o = other.heads[i];
    if (h.stack != o.stack || h.layer != o.layer || h.head != o.head) differ("heads");
    h.queries += o.queries;
  }
  for (const Measure* m : measures()) m->merge(into, other);
  into.sentences += other.sentences;
  into.tree_sentences += other.tree_sentences;
  into.tokens += other.tokens;
  into.skipped += other.skipped;
  into.skipped_arcs += other.skipped_arcs;
  for (const auto& [k, v] : other.skipped_reasons) into.skipped_reasons[k] += v;
  into.partial = into.partial || other.partial;
  for (const auto& n : other.notes)
    if (std::find(into.notes.begin(), into.notes.end(), n) == into.notes.end()) into.notes.push_back(n);
  into.finalize();
}

HeadReport merge_shards(const std::vector<HeadReport>& shards, bool allow_missing) {
  if (shards.empty()) throw std::runtime_error("no reports to merge");
  const int n = shards.front().settings.shard_count;
  std::vector<int> seen(static_cast<size_t>(std::max(n, 1)), 0);
  for (const auto& r : shards) {
    const auto& s = r.settings;
    if (s.shard_count != n)
      throw std::runtime_error("cannot merge: the reports differ in shard count (" + std::to_string(n) + " vs " +
                               std::to_string(s.shard_count) + ")");
    if (s.shard_index < 0 || s.shard_index >= n) throw std::runtime_error("cannot merge: a shard index is out of range");
    if (seen[size_t(s.shard_index)]++)
      throw std::runtime_error("cannot merge: shard " + std::to_string(s.shard_index) + " of " + std::to_string(n) +
                               " is given twice");
  }
  std::string missing;
  for (int i = 0; i < n; ++i)
    if (!seen[size_t(i)]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  if (!missing.empty() && !allow_missing)
    throw std::runtime_error("cannot merge: shard(s) " + missing + " of " + std::to_string(n) + " are missing");
  HeadReport merged = shards.front();
  for (size_t i = 1; i < shards.size(); ++i) merge_into(merged, shards[i]);
  if (!missing.empty()) merged.notes.push_back("merged without shard(s) " + missing + " of " + std::to_string(n));
  merged.settings.shard_index = 0;
  merged.settings.shard_count = 1;
  merged.finalize();
  return merged;
}

// ---- files ---------------------------------------------------------------------------------------

void write_report_files(const HeadReport& report, const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw std::runtime_error(folder + ": " + ec.message());
  core::write_file_atomic(folder + "/head_report.csv", to_csv(report));
  core::write_file_atomic(folder + "/head_report.md", to_markdown(report));
  core::write_file_atomic(folder + "/head_report.json", to_json(report).dump(1) + "\n");  // what readers open
}

HeadReport read_head_report(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = path + "/head_report.json";
  const json j = core::read_json_file(file);
  try {
    return head_report_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": " + e.what());
  }
}

}  // namespace headlab::analysis
