// WordPiece (BERT): greedy longest-match-first sub-words, "##" marking continuations.
// Private to core/tokenizer/.
#pragma once

#include <string>

#include "core/tokenizer/model.h"

namespace headlab::core::tok {

struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
};

class WordPiece : public Model {
 public:
  // Throws std::runtime_error when the unknown token is not in the vocabulary.
  WordPiece(Vocab vocab, WordPieceOptions options);

  // A word longer than max_input_chars_per_word, or one with a part no vocabulary entry covers,
  // becomes a single unknown token spanning the whole word (as in HF).
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::optional<int32_t> unk_id() const override { return unk_id_; }
  const WordPieceOptions& options() const { return options_; }

 private:
  Vocab vocab_;
  WordPieceOptions options_;
  int32_t unk_id_ = -1;
};

}  // namespace headlab::core::tok
