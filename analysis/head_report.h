// The head report: what `headlab analyze` measures per head over a dataset, as sufficient
// statistics (counts and sums, so shards merge exactly) plus the derived shares and roles. Written as
// head_report.json (schema "headlab-head-report", version 1), head_report.csv and head_report.md.
//
// Definitions (the conventions every number follows; analysis/README.md):
//   confidence   Voita et al. 2019 §4: mean over query tokens of the head's maximum attention
//                weight (over non-special keys; confidence_all_keys: over every key).
//   positional   Voita et al. 2019 §5.1: share of queries whose maximum attention is at each relative
//                offset (key − query); a positional head when ≥ 90% at one offset.
//   rare word    Voita et al. 2019 §5.3: share of queries whose maximum attention goes to the
//                sentence's rarest token, over sentences whose rarest token's frequency rank is
//                > 500; a rare-word head when > 50% (the threshold is HeadLab's, not the paper's).
//   syntactic    Clark et al. 2019 §4; Voita et al. 2019 §5.2: on word-level maps, per relation and
//                direction the share of arcs the head's word-level argmax gets right, against the
//                best fixed offset −5…+5 on the same arcs; a syntactic head when ≥ baseline + 10 points.
//   lrp          Voita et al. 2019 §4 with analysis/LRP.md's rules: raw head relevance and
//                relevance normalised within the layer, averaged over sentences.
//   importance   Michel et al. 2019: |∂loss/∂g_i| averaged over sentences.
//   spectrum     Cordonnier et al. 2020: singular values of the key-query form W_Q^i W_K^iᵀ.
#pragma once

#include "analysis/spectra.h"
#include "core/controls.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace headlab::analysis {

inline constexpr int kHeadReportFormatVersion = 1;

// Every threshold and choice a report was made with (all written to "settings").
struct ReportSettings {
  std::vector<std::string> metrics;  // names of registered measures (analysis/measures/registry.cpp)
  double positional_threshold = 0.90;   // share at one offset, ≥
  double rare_threshold = 0.50;         // share on the rarest token, >
  int64_t rare_min_rank = 500;          // only sentences whose rarest token's rank is > this count
  double syntactic_margin = 0.10;       // accuracy ≥ baseline + margin
  int64_t min_relation_count = 100;     // relations scored besides the always-scored ones
  std::vector<std::string> always_relations{"nsubj", "obj", "amod", "advmod"};
  int baseline_max_offset = 5;          // baseline offsets −5…+5
  bool strip_subtypes = false;          // nsubj:pass → nsubj
  double lrp_tolerance = 1e-3;          // conservation: residual ≤ tolerance · |f|
  std::string frequency_source;         // "freq-files", "model-folder" or "dataset"
  std::vector<std::string> frequency_files;
  int64_t limit = 0;                    // 0 = every sentence
  int64_t max_tokens = 0;               // longer sentences were skipped (the model's positions by default)
  // Which maps the attention measures read: U (the weights that multiply the values; the default)
  // or W (the softmax output — differs from U only for talking heads and mixing). Written "values"
  // and "softmax" in the report (stage_key).
  core::Stage stage = core::Stage::U;
  int shard_index = 0, shard_count = 1;  // this report holds sentences with index % count == index
  // "fast" when the maps were computed in fast precision (core/precision.h); empty (and not
  // written) when exactly, as every report before the choice existed was.
  std::string precision;
  // The induction probe (analysis/measures/induction.cpp): `probe_sequences` sequences of
  // `probe_length` random tokens (0: as many as fit, at most 50) each repeated once, drawn with
  // `probe_seed`; a head is prev-token / induction when its score is ≥ the threshold.
  int64_t probe_length = 0, probe_sequences = 10, probe_seed = 0;
  double prev_token_threshold = 0.5, induction_threshold = 0.5;
  double copying_threshold = 0.5;  // a copying head: OV copying score ≥ this (analysis/circuits.h)
  bool has(const std::string& metric) const;
};

// The report's and the command line's names of the stages the measures read: U "values", W
// "softmax"; stage_from_key throws for any other name, naming the two.
const char* stage_key(core::Stage stage);
core::Stage stage_from_key(const std::string& key);

// Per relation and direction, the sufficient statistics of one head (hits) and the shared baseline.
struct RelationStats {
  int64_t count = 0;                      // arcs of this relation (one instance per arc)
  std::map<int, int64_t> baseline_hits;   // offset → arcs the fixed offset gets right
  std::vector<int64_t> dependent_to_head;  // [heads of the stack] hits reading the dependent's row
  std::vector<int64_t> head_to_dependent;  // [heads of the stack] hits reading the head's row
};

// One relation score of one head (derived).
struct SyntacticScore {
  std::string relation;
  std::string direction;  // "dependent->head" or "head->dependent"
  double accuracy = 0, baseline = 0;
  int baseline_offset = 0;
  int64_t count = 0;
  bool is_role = false;
};

