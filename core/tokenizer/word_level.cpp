#include "core/tokenizer/word_level.h"

namespace headlab::core::tok {

WordLevel::WordLevel(Vocab vocab, const std::string& unk_token)
    : vocab_(std::move(vocab)), unk_id_(vocab_.require(unk_token, "WordLevel")) {}

void WordLevel::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const auto id = vocab_.find(word);
  out.push_back({id ? *id : unk_id_, 0, static_cast<uint32_t>(word.size())});
}

}  // namespace headlab::core::tok
