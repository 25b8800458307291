// Continued training with a larger vocabulary (`train --init DIR --tokenizer T` where T extends DIR's
// tokenizer, e.g. subword pieces added to a word-level vocabulary so no word is [UNK]): which ids the
// two share, and how the new tokens' rows start.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::core::train {

// How many leading ids the run's tokenizer shares with the --init folder's when it extends that
// tokenizer (every token of the folder's keeps its id; new tokens come after): the folder's
// vocabulary size. 0 when the run keeps the folder's tokenizer (or either is absent). Throws
// std::runtime_error naming both files and the first id that differs when the run's tokenizer
// neither is nor extends the folder's, so ids always mean the same tokens.
int64_t grown_vocabulary(const std::string& folder, const std::string& tokenizer_json);

// `n` new rows for a vocabulary-sized tensor whose known rows are `known` [V, D] (or [V] for an
// output bias), drawn from the normal distribution with the known rows' mean and covariance
// (Hewitt 2021, "Initializing new word embeddings for pretrained language models"): a new token
// starts as a typical token of the model, not as noise the trained layers never saw, and its
// output logit starts near the average instead of dominating or vanishing. Seeded; float32.
torch::Tensor draw_rows_like(const torch::Tensor& known, int64_t n, uint64_t seed);

// How a grown vocabulary's new rows start (`train --new-token-rows`).
enum class NewTokenRows {
  Typical,    // drawn like the known rows (draw_rows_like)
  Frequency,  // each the mean of the known rows nearest in training count (rows_by_frequency)
};
NewTokenRows parse_new_token_rows(const std::string& name);  // "typical" | "frequency"; else invalid_argument

// The start of new tokens' rows from their frequency: new token t (id K + i, i < n) gets the mean of
// the `neighbours` known rows whose counts in the training text are nearest to t's, on a log scale
// (|log(1 + c) − log(1 + c_t)|; on a tie the lower count). A trained model
// encodes a token's frequency in its rows (a rare word's embedding differs from a common one's, and
// the output bias tracks log-frequency), so a rare piece starts where rare words are — whatever
// the frozen layers read as rarity (a rare-word head's keys) they read for it too — and a common
// piece starts with a common word's output bias.
// known [K, …] (rows of ids 0..K−1, K ≥ neighbours), counts [≥ K + n] (token_counts.json's counts),
// excluded: known ids that are never neighbours (special tokens). Returns [n, …], float32.
torch::Tensor rows_by_frequency(const torch::Tensor& known, const std::vector<int64_t>& counts,
                                const std::vector<int64_t>& excluded, int64_t n, int64_t neighbours = 32);

}  // namespace headlab::core::train
