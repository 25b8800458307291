// Per-head roles in the sense of Voita et al. 2019 (positional and rare-word heads) and Clark et
// al. 2019 (syntactic heads), measured over a dependency treebank with a model's tokenizer.
//   positional: share of queries whose maximum attention goes to the head's most common relative
//               offset (a head is positional when the share ≥ 0.9);
//   rare word:  share of queries whose maximum attention goes to the sentence's rarest token, by
//               corpus frequency (a rare-word head when > 0.5);
//   syntactic:  per relation and direction, how often the word-level maximum attention lands on
//               the related word, against the best fixed-offset baseline (≥ 10 points above).
#pragma once

#include "analysis/conllu.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
class Tokenizer;
}  // namespace headlab::core

namespace headlab::analysis {

struct HeadRoleOptions {
  int max_tokens = 128;               // longer sentences are skipped
  size_t max_sentences = 0;           // 0 = all
  int64_t min_relation_count = 100;   // relations seen fewer times are not scored
  double positional_threshold = 0.9;
  double rare_threshold = 0.5;
  // Voita et al. 2019 (§ rare words) report the rare-word head "among sentences where the least
  // frequent token is not in the top-500 most frequent tokens": rare_share_uncommon is measured
  // on those sentences only (a diagnostic beside rare_share; 0 = every sentence).
  int64_t rare_common_tokens = 500;
  double syntactic_margin = 0.10;
};

struct HeadRole {
  int layer = 0, head = 0;
  int best_offset = 0;           // key position − query position
  double positional_share = 0;   // share of maximum attention at best_offset
  double rare_share = 0;         // share of maximum attention on the rarest token
  double special_share = 0;      // share of maximum attention on [CLS]/[SEP]-like tokens
  double rare_share_content = 0; // rare_share with the maximum taken over word tokens only (diagnostic)
  double rare_share_uncommon = 0; // rare_share over sentences whose rarest token is outside the
                                  // rare_common_tokens most frequent (diagnostic)
  bool positional = false, rare = false, syntactic = false;
};

struct RelationScore {
  std::string relation;
  std::string direction;  // "dependent->head" or "head->dependent"
  int layer = 0, head = 0;  // the best head
  double accuracy = 0;
  double baseline = 0;  // best fixed offset
  int64_t count = 0;
};

struct HeadRoleReport {
  std::string stack;
  std::vector<HeadRole> heads;           // layer-major
  std::vector<RelationScore> relations;  // the best head per relation and direction
  int positional_heads = 0, rare_heads = 0, syntactic_heads = 0;
  int64_t sentences = 0, queries = 0;
  int64_t uncommon_queries = 0;  // queries in sentences whose rarest token is not a common one
  nlohmann::json to_json() const;
  std::string summary() const;  // a table for a terminal
};

// Token counts by id over `texts` (each tokenized line by line, without special tokens).
std::vector<int64_t> token_frequencies(const core::Tokenizer& tokenizer, const std::vector<std::string>& texts);

// Runs the model over the sentences (the model's own tokenizer; [CLS]/[SEP] as in training) and
// measures every head of its main stack. Uses the weights that multiply the values (U).
HeadRoleReport measure_head_roles(core::Model& model, const std::vector<UdSentence>& sentences,
                                  const std::vector<int64_t>& frequencies, const HeadRoleOptions& options = {});

}  // namespace headlab::analysis
