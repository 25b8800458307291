// WordLevel (Hugging Face `models.WordLevel`): each pre-tokenized word is one vocabulary entry, or
// the unknown token when the vocabulary has no such word. Private to core/tokenizer/.
#pragma once

#include <string>

#include "core/tokenizer/model.h"

namespace headlab::core::tok {

class WordLevel : public Model {
 public:
  // Throws std::runtime_error when the unknown token is not in the vocabulary.
  WordLevel(Vocab vocab, const std::string& unk_token);

  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::optional<int32_t> unk_id() const override { return unk_id_; }

 private:
  Vocab vocab_;
  int32_t unk_id_ = -1;
};

}  // namespace headlab::core::tok
