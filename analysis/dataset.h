// Datasets for the head analyses, streamed one sentence at a time so memory does not grow with the
// corpus: plain text (a sentence a line), CoNLL-U (gold words, heads and relations), or a folder or
// list of such files. Sentences are tokenized by the model's tokenizer and tokens are tied to words
// through the tokenizer's character offsets.
#pragma once

#include "analysis/conllu.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace headlab::core {
class Tokenizer;
struct ModelConfig;
}

namespace headlab::analysis {

struct DatasetSentence {
  std::string source;  // "file:line"
  std::string text;    // the sentence as text (CoNLL-U: its words, spaced as SpaceAfter says)
  std::vector<std::pair<int64_t, int64_t>> word_spans;  // [start, end) in code points of `text`
  // Gold tree (CoNLL-U only; empty for plain text): per word its head word (0-based, −1 = root)
  // and its relation as written.
  std::vector<int> heads;
  std::vector<std::string> relations;
  bool has_tree() const { return !heads.empty(); }
};

// A CoNLL-U sentence as a dataset sentence: its words spaced as SpaceAfter says.
DatasetSentence dataset_sentence(const UdSentence& ud);

// A parse laid on text the user typed: the parse's words must spell `text` in order, apart from
// whitespace (any amount, anywhere between words; none inside a word). Returns `text` with each
// word's span and the parse's tree. Throws naming the first word that does not match, or the text
// left over after the last word.
DatasetSentence parse_on_text(const UdSentence& parse, const std::string& text);
// Whether the parse's words spell `text` (as parse_on_text accepts it).
bool parse_spells(const UdSentence& parse, const std::string& text);

// Paths to files: a folder gives its CoNLL-U files (*.conllu, *.conll, *.conllx; sorted), or its
// *.txt files when it has none; files are taken as given. Throws naming a path that does not exist or a folder with neither.
std::vector<std::string> expand_dataset_paths(const std::vector<std::string>& paths);

// Streams the sentences of the files in order (.conllu/.conll/.conllx as CoNLL-U, anything else as
// plain text, one sentence a line; blank lines skipped; a UTF-8 byte-order mark ignored).
class DatasetReader {
 public:
  explicit DatasetReader(std::vector<std::string> files);
  ~DatasetReader();
  bool next(DatasetSentence& sentence);
  const std::vector<std::string>& files() const { return files_; }

 private:
  struct Impl;
  std::vector<std::string> files_;
  std::unique_ptr<Impl> impl_;
};

// A sentence as the model sees it.
struct TokenizedSentence {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;
  std::vector<int> word_of;   // per token: its word, −1 for special tokens and tokens in no word
  std::vector<bool> special;  // per token: no character span ([CLS], [SEP], BOS/EOS)
  int words = 0;
};

// Tokenizes as the model reads a text (core::model_encoding: an encoder's [CLS] … [SEP], an imported
// decoder's BOS, a HeadLab causal model's bare ids). A token belongs to the word whose span holds its
// first non-space character; a token of whitespace only (GPT-2's lone "Ġ") or outside every word
// span is not special but belongs to no word.
TokenizedSentence tokenize_sentence(const core::ModelConfig& config, const core::Tokenizer& tokenizer,
                                    const DatasetSentence& sentence);

}  // namespace headlab::analysis
