#include "core/tokenizer/word_level.h"

#include <stdexcept>

namespace headlab::core::tok {

WordLevel::WordLevel(Vocab vocab, std::string unk_token) : vocab_(std::move(vocab)) {
  auto unk = vocab_.find(unk_token);
  if (!unk) throw std::runtime_error("WordLevel: unknown token '" + unk_token + "' is not in the vocabulary");
  unk_id_ = *unk;
}

void WordLevel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const auto id = vocab_.find(word);
  out.push_back({id ? *id : unk_id_, 0, static_cast<uint32_t>(word.size())});
}

}  // namespace headlab::core::tok
