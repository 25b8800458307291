#include "analysis/head_report.h"

#include "analysis/measure.h"
#include "analysis/measure_kit.h"

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

const char* stage_key(core::Stage stage) { return stage == core::Stage::W ? "softmax" : "values"; }

core::Stage stage_from_key(const std::string& key) {
  if (key == "values") return core::Stage::U;
  if (key == "softmax") return core::Stage::W;
  throw std::invalid_argument("unknown stage '" + key + "' (values: U, the weights that multiply the values; softmax: W)");
}

bool ReportSettings::has(const std::string& metric) const {
  return std::find(metrics.begin(), metrics.end(), metric) != metrics.end();
}

HeadEntry* HeadReport::find(core::Stack stack, int layer, int head) {
  for (auto& h : heads)
    if (h.stack == stack && h.layer == layer && h.head == head) return &h;
  return nullptr;
}

const HeadEntry* HeadReport::find(core::Stack stack, int layer, int head) const {
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

std::vector<core::Stack> stacks_in(const HeadReport& report) {
  std::vector<core::Stack> stacks;
  for (const auto& h : report.heads)
    if (std::find(stacks.begin(), stacks.end(), h.stack) == stacks.end()) stacks.push_back(h.stack);
  return stacks;
}

std::vector<BestRelationHead> best_heads_per_relation(const HeadReport& report) {
  std::vector<BestRelationHead> out;
  for (const core::Stack stack : stacks_in(report)) {
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

namespace {

// The report's own fields described once, for writing and reading alike: FieldWriter puts each
// field into the JSON, FieldReader takes it back (a required field must be there; an optional one
// keeps its default when absent). The measures describe their own fields (analysis/measure.h).
struct FieldWriter {
  json& j;
  template <class T>
  void required(const char* key, const T& v) { j[key] = v; }
  template <class T>
  void optional(const char* key, const T& v) { j[key] = v; }
  void required(const char* key, const core::Stack& v) { j[key] = core::stack_name(v); }
  void optional(const char* key, const core::Stage& v) { j[key] = stage_key(v); }
  // Written only when not empty (read when present).
  void unless_empty(const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  }
  // A text for the reader of the file only; not read back.
  void note(const char* key, const char* text) { j[key] = text; }
  FieldWriter object(const char* key) { return FieldWriter{j[key]}; }
};

struct FieldReader {
  const json& j;
  template <class T>
  void required(const char* key, T& v) const { v = core::get_value<T>(j.at(key)); }
  template <class T>
  void optional(const char* key, T& v) const {
    if (j.contains(key) && !j.at(key).is_null()) v = core::get_value<T>(j.at(key));
  }
  void required(const char* key, core::Stack& v) const { v = core::stack_from_name(j.at(key).get<std::string>()); }
  void optional(const char* key, core::Stage& v) const {
    if (j.contains(key)) v = stage_from_key(j.at(key).get<std::string>());
  }
  void unless_empty(const char* key, std::string& v) const { optional(key, v); }
  void note(const char*, const char*) const {}
  FieldReader object(const char* key) const { return FieldReader{j.at(key)}; }
};

// The measures' per-head statistics (Measure::head_stats) into "stats" and back.
class StatsWriter final : public StatsFields {
 public:
  explicit StatsWriter(json& j) : j_(j) {}
  void real(const char* key, double& v) override { j_[key] = v; }
  void count(const char* key, int64_t& v) override { j_[key] = v; }
  void offsets(const char* key, std::map<int, int64_t>& v) override { j_[key] = kit::offsets_json(v); }
  void added_real(const char* key, double& v) override { j_[key] = v; }

 private:
  json& j_;
};

class StatsReader final : public StatsFields {
 public:
  explicit StatsReader(const json& j) : j_(j) {}
  void real(const char* key, double& v) override { v = j_.at(key).get<double>(); }
  void count(const char* key, int64_t& v) override { v = core::get_integer<int64_t>(j_.at(key)); }
  void offsets(const char* key, std::map<int, int64_t>& v) override { v = kit::offsets_from(j_.at(key)); }
  void added_real(const char* key, double& v) override { v = j_.contains(key) ? j_.at(key).get<double>() : 0.0; }

 private:
  const json& j_;
};

template <class Io, class S>  // S: ReportSettings, const or not
void settings_fields(Io& io, S& s) {
  io.required("metrics", s.metrics);
  io.required("positional_threshold", s.positional_threshold);
  io.required("rare_threshold", s.rare_threshold);
  io.note("rare_threshold_note", "the rare-word threshold is HeadLab's choice (default 0.5); Voita et al. 2019 give none");
  io.required("rare_min_rank", s.rare_min_rank);
  io.required("syntactic_margin", s.syntactic_margin);
  io.required("min_relation_count", s.min_relation_count);
  io.required("always_relations", s.always_relations);
  io.required("baseline_max_offset", s.baseline_max_offset);
  io.required("strip_subtypes", s.strip_subtypes);
  io.required("lrp_tolerance", s.lrp_tolerance);
  io.required("frequency_source", s.frequency_source);
  io.required("frequency_files", s.frequency_files);
  io.required("limit", s.limit);
  io.optional("max_tokens", s.max_tokens);
  io.optional("stage", s.stage);
  io.optional("probe_length", s.probe_length);
  io.optional("probe_sequences", s.probe_sequences);
  io.optional("probe_seed", s.probe_seed);
  io.optional("prev_token_threshold", s.prev_token_threshold);
  io.optional("induction_threshold", s.induction_threshold);
  io.optional("copying_threshold", s.copying_threshold);
  io.unless_empty("precision", s.precision);
  auto shard = io.object("shard");
  shard.required("index", s.shard_index);
  shard.required("count", s.shard_count);
}

template <class Io, class R>  // R: HeadReport, const or not
void data_fields(Io& io, R& r) {
  io.required("files", r.files);
  io.required("sentences", r.sentences);
  io.required("tokens", r.tokens);
  io.required("skipped", r.skipped);
  io.optional("skipped_reasons", r.skipped_reasons);
  io.optional("tree_sentences", r.tree_sentences);
  io.optional("skipped_arcs", r.skipped_arcs);
}

template <class Io, class H>  // H: HeadEntry, const or not; `stats` holds the sufficient statistics
void head_fields(Io& entry, Io& stats, H& h) {
  entry.required("stack", h.stack);
  entry.required("layer", h.layer);
  entry.required("head", h.head);
  stats.required("queries", h.queries);
}

}  // namespace

json to_json(const HeadReport& r) {
  json out = {{"format", "headlab-head-report"}, {"format_version", kHeadReportFormatVersion}};
  FieldWriter top{out};
  top.required("model", r.model);
  top.unless_empty("model_weights", r.model_weights);
  auto data = top.object("data");
  data_fields(data, r);
  auto settings = top.object("settings");
  settings_fields(settings, r.settings);
  top.required("partial", r.partial);
  if (!r.missing_shards.empty()) out["missing_shards"] = r.missing_shards;
  json heads = json::array();
  for (const auto& h : r.heads) {
    json e = json::object(), stats = json::object();
    FieldWriter entry{e}, stat{stats};
    head_fields(entry, stat, h);
    // Sufficient statistics: what `headlab merge` adds up (every measure's, whatever the report holds).
    StatsWriter stats_out{stats};
    for (const Measure* m : measures()) {
      m->write_values(r, h, e);
      m->head_stats(stats_out, const_cast<HeadEntry&>(h));  // the writer only reads
    }
    e["roles"] = h.roles;
    e["stats"] = std::move(stats);
    heads.push_back(std::move(e));
  }
  out["heads"] = std::move(heads);
  top.required("notes", r.notes);
  // The measures' report-level fields (relations, layers' spectra, LRP conservation), written
  // whatever the report holds so that every report has the same keys.
  for (const Measure* m : measures()) m->write_report(r, out);
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
    const FieldReader top{j};
    top.required("model", r.model);
    top.unless_empty("model_weights", r.model_weights);
    where = "data";
    const auto data = top.object("data");
    data_fields(data, r);
    where = "settings";
    const auto settings = top.object("settings");
    settings_fields(settings, r.settings);
    where = "head report";
    top.required("partial", r.partial);
    where = "missing_shards";
    if (j.contains("missing_shards")) r.missing_shards = j["missing_shards"].get<std::vector<int>>();
    for (size_t i = 0; i < j.at("heads").size(); ++i) {
      where = "heads[" + std::to_string(i) + "]";
      const json& e = j["heads"][i];
      HeadEntry h;
      const FieldReader entry{e}, stat{e.at("stats")};
      head_fields(entry, stat, h);
      StatsReader stats_in{e.at("stats")};
      for (const Measure* m : measures()) {
        m->head_stats(stats_in, h);
        m->read_values(e, h);
      }
      r.heads.push_back(std::move(h));
    }
    for (const Measure* m : measures()) {
      where = std::string("the ") + m->name() + " measure's fields";
      m->read_report(j, r);
    }
    top.optional("notes", r.notes);
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
  if (a.precision != b.precision)
    differ("precision (" + (a.precision.empty() ? std::string("exact") : a.precision) + " vs " +
           (b.precision.empty() ? std::string("exact") : b.precision) + ")");
  // The thresholds decide the merged report's roles and which relations are scored, the LRP
  // tolerance what counts as a conservation failure, the probe's settings the probe the report
  // records, and the rest which sentences and tokens were measured: shards run with other values are
  // refused by name, never merged under one shard's.
  auto same = [&](const char* option, auto x, auto y) {  // json's numbers: the shortest exact spelling
    if (x != y) differ(std::string(option) + " (" + json(x).dump() + " vs " + json(y).dump() + ")");
  };
  same("--limit", a.limit, b.limit);
  same("--max-tokens", a.max_tokens, b.max_tokens);
  if (a.stage != b.stage) differ(std::string("--stage (") + stage_key(a.stage) + " vs " + stage_key(b.stage) + ")");
  same("--strip-subtypes", a.strip_subtypes, b.strip_subtypes);
  same("the rare-word rank", a.rare_min_rank, b.rare_min_rank);
  same("the baseline's offsets", a.baseline_max_offset, b.baseline_max_offset);
  same("--positional-threshold", a.positional_threshold, b.positional_threshold);
  same("--rare-threshold", a.rare_threshold, b.rare_threshold);
  same("--syntactic-margin", a.syntactic_margin, b.syntactic_margin);
  same("--min-relation-count", a.min_relation_count, b.min_relation_count);
  if (a.always_relations != b.always_relations) differ("the relations always scored");
  same("the LRP tolerance", a.lrp_tolerance, b.lrp_tolerance);
  same("--prev-token-threshold", a.prev_token_threshold, b.prev_token_threshold);
  same("--induction-threshold", a.induction_threshold, b.induction_threshold);
  same("--copying-threshold", a.copying_threshold, b.copying_threshold);
  same("--probe-length", a.probe_length, b.probe_length);
  same("--probe-sequences", a.probe_sequences, b.probe_sequences);
  same("--probe-seed", a.probe_seed, b.probe_seed);
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
  into.missing_shards.insert(into.missing_shards.end(), other.missing_shards.begin(), other.missing_shards.end());
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
  if (!missing.empty()) {
    // Not the whole dataset: partial, and the report names what it lacks.
    merged.notes.push_back("merged without shard(s) " + missing + " of " + std::to_string(n));
    if (!seen[0] && merged.settings.has("induction"))  // analysis/measures/induction.cpp: shard 0 runs the probe
      merged.notes.push_back("the induction probe is not measured: shard 0, which alone runs it, is missing");
    merged.partial = true;
    for (int i = 0; i < n; ++i)
      if (!seen[size_t(i)]) merged.missing_shards.push_back(i);
  }
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
