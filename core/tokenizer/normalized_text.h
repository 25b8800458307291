// Text under normalization, with the alignment of every normalized code point back to the
// original input, following Hugging Face's NormalizedString so that offsets match it exactly.
// Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headlab::core::tok {

// [start, end) in code points of the original input.
struct Span {
  uint32_t start = 0;
  uint32_t end = 0;
};

// One output code point of a transformation and its change, as in HF's NormalizedString::transform:
// 0 replaces the current input char, +1 is inserted, -N replaces it and removes the N after it.
struct Change {
  char32_t c;
  int change;
};

struct NormalizedText {
  std::u32string chars;     // the normalized text
  std::vector<Span> align;  // per normalized char: the original chars it came from
  uint32_t base = 0;        // original start of this piece; HF's (0, 0) alignment means this

  // UTF-8 of `chars` and the byte offset of each char (size chars.size() + 1); see finalize().
  std::string utf8;
  std::vector<uint32_t> byte_of_char;

  // A piece of the original text at original code-point offset `offset`, aligned 1:1.
  static NormalizedText from_original(std::u32string_view original, uint32_t offset);
  // The same from well-formed UTF-8.
  static NormalizedText from_utf8(std::string_view original, uint32_t offset);

  // HF's transform (with its initial_offset: input chars dropped at the very beginning).
  void transform(const std::vector<Change>& dest, size_t initial_offset);

  void nfd();   // canonical decomposition
  void nfkd();  // compatibility decomposition
  void nfc();   // canonical composition
  void nfkc();  // compatibility composition
  void lowercase();
  void filter(const std::function<bool(char32_t)>& keep);
  void map(const std::function<char32_t(char32_t)>& f);  // one code point to one
  void prepend(std::u32string_view s);
  void strip(bool left, bool right);  // removes leading/trailing whitespace
  // HF's NormalizedString::replace: each match [begin, end) (chars, in order, not overlapping) is
  // replaced by `content`, whose chars all take the alignment of the match's last char (of the
  // char before an empty match).
  void replace(const std::vector<std::pair<uint32_t, uint32_t>>& matches, std::u32string_view content);

  // Fills utf8 / byte_of_char; call after the last change to `chars`.
  void finalize();

  // Original span of normalized chars [b, e): first char's start to last char's end, as HF.
  Span original_span(uint32_t b, uint32_t e) const {
    if (b >= e) return {b < align.size() ? align[b].start : base, b < align.size() ? align[b].start : base};
    return {align[b].start, align[e - 1].end};
  }

  // Index of the char that contains byte `byte` of utf8 (binary search).
  uint32_t char_at_byte(uint32_t byte) const;
};

}  // namespace headlab::core::tok
