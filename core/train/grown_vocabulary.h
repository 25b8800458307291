// Continued training with a larger vocabulary (`train --init DIR --tokenizer T` where T extends DIR's
// tokenizer, e.g. subword pieces added to a word-level vocabulary so no word is [UNK]): which ids the
// two share, and how the new tokens' rows start.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

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

}  // namespace headlab::core::train
