#include "analysis/head_report.h"

#include "core/json_file.h"
#include "core/json_integer.h"

#include "core/atomic_file.h"
#include "core/safetensors_torch.h"

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

namespace {

double share(int64_t part, int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

// The offset holding the most queries; ties go to the smaller |offset|, then the negative one.
std::pair<int, int64_t> best_offset(const std::map<int, int64_t>& offsets) {
  int best = 0;
  int64_t best_count = -1;
  for (const auto& [offset, count] : offsets) {
    const bool better = count > best_count ||
                        (count == best_count && (std::abs(offset) < std::abs(best) ||
                                                 (std::abs(offset) == std::abs(best) && offset < best)));
    if (better) {
      best = offset;
      best_count = count;
    }
  }
  return {best, std::max<int64_t>(best_count, 0)};
}

std::string format_offset(int offset) { return (offset > 0 ? "+" : "") + std::to_string(offset); }

}  // namespace

void HeadReport::finalize() {
  const auto& s = settings;
  // Relations scored per stack: the always-scored ones (when seen) and those with enough arcs.
  std::map<std::string, std::vector<std::string>> scored;
  for (const auto& [stack, relations_of_stack] : relations)
    for (const auto& [name, stats] : relations_of_stack) {
      const bool always = std::count(s.always_relations.begin(), s.always_relations.end(), name) > 0;
      if (stats.count > 0 && (always || stats.count >= s.min_relation_count)) scored[stack].push_back(name);
    }
  const std::string no_trees = "syntactic: the data has no dependency trees (give CoNLL-U files); not measured";
  notes.erase(std::remove(notes.begin(), notes.end(), no_trees), notes.end());
  if (s.has("syntactic") && tree_sentences == 0) notes.push_back(no_trees);
  // Heads are indexed within their stack as layer · heads + head.
  std::map<std::string, int> heads_per_layer;
  for (const auto& h : heads) heads_per_layer[h.stack] = std::max(heads_per_layer[h.stack], h.head + 1);

  for (auto& h : heads) {
    h.confidence = h.queries > 0 ? h.confidence_sum / double(h.queries) : 0.0;
    h.confidence_all_keys = h.queries > 0 ? h.confidence_all_keys_sum / double(h.queries) : 0.0;
    const auto [offset, count] = best_offset(h.offsets);
    h.positional_offset = offset;
    h.positional_share = share(count, h.queries);
    h.positional = s.has("positional") && h.queries > 0 && h.positional_share >= s.positional_threshold;
    h.rare_share = share(h.rare_hits, h.rare_queries);
    h.rare_share_two = share(h.rare_two_hits, h.rare_queries);
    h.rare = s.has("rare") && h.rare_queries > 0 && h.rare_share > s.rare_threshold;
    h.lrp_raw = h.lrp_sentences > 0 ? h.lrp_raw_sum / double(h.lrp_sentences) : 0.0;
    h.lrp_normalized = h.lrp_sentences > 0 ? h.lrp_normalized_sum / double(h.lrp_sentences) : 0.0;
    h.importance = h.importance_sentences > 0 ? h.importance_sum / double(h.importance_sentences) : 0.0;

    h.syntactic.clear();
    h.best_relation.reset();
    const size_t index = size_t(h.layer) * size_t(heads_per_layer[h.stack]) + size_t(h.head);
    auto rel_stack = relations.find(h.stack);
    if (s.has("syntactic") && rel_stack != relations.end())
      for (const auto& name : scored[h.stack]) {
        const RelationStats& r = rel_stack->second.at(name);
        const auto [base_offset, base_hits] = best_offset(r.baseline_hits);
        for (int dir = 0; dir < 2; ++dir) {
          const auto& hits = dir == 0 ? r.dependent_to_head : r.head_to_dependent;
          SyntacticScore score;
          score.relation = name;
          score.direction = dir == 0 ? "dependent->head" : "head->dependent";
          score.count = r.count;
          score.accuracy = index < hits.size() ? share(hits[index], r.count) : 0.0;
          // The baseline predicts from the same word: the dependent's offset to its head, or back.
          score.baseline = share(base_hits, r.count);
          score.baseline_offset = dir == 0 ? base_offset : -base_offset;
          score.is_role = score.accuracy >= score.baseline + s.syntactic_margin - 1e-12;
          if (!h.best_relation || score.accuracy - score.baseline > h.best_relation->accuracy - h.best_relation->baseline)
            h.best_relation = score;
          h.syntactic.push_back(score);
        }
      }
    h.roles.clear();
    if (h.positional) h.roles.push_back("positional(" + format_offset(h.positional_offset) + ")");
    if (h.rare) h.roles.push_back("rare-word");
    for (const auto& score : h.syntactic)
      if (score.is_role) h.roles.push_back("syntactic(" + score.relation + " " + score.direction + ")");
  }
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

namespace {

json spectrum_json(const Spectrum& s) {
  return {{"singular_values", s.singular_values}, {"cumulative_energy", s.cumulative_energy}, {"rank90", s.rank90},
          {"rank95", s.rank95}, {"rank99", s.rank99}, {"applicable", s.applicable}};
}

Spectrum spectrum_from(const json& j) {
  Spectrum s;
  s.singular_values = j.at("singular_values").get<std::vector<double>>();
  s.cumulative_energy = j.at("cumulative_energy").get<std::vector<double>>();
  s.rank90 = core::get_integer<int>(j.at("rank90"));
  s.rank95 = core::get_integer<int>(j.at("rank95"));
  s.rank99 = core::get_integer<int>(j.at("rank99"));
  s.applicable = j.value("applicable", true);
  return s;
}

json offsets_json(const std::map<int, int64_t>& m) {
  json j = json::object();
  for (const auto& [k, v] : m) j[std::to_string(k)] = v;
  return j;
}

std::map<int, int64_t> offsets_from(const json& j) {
  std::map<int, int64_t> m;
  for (const auto& [k, v] : j.items()) m[std::stoi(k)] = core::get_integer<int64_t>(v);
  return m;
}

json score_json(const SyntacticScore& s) {
  return {{"relation", s.relation}, {"direction", s.direction}, {"accuracy", s.accuracy},
          {"baseline", s.baseline}, {"baseline_offset", s.baseline_offset}, {"count", s.count},
          {"is_role", s.is_role}};
}

}  // namespace

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
    if (s.has("confidence")) {
      e["confidence"] = h.confidence;
      e["confidence_all_keys"] = h.confidence_all_keys;
    }
    if (s.has("positional"))
      e["positional"] = {{"offset", h.positional_offset}, {"share", h.positional_share}, {"is_role", h.positional},
                         {"queries", h.queries}};
    if (s.has("rare"))
      e["rare"] = {{"share", h.rare_share}, {"share_two_rarest", h.rare_share_two}, {"queries", h.rare_queries},
                   {"is_role", h.rare}};
    if (s.has("syntactic")) {
      e["syntactic"] = json::array();
      for (const auto& score : h.syntactic) e["syntactic"].push_back(score_json(score));
      e["best_relation"] = h.best_relation ? score_json(*h.best_relation) : json(nullptr);
    }
    if (s.has("lrp")) e["lrp"] = {{"raw", h.lrp_raw}, {"normalized", h.lrp_normalized}, {"sentences", h.lrp_sentences}};
    if (s.has("importance")) e["importance"] = h.importance;
    if (s.has("spectra")) e["spectrum"] = h.spectrum ? spectrum_json(*h.spectrum) : json(nullptr);
    e["roles"] = h.roles;
    // Sufficient statistics: what `headlab merge` adds up.
    e["stats"] = {{"queries", h.queries},
                  {"confidence_sum", h.confidence_sum},
                  {"confidence_all_keys_sum", h.confidence_all_keys_sum},
                  {"offsets", offsets_json(h.offsets)},
                  {"rare_queries", h.rare_queries},
                  {"rare_hits", h.rare_hits},
                  {"rare_two_hits", h.rare_two_hits},
                  {"lrp_raw_sum", h.lrp_raw_sum},
                  {"lrp_normalized_sum", h.lrp_normalized_sum},
                  {"lrp_sentences", h.lrp_sentences},
                  {"importance_sum", h.importance_sum},
                  {"importance_sentences", h.importance_sentences}};
    heads.push_back(std::move(e));
  }
  json layers = json::array();
  for (const auto& l : r.layers)
    layers.push_back({{"stack", l.stack}, {"layer", l.layer},
                      {"spectrum", {{"query", spectrum_json(l.query)}, {"key", spectrum_json(l.key)},
                                    {"product", spectrum_json(l.product)}}}});
  json relations = json::object();
  for (const auto& [stack, rels] : r.relations)
    for (const auto& [name, st] : rels)
      relations[stack][name] = {{"count", st.count}, {"baseline_hits", offsets_json(st.baseline_hits)},
                                {"dependent_to_head", st.dependent_to_head},
                                {"head_to_dependent", st.head_to_dependent}};
  json out = {{"format", "headlab-head-report"},
          {"format_version", kHeadReportFormatVersion},
          {"model", r.model},
          {"data", {{"files", r.files}, {"sentences", r.sentences}, {"tokens", r.tokens}, {"skipped", r.skipped},
                    {"skipped_reasons", r.skipped_reasons}, {"tree_sentences", r.tree_sentences},
                    {"skipped_arcs", r.skipped_arcs}}},
          {"settings", settings},
          {"partial", r.partial},
          {"heads", heads},
          {"layers", layers},
          {"relations", relations},
          {"lrp_conservation", {{"max_relative_residual", r.lrp_max_relative_residual},
                                {"sentences_over_tolerance", r.lrp_sentences_over_tolerance},
                                {"examples_over_tolerance", r.lrp_failures}}},
          {"notes", r.notes}};
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
      h.confidence_sum = st.at("confidence_sum").get<double>();
      h.confidence_all_keys_sum = st.at("confidence_all_keys_sum").get<double>();
      h.offsets = offsets_from(st.at("offsets"));
      h.rare_queries = core::get_integer<int64_t>(st.at("rare_queries"));
      h.rare_hits = core::get_integer<int64_t>(st.at("rare_hits"));
      h.rare_two_hits = core::get_integer<int64_t>(st.at("rare_two_hits"));
      h.lrp_raw_sum = st.at("lrp_raw_sum").get<double>();
      h.lrp_normalized_sum = st.at("lrp_normalized_sum").get<double>();
      h.lrp_sentences = core::get_integer<int64_t>(st.at("lrp_sentences"));
      h.importance_sum = st.at("importance_sum").get<double>();
      h.importance_sentences = core::get_integer<int64_t>(st.at("importance_sentences"));
      if (e.contains("spectrum") && !e["spectrum"].is_null()) h.spectrum = spectrum_from(e["spectrum"]);
      r.heads.push_back(std::move(h));
    }
    for (size_t i = 0; i < j.at("layers").size(); ++i) {
      where = "layers[" + std::to_string(i) + "]";
      const json& e = j["layers"][i];
      LayerEntry l;
      l.stack = e.at("stack").get<std::string>();
      l.layer = core::get_integer<int>(e.at("layer"));
      l.query = spectrum_from(e.at("spectrum").at("query"));
      l.key = spectrum_from(e.at("spectrum").at("key"));
      l.product = spectrum_from(e.at("spectrum").at("product"));
      r.layers.push_back(std::move(l));
    }
    where = "relations";
    for (const auto& [stack, rels] : j.at("relations").items())
      for (const auto& [name, st] : rels.items()) {
        RelationStats rs;
        rs.count = core::get_integer<int64_t>(st.at("count"));
        rs.baseline_hits = offsets_from(st.at("baseline_hits"));
        rs.dependent_to_head = st.at("dependent_to_head").get<std::vector<int64_t>>();
        rs.head_to_dependent = st.at("head_to_dependent").get<std::vector<int64_t>>();
        r.relations[stack][name] = std::move(rs);
      }
    where = "lrp_conservation";
    const json& c = j.at("lrp_conservation");
    r.lrp_max_relative_residual = c.at("max_relative_residual").get<double>();
    r.lrp_sentences_over_tolerance = core::get_integer<int64_t>(c.at("sentences_over_tolerance"));
    r.lrp_failures = c.value("examples_over_tolerance", std::vector<std::string>{});
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
    h.confidence_sum += o.confidence_sum;
    h.confidence_all_keys_sum += o.confidence_all_keys_sum;
    for (const auto& [k, v] : o.offsets) h.offsets[k] += v;
    h.rare_queries += o.rare_queries;
    h.rare_hits += o.rare_hits;
    h.rare_two_hits += o.rare_two_hits;
    h.lrp_raw_sum += o.lrp_raw_sum;
    h.lrp_normalized_sum += o.lrp_normalized_sum;
    h.lrp_sentences += o.lrp_sentences;
    h.importance_sum += o.importance_sum;
    h.importance_sentences += o.importance_sentences;
    if (!h.spectrum && o.spectrum) h.spectrum = o.spectrum;
  }
  if (into.layers.empty()) into.layers = other.layers;
  for (const auto& [stack, rels] : other.relations)
    for (const auto& [name, st] : rels) {
      RelationStats& r = into.relations[stack][name];
      r.count += st.count;
      for (const auto& [k, v] : st.baseline_hits) r.baseline_hits[k] += v;
      auto add = [](std::vector<int64_t>& x, const std::vector<int64_t>& y) {
        if (x.size() < y.size()) x.resize(y.size(), 0);
        for (size_t i = 0; i < y.size(); ++i) x[i] += y[i];
      };
      add(r.dependent_to_head, st.dependent_to_head);
      add(r.head_to_dependent, st.head_to_dependent);
    }
  into.sentences += other.sentences;
  into.tree_sentences += other.tree_sentences;
  into.tokens += other.tokens;
  into.skipped += other.skipped;
  into.skipped_arcs += other.skipped_arcs;
  for (const auto& [k, v] : other.skipped_reasons) into.skipped_reasons[k] += v;
  into.partial = into.partial || other.partial;
  into.lrp_max_relative_residual = std::max(into.lrp_max_relative_residual, other.lrp_max_relative_residual);
  into.lrp_sentences_over_tolerance += other.lrp_sentences_over_tolerance;
  for (const auto& f : other.lrp_failures)
    if (into.lrp_failures.size() < 10) into.lrp_failures.push_back(f);
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
