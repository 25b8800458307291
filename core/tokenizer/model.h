// The word-level models behind a tokenizer (WordPiece, BPE): a word in, vocabulary ids out.
// Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headlab::core::tok {

// One model token: its id and the bytes [begin, end) of the word it covers. `surface` marks a
// token whose string is the covered text rather than the vocabulary entry (HF's Unigram reports
// an unknown piece by its text, not by "<unk>").
struct ModelToken {
  int32_t id;
  uint32_t begin;
  uint32_t end;
  bool surface = false;
};

// Vocabulary: token string <-> id (ids need not be dense).
struct Vocab {
  std::unordered_map<std::string, int32_t> token_to_id;
  std::vector<std::string> id_to_token;  // "" for holes
  std::vector<bool> present;

  void add(const std::string& token, int32_t id);
  std::optional<int32_t> find(std::string_view token) const {
    auto it = token_to_id.find(std::string(token));
    if (it == token_to_id.end()) return std::nullopt;
    return it->second;
  }
  const std::string* token(int64_t id) const {
    if (id < 0 || id >= static_cast<int64_t>(id_to_token.size()) || !present[static_cast<size_t>(id)]) return nullptr;
    return &id_to_token[static_cast<size_t>(id)];
  }
  int64_t size() const { return static_cast<int64_t>(id_to_token.size()); }  // one past the largest id
  // The id of a token the model cannot work without (its unknown token); throws naming `model`.
  int32_t require(const std::string& token, const char* model) const;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the tokens of one pre-tokenized word (UTF-8, non-empty).
  virtual void tokenize(std::string_view word, std::vector<ModelToken>& out) const = 0;
  virtual const Vocab& vocab() const = 0;
  virtual std::optional<int32_t> unk_id() const = 0;
};

}  // namespace headlab::core::tok
