#include "core/tokenizer/wordpiece.h"

#include <stdexcept>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

void Vocab::add(const std::string& token, int32_t id) {
  if (id < 0) throw std::runtime_error("negative id " + std::to_string(id) + " for token '" + token + "'");
  // Ids index a table: a damaged file's id of 10^9 must not allocate gigabytes (the largest real
  // vocabularies have ~262k tokens; a model config allows 2^22).
  if (id >= (1 << 22))
    throw std::runtime_error("id " + std::to_string(id) + " for token '" + token + "' is beyond any vocabulary (2^22)");
  token_to_id[token] = id;
  if (static_cast<size_t>(id) >= id_to_token.size()) {
    id_to_token.resize(static_cast<size_t>(id) + 1);
    present.resize(static_cast<size_t>(id) + 1, false);
  }
  id_to_token[static_cast<size_t>(id)] = token;
  present[static_cast<size_t>(id)] = true;
}

int32_t Vocab::require(const std::string& token, const char* model) const {
  auto id = find(token);
  if (!id) throw std::runtime_error(std::string(model) + ": unknown token '" + token + "' is not in the vocabulary");
  return *id;
}

WordPiece::WordPiece(Vocab vocab, WordPieceOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)), unk_id_(vocab_.require(options_.unk_token, "WordPiece")) {}

void WordPiece::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  const uint32_t n = static_cast<uint32_t>(word.size());
  size_t chars = 0;
  for (char c : word) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars > options_.max_input_chars_per_word) {
    out.push_back({unk_id_, 0, n});
    return;
  }
  const size_t first = out.size();
  std::string candidate;
  candidate.reserve(word.size() + options_.continuing_subword_prefix.size());
  uint32_t start = 0;
  while (start < n) {
    uint32_t end = n;
    bool found = false;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate += options_.continuing_subword_prefix;
      candidate.append(word.data() + start, end - start);
      auto it = vocab_.token_to_id.find(candidate);
      if (it != vocab_.token_to_id.end()) {
        out.push_back({it->second, start, end});
        found = true;
        break;
      }
      // Drop the last char (not byte) and retry.
      do {
        --end;
      } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      out.resize(first);
      out.push_back({unk_id_, 0, n});
      return;
    }
    start = end;
  }
}

}  // namespace headlab::core::tok
