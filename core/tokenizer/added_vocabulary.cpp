#include "core/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <cstring>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

// Decodes the code point that ends just before byte `pos` (pos > 0).
char32_t char_before(std::string_view s, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  std::u32string cps = utf8_to_u32(s.substr(b, pos - b));
  return cps.empty() ? 0 : cps[0];
}

char32_t char_at(std::string_view s, size_t pos) {
  size_t len = std::min<size_t>(utf8_length(static_cast<unsigned char>(s[pos])), s.size() - pos);
  std::u32string cps = utf8_to_u32(s.substr(pos, len));
  return cps.empty() ? 0 : cps[0];
}

bool is_word_char(char32_t c) { return c == '_' || is_alphanumeric(c); }

}  // namespace

void AddedVocabulary::add(const AddedToken& token) {
  if (token.content.empty()) return;
  auto existing = index_by_content_.find(token.content);
  size_t index;
  if (existing != index_by_content_.end()) {
    index = existing->second;
    tokens_[index] = token;
  } else {
    index = tokens_.size();
    tokens_.push_back(token);
    index_by_content_[token.content] = index;
  }
  index_by_id_[token.id] = index;
  if (token.id >= 0) {
    if (static_cast<size_t>(token.id) >= special_by_id_.size()) special_by_id_.resize(static_cast<size_t>(token.id) + 1, false);
    special_by_id_[static_cast<size_t>(token.id)] = token.special;
  }
  // Rebuild both matchers: cheap, and keeps the longest-first order simple.
  raw_ = Matcher();
  normalized_ = Matcher();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    Matcher& m = tokens_[i].normalized ? normalized_ : raw_;
    m.by_first_byte[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    m.empty = false;
  }
  for (Matcher* m : {&raw_, &normalized_}) {
    for (auto& bucket : m->by_first_byte) {
      std::stable_sort(bucket.begin(), bucket.end(),
                       [&](size_t a, size_t b) { return tokens_[a].content.size() > tokens_[b].content.size(); });
    }
  }
}

const AddedToken* AddedVocabulary::by_id(int64_t id) const {
  auto it = index_by_id_.find(static_cast<int32_t>(id));
  return it == index_by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::id_of(std::string_view content) const {
  auto it = index_by_content_.find(std::string(content));
  if (it == index_by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

void AddedVocabulary::split(std::string_view text, bool normalized, std::vector<AddedSegment>& out) const {
  out.clear();
  const Matcher& m = normalized ? normalized_ : raw_;
  if (m.empty || text.empty()) {
    out.push_back({0, static_cast<uint32_t>(text.size()), -1});
    return;
  }
  find(text, m, out);
}

void AddedVocabulary::find(std::string_view text, const Matcher& m, std::vector<AddedSegment>& out) const {
  const size_t n = text.size();
  size_t start_offset = 0;  // end of the previous emitted segment
  size_t pos = 0;
  while (pos < n) {
    const auto& bucket = m.by_first_byte[static_cast<unsigned char>(text[pos])];
    const AddedToken* hit = nullptr;
    for (size_t i : bucket) {
      const std::string& c = tokens_[i].content;
      if (c.size() <= n - pos && std::memcmp(text.data() + pos, c.data(), c.size()) == 0) {
        hit = &tokens_[i];
        break;
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + hit->content.size();
    pos = stop;  // matches never overlap, even when this one is discarded below
    if (hit->single_word) {
      bool start_ok = start == 0 || !is_word_char(char_before(text, start));
      bool stop_ok = stop == n || !is_word_char(char_at(text, stop));
      if (!start_ok || !stop_ok) continue;
    }
    if (hit->lstrip) {
      // Take the whitespace before the token, but not what an earlier match already took.
      size_t s = start;
      while (s > start_offset && is_whitespace(char_before(text, s))) {
        size_t b = s - 1;
        while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
        s = b;
      }
      start = s;
    }
    if (hit->rstrip) {
      while (stop < n && is_whitespace(char_at(text, stop))) stop += utf8_length(static_cast<unsigned char>(text[stop]));
      pos = stop;
    }
    if (start_offset < start) out.push_back({static_cast<uint32_t>(start_offset), static_cast<uint32_t>(start), -1});
    out.push_back({static_cast<uint32_t>(start), static_cast<uint32_t>(stop), hit->id});
    start_offset = stop;
  }
  if (start_offset < n) out.push_back({static_cast<uint32_t>(start_offset), static_cast<uint32_t>(n), -1});
}

}  // namespace headlab::core::tok
