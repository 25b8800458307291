#include "core/tokenizer/precompiled.h"

#include <cstring>
#include <stdexcept>

#include <utf8proc.h>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

// darts-clone unit fields, as spm_precompiled reads them.
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
size_t offset(uint32_t unit) { return static_cast<size_t>((unit >> 10) << ((unit & (1u << 9)) >> 6)); }

// The extended grapheme clusters of `s` (UAX #29, what the unicode-segmentation crate's
// graphemes(true) yields) as [begin, end) char ranges.
void graphemes(const std::u32string& s, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  out.clear();
  if (s.empty()) return;
  utf8proc_int32_t state = 0;
  uint32_t start = 0;
  for (uint32_t i = 1; i < s.size(); ++i) {
    if (utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(s[i - 1]), static_cast<utf8proc_int32_t>(s[i]),
                                         &state)) {
      out.emplace_back(start, i);
      start = i;
    }
  }
  out.emplace_back(start, static_cast<uint32_t>(s.size()));
}

// HF's normalizers::precompiled::replace: the new chars replace the old ones one for one (0);
// extra new chars are insertions (+1 on the last ones); fewer new chars fold the difference into
// the last change so far — which is an earlier grapheme's when nothing replaces this one.
void replace(std::vector<Change>& changes, size_t old_count, std::string_view new_part) {
  const std::u32string added = utf8_to_u32(new_part);
  const long diff = static_cast<long>(added.size()) - static_cast<long>(old_count);
  for (char32_t c : added) changes.push_back({c, 0});
  if (diff > 0) {
    for (long k = 0; k < diff; ++k) changes[changes.size() - 1 - static_cast<size_t>(k)].change = 1;
  } else if (diff < 0 && !changes.empty()) {
    changes.back().change += static_cast<int>(diff);
  }
}

}  // namespace

PrecompiledCharsMap::PrecompiledCharsMap(std::string_view blob) {
  if (blob.size() < 4) throw std::runtime_error("precompiled_charsmap is shorter than its 4-byte trie size");
  const auto* b = reinterpret_cast<const unsigned char*>(blob.data());
  const uint32_t trie_size = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
  if (trie_size > blob.size() - 4)
    throw std::runtime_error("precompiled_charsmap: trie size " + std::to_string(trie_size) + " exceeds the " +
                             std::to_string(blob.size() - 4) + " bytes after it");
  units_.resize(trie_size / 4);
  for (size_t i = 0; i < units_.size(); ++i) {
    const unsigned char* u = b + 4 + 4 * i;
    units_[i] = uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
  }
  normalized_.assign(blob.substr(4 + trie_size));
  if (!is_valid_utf8(normalized_)) throw std::runtime_error("precompiled_charsmap: the normalized strings are not UTF-8");
  if (units_.empty()) throw std::runtime_error("precompiled_charsmap: the trie is empty");
}

std::optional<std::string_view> PrecompiledCharsMap::transform(std::string_view chunk) const {
  // darts-clone's common prefix search; only the first (shortest) result is used. A damaged trie
  // that points outside itself ends the search instead of reading past it.
  size_t node = offset(units_[0]);
  for (unsigned char c : chunk) {
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size()) return std::nullopt;
    const uint32_t unit = units_[node];
    if (label(unit) != c) return std::nullopt;
    node ^= offset(unit);
    if (node >= units_.size()) return std::nullopt;
    if (has_leaf(unit)) {
      const size_t index = value(units_[node]);
      if (index > normalized_.size() || (index < normalized_.size() && (static_cast<unsigned char>(normalized_[index]) & 0xC0) == 0x80))
        throw std::runtime_error("precompiled_charsmap: a rule points outside its normalized strings");
      const size_t end = normalized_.find('\0', index);
      return std::string_view(normalized_).substr(index, (end == std::string::npos ? normalized_.size() : end) - index);
    }
  }
  return std::nullopt;
}

void PrecompiledCharsMap::normalize(NormalizedText& t) const {
  thread_local std::vector<std::pair<uint32_t, uint32_t>> clusters;
  graphemes(t.chars, clusters);
  std::vector<Change> changes;
  changes.reserve(t.chars.size() + 8);
  std::string piece;
  bool modified = false;
  for (auto [b, e] : clusters) {
    piece.clear();
    for (uint32_t i = b; i < e; ++i) append_utf8(piece, t.chars[i]);
    if (piece.size() < 6) {
      if (auto norm = transform(piece)) {
        modified = true;
        replace(changes, e - b, *norm);
        continue;
      }
    }
    for (uint32_t i = b; i < e; ++i) {
      piece.clear();
      append_utf8(piece, t.chars[i]);
      if (auto norm = transform(piece)) {
        modified = true;
        replace(changes, 1, *norm);
      } else {
        changes.push_back({t.chars[i], 0});
      }
    }
  }
  if (modified) t.transform(changes, 0);
}

std::string base64_decode(std::string_view text) {
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < text.size() && text[i] != '='; ++i) {
    const int v = sextet(text[i]);
    if (v < 0) throw std::runtime_error("invalid base64 character at offset " + std::to_string(i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  for (; i < text.size(); ++i)
    if (text[i] != '=') throw std::runtime_error("invalid base64: data after '=' padding");
  return out;
}

}  // namespace headlab::core::tok
