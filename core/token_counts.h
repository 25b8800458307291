// Token frequencies: how often each id occurs in a corpus, as the rare-word measure needs them
// (Voita et al. 2019 rank tokens by corpus frequency). `headlab train` writes the counts of its
// training text into the model folder (token_counts.json), so a model carries its own frequency
// corpus. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::core {

class Tokenizer;

struct TokenCounts {
  std::vector<int64_t> counts;      // [vocab size] occurrences per id in the text (no framing tokens added)
  int64_t total = 0;                // tokens counted
  std::vector<std::string> files;   // what was counted (file names)
};

// Counts the tokens of text files, each line tokenized on its own without special tokens; lines
// of seq2seq data ("source<TAB>target") are counted whole. Errors name the file.
TokenCounts count_tokens_in_files(const Tokenizer& tokenizer, const std::vector<std::string>& files);

// Adds one text (tokenized without special tokens) to `counts`.
void count_tokens(const Tokenizer& tokenizer, const std::string& text, TokenCounts& counts);

// Frequency ranks by competition ranking: rank(id) = 1 + the number of ids strictly more frequent;
// ids never seen share the largest rank (the rarest). Which positions compete is the caller's choice
// (the analyses: tokens with a character span).
std::vector<int64_t> frequency_ranks(const TokenCounts& counts, const Tokenizer& tokenizer);

// token_counts.json: {"format": "headlab-token-counts", "format_version": 1, "files", "total", "counts"}.
void save_token_counts(const TokenCounts& counts, const std::string& path);
TokenCounts load_token_counts(const std::string& path);  // errors name the file and the key

}  // namespace headlab::core
