// Added tokens (tokenizer.json "added_tokens"): matched in the text before the model sees it,
// leftmost-longest as HF's Aho-Corasick matcher, honouring single_word / lstrip / rstrip.
// Tokens with normalized=false are matched in the original text, the others in the normalized
// text. Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headlab::core::tok {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// A byte range [begin, end) of the searched text; id >= 0 for a matched token, -1 for text.
struct AddedSegment {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

class AddedVocabulary {
 public:
  void add(const AddedToken& token);
  bool empty() const { return tokens_.empty(); }

  // Cuts `text` (UTF-8) into text and token segments, in order, covering all of it. `normalized`
  // picks which tokens take part (see above).
  void split(std::string_view text, bool normalized, std::vector<AddedSegment>& out) const;

  const AddedToken* by_id(int64_t id) const;
  std::optional<int32_t> id_of(std::string_view content) const;
  bool is_special(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(special_by_id_.size()) && special_by_id_[static_cast<size_t>(id)];
  }
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Matcher {
    // Candidates by first byte, longest first, so the first hit at a position is the longest.
    std::vector<std::vector<size_t>> by_first_byte = std::vector<std::vector<size_t>>(256);
    bool empty = true;
  };
  void find(std::string_view text, const Matcher& m, std::vector<AddedSegment>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> index_by_id_;
  std::unordered_map<std::string, size_t> index_by_content_;
  Matcher raw_, normalized_;
  std::vector<bool> special_by_id_;  // is_special() runs once per token: a flat lookup
};

}  // namespace headlab::core::tok
