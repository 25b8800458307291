// Training a tokenizer from text: WordPiece (BERT: BertNormalizer, BertPreTokenizer, "##"
// continuations, [PAD] [UNK] [CLS] [SEP] [MASK]; optionally the most frequent words whole), WordLevel (the same normalizer, pre-tokenizer and
// specials; one token per word, the most frequent words only, [UNK] for the rest) or byte-level BPE (GPT-2 pre-tokenizer, all 256
// bytes in the alphabet, RoBERTa-style <s> <pad> </s> <unk> <mask>). Both are learned by BPE-style
// merges over word counts, as Hugging Face's WordPieceTrainer and BpeTrainer do, and written in
// the Hugging Face tokenizer.json format that core::Tokenizer::load reads.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::core::train {

struct TokenizerTrainOptions {
  std::string kind = "wordpiece";  // "wordpiece" | "bpe" | "wordlevel"
  int64_t vocab_size = 8000;       // including special tokens and the alphabet
  bool lowercase = true;           // WordPiece and WordLevel (BertNormalizer)
  int64_t min_frequency = 2;       // a pair seen fewer times is never merged; WordLevel: a rarer word is [UNK]
  int64_t limit_alphabet = 1000;   // WordPiece: keep the most frequent characters only
  // WordPiece: the `whole_words` most frequent words (seen at least min_frequency times) enter the
  // vocabulary whole, before any merge; the merges that fill the rest of vocab_size are learned on
  // the other words only. WordPiece's greedy longest match then keeps every such word one token and
  // spells any other word in subword pieces: a word-level vocabulary with a subword fallback, in
  // the ordinary WordPiece format. 0: plain WordPiece.
  int64_t whole_words = 0;
  bool cls_sep = true;             // WordPiece/WordLevel: frame a sentence as [CLS] … [SEP] (BERT's
                                   // post-processor); false: add nothing, so a model has no sink tokens
};

// Learns a tokenizer from `texts` (each processed line by line); returns the tokenizer.json
// document. Deterministic.
nlohmann::json train_tokenizer(const std::vector<std::string>& texts, const TokenizerTrainOptions& options);

// Reads every file (UTF-8 text) and trains on it. Errors name the file.
nlohmann::json train_tokenizer_on_files(const std::vector<std::string>& paths, const TokenizerTrainOptions& options);

// Reads a whole file; throws std::runtime_error naming it.
std::string read_text_file(const std::string& path);

}  // namespace headlab::core::train
