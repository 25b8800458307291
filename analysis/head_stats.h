// Accumulating the per-head statistics of a head report from one sentence's attention maps: the
// confidence, positional, rare-word and syntactic measures (definitions in analysis/head_report.h).
// Plain loops over [heads, T, S] maps: a sentence costs O(heads · T · S) per layer, far less than
// the forward pass that made the maps.
#pragma once

#include "analysis/head_report.h"

#include <cstdint>
#include <string>
#include <vector>

namespace at {
class Tensor;
}

namespace headlab::analysis {

// What the measures need to know about one sentence.
struct SentenceLayout {
  std::vector<int> query_word;  // per query token: its word, −1 for special tokens and tokens in no word
  std::vector<int> key_word;    // per key token (cross-attention: the encoder's tokens)
  // Special tokens (no character span) per query / key; empty: the tokens whose word is −1.
  std::vector<bool> query_special, key_special;
  bool special_query(size_t t) const { return query_special.empty() ? query_word[t] < 0 : bool(query_special[t]); }
  bool special_key(size_t s) const { return key_special.empty() ? key_word[s] < 0 : bool(key_special[s]); }
  int words = 0;
  // Rare word (Voita et al.): the key positions of the sentence's rarest and second-rarest
  // non-special tokens (−1 when none), and whether the sentence counts (rarest rank > rare_min_rank).
  int rarest = -1, second_rarest = -1;
  bool rare_counted = false;
  // Gold arcs scored for the syntactic measure (root and punct already left out), relations normalised.
  struct Arc {
    int dependent = 0, head = 0;
    std::string relation;
  };
  std::vector<Arc> arcs;
};

// Finds the rarest and second-rarest non-special positions by frequency rank (largest rank; ties:
// the first position) and whether the sentence counts for the rare-word measure.
void set_rare_positions(SentenceLayout& layout, const std::vector<int64_t>& token_ranks, int64_t rare_min_rank);

// Whether each of `words` words has a token of its own: a token whose first character lies in it
// (`token_word` gives each token's word, −1 for none). A word inside a token that starts in the word
// before it has none: no row or column of the maps is its.
std::vector<bool> words_with_tokens(const std::vector<int>& token_word, int words);

// The gold arcs of a sentence: every word with a head in the sentence, except the relations root and
// punct; relations normalised (normalize_relation). Given `word_has_token` (words_with_tokens), an
// arc that touches a word without a token of its own cannot be scored: it is left out and counted
// in `unscorable`.
std::vector<SentenceLayout::Arc> scored_arcs(const std::vector<int>& heads, const std::vector<std::string>& relations,
                                             bool strip_subtypes, const std::vector<bool>& word_has_token = {},
                                             int64_t* unscorable = nullptr);

// Word-level attention (Clark et al. 2019): attention to a word is the sum over its tokens, from a
// word the mean over its tokens; special tokens dropped. maps [heads, T, S] → [heads, W, W] (float64).
at::Tensor word_level_maps(const at::Tensor& maps, const SentenceLayout& layout);

// The word each word's row points to (self excluded; a row with nothing above 0 predicts −1; ties:
// the lowest index). word_maps [heads, W, W] → [heads][W].
std::vector<std::vector<int>> word_argmax(const at::Tensor& word_maps);

// Each query row's maxima of one layer's maps ([heads, T, S] float32, contiguous), found once for
// every measure that reads maps (analysis/measure.h). Throws when the maps and layout disagree.
struct RowMaxima;
RowMaxima row_maxima(const at::Tensor& maps_f32, const SentenceLayout& layout);
// Counts the layer's non-special queries into its heads' `queries` (every map measure's denominator).
void count_queries(HeadReport& report, core::Stack stack, int layer, const RowMaxima& rows);

// Adds one layer's maps ([heads, T, S], the weights that multiply the values) of one sentence to the
// entries of (stack, layer) in `report` (which must hold them) — every measure in the settings that
// reads maps.
void accumulate_layer(HeadReport& report, core::Stack stack, int layer, int heads_per_layer,
                      const at::Tensor& maps, const SentenceLayout& layout);

// After a stack's layers of one sentence (the syntactic measure adds the sentence's arcs to the
// relation counts and the fixed-offset baselines of `stack`: once per sentence and stack).
void accumulate_arcs(HeadReport& report, core::Stack stack, int heads_in_stack, const SentenceLayout& layout);

}  // namespace headlab::analysis
