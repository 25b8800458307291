// Training data: text → token streams → fixed-length examples (masked LM, causal LM) or
// source/target pairs (seq2seq on tab-separated parallel text), a held-out split, and batches
// by token count with MLM masking (15%: 80% [MASK], 10% random token, 10% unchanged).
#pragma once

#include "core/tokenizer/framing.h"

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::core::train {

enum class Objective { Mlm, Causal, Seq2Seq };

// Thrown by make_lm_dataset (and load_text_dataset) when no document holds one sequence: `evaluate`
// reports such a file as measuring nothing while other files measure.
struct TooShortForASequence : std::runtime_error {
  using std::runtime_error::runtime_error;
};
Objective objective_from_string(const std::string& name);  // "mlm" | "causal" | "seq2seq"
// What a model predicts, from its stack kind: an encoder fills masks, a decoder the next token, an
// encoder-decoder its target. The one rule for the quality evaluate, convert, compare and prune
// measure (config.objective records what training used, and can name none: a bare encoder).
Objective objective_of(const ModelConfig& config);
const char* to_string(Objective objective);

// The ids the data pipeline needs; from a tokenizer or given for a synthetic vocabulary.
struct SpecialTokens {
  int64_t vocab_size = 0;
  std::optional<int64_t> mask, pad, begin, end;  // begin: [CLS]/<s>/BOS; end: [SEP]/</s>/EOS
  // MLM examples are wrapped as the tokenizer frames a sentence (its post-processor: [CLS] … [SEP],
  // <s> …, … [SEP], or nothing), so a model trains on the inputs it will be run on. Unset (a
  // synthetic vocabulary): begin … end.
  std::optional<SentenceFrame> frame;
  SentenceFrame mlm_frame() const { return frame ? *frame : SentenceFrame{begin, end}; }
  std::vector<int64_t> specials;                 // never masked, never drawn as random tokens
};
SpecialTokens special_tokens(const Tokenizer& tokenizer);

struct Example {
  std::vector<int64_t> source;  // mlm/causal: the sequence; seq2seq: encoder input
  std::vector<int64_t> target;  // seq2seq only: decoder tokens (without begin/end)
};

struct Dataset {
  std::vector<Example> train, held_out;
  int64_t train_tokens() const;
};

// Every k-th example is held out: k for a held-out fraction (0 for none, else at least 2).
int64_t held_out_period(double held_out_fraction);

// Cuts each document's token stream into examples of `seq_len` tokens (MLM: [begin] + text +
// [end] when the tokenizer frames sentences and has them); every k-th example
// (k = 1/held_out_fraction) is held out.
Dataset make_lm_dataset(const std::vector<std::vector<int64_t>>& documents, int64_t seq_len, Objective objective,
                        const SpecialTokens& specials, double held_out_fraction);

// Source/target pairs, truncated to seq_len; every k-th pair is held out.
Dataset make_seq2seq_dataset(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>& pairs,
                             int64_t seq_len, double held_out_fraction);

// Reads and tokenizes text files (seq2seq: one "source<TAB>target" pair a line). Errors name the
// file and line.
Dataset load_text_dataset(const std::vector<std::string>& paths, const Tokenizer& tokenizer, Objective objective,
                          int64_t seq_len, double held_out_fraction);

// One batch. Labels are -100 where no loss is taken.
struct Batch {
  torch::Tensor ids;              // [B, T] int64 (encoder input, or the decoder-only input)
  torch::Tensor padding;          // [B, T] bool, true = padding (undefined when none)
  torch::Tensor decoder_ids;      // [B, S] seq2seq only
  torch::Tensor decoder_padding;  // [B, S] seq2seq only
  torch::Tensor labels;           // [B, T] (mlm/causal) or [B, S] (seq2seq)
  int64_t tokens = 0;             // input tokens, padding excluded
};

// Masked-LM corruption (Devlin et al. 2019, §3.1): choose `rate` of the non-special tokens as
// targets; of those, `mask` become [MASK], `random` a random non-special token, the rest stay.
// `rarity` = α > 0 weights the choice by token frequency, as in Zhang et al. 2023 ("Weighted
// Sampling for Masked Language Modeling", arXiv:2302.14225): a token with training count c is a
// target with probability min(1, rate · w(c)), w(c) = c^−α / mean over the training tokens of
// c^−α, so the expected share of targets stays `rate` (less where the cap bites). α = 0 is BERT.
// `all_mask_share` = s > 0 mixes two corruptions per sequence: with probability s every target of
// a sequence becomes [MASK]; the other sequences use the mask/random/kept split. (A HeadLab
// option for the default model's recipe search, not from a paper; assets/README.md ("Shipped
// models") has what it measured.)
struct Masking {
  double rate = 0.15, mask = 0.8, random = 0.1;
  double rarity = 0.0;
  double all_mask_share = 0.0;
  std::vector<double> weights{};  // per vocabulary id: w(c) above (empty = uniform); see rarity_weights
  void validate() const;          // throws std::invalid_argument naming the bad value
};

// w(c) of Masking::rarity for every vocabulary id, from the counts of the non-special tokens of
// the training examples (ids never seen get the weight of a count of 1). Empty when α = 0.
std::vector<double> rarity_weights(const Dataset& data, const SpecialTokens& specials, double alpha);

// Builds the batch of `examples`; MLM masking draws from a generator seeded with `mask_seed`.
Batch make_batch(const std::vector<const Example*>& examples, Objective objective, const SpecialTokens& specials,
                 uint64_t mask_seed, const Masking& masking = {});

// Deterministic example order: epoch e is a permutation of the training set seeded by (seed, e).
class BatchOrder {
 public:
  BatchOrder(size_t examples, int64_t batch_size, uint64_t seed);
  // Example indices of batch number `step` (0-based; crosses epochs).
  std::vector<size_t> batch(int64_t step);
  int64_t batch_size() const { return batch_size_; }
  // Data position of the start of batch `step`: (epoch, offset in the epoch).
  std::pair<int64_t, int64_t> position(int64_t step) const;

 private:
  size_t examples_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<size_t> permutation_;
};

// A 64-bit mix of two values (SplitMix64), for deriving per-step seeds.
uint64_t mix_seed(uint64_t a, uint64_t b);

}  // namespace headlab::core::train