struct HeadEntry {
  core::Stack stack = core::Stack::Encoder;  // "encoder", "decoder" or "cross"
  int layer = 0, head = 0;
  // Sufficient statistics.
  int64_t queries = 0;                  // non-special query tokens
  double confidence_sum = 0, confidence_all_keys_sum = 0;
  std::map<int, int64_t> offsets;       // argmax offset (key − query) → queries
  int64_t rare_queries = 0, rare_hits = 0, rare_two_hits = 0;
  double lrp_raw_sum = 0, lrp_normalized_sum = 0;
  int64_t lrp_sentences = 0;
  double importance_sum = 0;
  int64_t importance_sentences = 0;
  // Derived by HeadReport::finalize().
  double confidence = 0, confidence_all_keys = 0;
  int positional_offset = 0;
  double positional_share = 0;
  bool positional = false;
  double rare_share = 0, rare_share_two = 0;
  bool rare = false;
  std::vector<SyntacticScore> syntactic;  // every scored relation and direction
  std::optional<SyntacticScore> best_relation;  // largest accuracy − baseline
  double lrp_raw = 0, lrp_normalized = 0, importance = 0;
  std::optional<Spectrum> spectrum;
  std::vector<std::string> roles;  // "positional(-1)", "rare-word", "syntactic(nsubj dependent->head)", …
  // Statistics and values of measures registered beyond the built-in ones (analysis/measure.h), by
  // a key of the measure's choosing; each measure reads, writes and merges its own.
  std::map<std::string, double> values;
};

struct LayerEntry {
  core::Stack stack = core::Stack::Encoder;
  int layer = 0;
  Spectrum query, key, product;
};

struct HeadReport {
  std::string model;  // folder or name
  // Which weights were measured (core/file_hash.h's weights_identity); "" when unknown (a random
  // model, or a report written before reports carried it). The window applies a report only to the
  // model it was measured on.
  std::string model_weights;
  std::vector<std::string> files;
  int64_t sentences = 0;  // measured
  int64_t tokens = 0;     // tokens of the measured sentences (special ones included)
  int64_t skipped = 0;    // longer than the model's positions (or empty after tokenization)
  int64_t tree_sentences = 0;  // measured sentences with a dependency tree (CoNLL-U)
  // Gold arcs left out of the syntactic measure because they touch a word with no token of its own
  // (a word inside a token that starts in the word before it: no row or column of the maps is its).
  int64_t skipped_arcs = 0;
  std::map<std::string, int64_t> skipped_reasons;
  ReportSettings settings;
  // Not the whole dataset: stopped before the end (Ctrl-C, Stop), or merged without some of its
  // shards (`missing_shards` names them).
  bool partial = false;
  std::vector<int> missing_shards;  // shard indices of `settings.shard_count`-before-merge left out
  std::vector<HeadEntry> heads;   // stack-major, then layer, then head
  std::vector<LayerEntry> layers;
  // Per stack: relation → statistics (syntactic measure).
  std::map<core::Stack, std::map<std::string, RelationStats>> relations;
  // LRP conservation over the measured sentences.
  double lrp_max_relative_residual = 0;
  int64_t lrp_sentences_over_tolerance = 0;
  std::vector<std::string> lrp_failures;  // the first few sentences over tolerance (file:line)
  std::vector<std::string> notes;         // measures that could not apply, and why

  // Recomputes every derived field (shares, roles, best relations) from the statistics and the
  // settings' thresholds; call after accumulating, merging or editing thresholds.
  void finalize();
  // The entry of (stack, layer, head), or null.
  HeadEntry* find(core::Stack stack, int layer, int head);
  const HeadEntry* find(core::Stack stack, int layer, int head) const;
};

// The stacks the report's heads belong to, in the order the heads list them.
std::vector<core::Stack> stacks_in(const HeadReport& report);

// The head with the best accuracy for each relation and direction of each stack (stacks in the
// order the heads list them; relations in the order the heads hold them) — the syntactic table.
struct BestRelationHead {
  core::Stack stack = core::Stack::Encoder;
  const HeadEntry* head = nullptr;
  const SyntacticScore* score = nullptr;
};
std::vector<BestRelationHead> best_heads_per_relation(const HeadReport& report);

nlohmann::json to_json(const HeadReport& report);
// Reads a report written by to_json; throws std::runtime_error naming the key on a malformed one.
HeadReport head_report_from_json(const nlohmann::json& json);

// Adds `other`'s statistics to `into` (same model, files, settings, shard count and heads, another
// shard; throws std::runtime_error naming the difference otherwise) and finalizes.
void merge_into(HeadReport& into, const HeadReport& other);

// Merges the shards of one sharded run: every report of the same N, each index once. The result
// covers every shard (shard 0 of 1) and equals the one-pass report; a missing shard is an error
// unless `allow_missing` (the result then says which shards it holds in its notes).
HeadReport merge_shards(const std::vector<HeadReport>& shards, bool allow_missing = false);

// head_report.csv: one row per head (pandas-ready: a header row, plain numbers, empty for absent);
// its columns are analysis/report_columns.h's.
std::string to_csv(const HeadReport& report);
// head_report.md: the role list first, then the tables a reader wants (per-head measures,
// syntactic heads against their baselines, spectra ranks, LRP conservation).
std::string to_markdown(const HeadReport& report);

// Writes head_report.json / .csv / .md into `folder` (created), each atomically.
void write_report_files(const HeadReport& report, const std::string& folder);
// Reads folder/head_report.json (or a path to the file itself).
HeadReport read_head_report(const std::string& path);

}  // namespace headlab::analysis
