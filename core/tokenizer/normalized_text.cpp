#include "core/tokenizer/normalized_text.h"

#include <algorithm>
#include <optional>

#include <utf8proc.h>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

struct Item {
  char32_t c;
  int change;
  int ccc;
};

// Canonical (or compatibility) decomposition with HF's change tags: the first code point of a
// char's decomposition replaces it (0), the rest are inserted (+1). Runs of non-starters are
// then stably sorted by combining class (canonical ordering), the tags travelling along, which
// is what the unicode-normalization-alignments crate behind HF's NFD/NFC does.
std::vector<Item> decompose(const std::u32string& chars, bool compat) {
  std::vector<Item> out;
  out.reserve(chars.size() + 8);
  const utf8proc_option_t options =
      compat ? utf8proc_option_t(UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT) : UTF8PROC_DECOMPOSE;
  size_t run_start = 0;
  auto sort_run = [&]() {
    std::stable_sort(out.begin() + static_cast<ptrdiff_t>(run_start), out.end(),
                     [](const Item& a, const Item& b) { return a.ccc < b.ccc; });
  };
  utf8proc_int32_t buf[32];
  for (char32_t c : chars) {
    utf8proc_ssize_t n = 1;
    buf[0] = static_cast<utf8proc_int32_t>(c);
    if (c >= 0xA0) {
      int boundclass = 0;
      n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buf, 32, options, &boundclass);
      if (n <= 0 || n > 32) {  // cannot happen for valid code points; keep the char as is
        n = 1;
        buf[0] = static_cast<utf8proc_int32_t>(c);
      }
    }
    for (utf8proc_ssize_t j = 0; j < n; ++j) {
      char32_t d = static_cast<char32_t>(buf[j]);
      int ccc = combining_class(d);
      if (ccc == 0) {
        sort_run();
        run_start = out.size();
      }
      out.push_back({d, j == 0 ? 0 : 1, ccc});
    }
  }
  sort_run();
  return out;
}

// Primary composite of a starter and a following char, if any (composition exclusions honoured).
std::optional<char32_t> compose_pair(char32_t a, char32_t b) {
  utf8proc_int32_t buf[2] = {static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b)};
  utf8proc_ssize_t n = utf8proc_normalize_utf32(buf, 2, utf8proc_option_t(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  if (n == 1) return static_cast<char32_t>(buf[0]);
  return std::nullopt;
}

// Canonical recomposition of a decomposed sequence, mirroring the crate's Recompositions iterator
// including how it sums change tags (a composite gets composee.change + mark.change - 1).
std::vector<Change> recompose(const std::vector<Item>& in) {
  std::vector<Change> out;
  out.reserve(in.size());
  std::optional<Change> composee;
  std::optional<int> last_ccc;
  std::vector<Change> blocked;  // non-starters that did not compose, emitted after the composee
  auto flush_blocked = [&]() {
    out.insert(out.end(), blocked.begin(), blocked.end());
    blocked.clear();
  };
  for (const Item& it : in) {
    const Change ch{it.c, it.change};
    if (!composee) {
      if (it.ccc != 0) {
        out.push_back(ch);
        continue;
      }
      composee = ch;
      continue;
    }
    if (!last_ccc) {
      if (auto r = compose_pair(composee->c, it.c)) {
        composee = Change{*r, composee->change + it.change - 1};
        continue;
      }
      if (it.ccc == 0) {
        out.push_back(*composee);
        composee = ch;
        continue;
      }
      blocked.push_back(ch);
      last_ccc = it.ccc;
      continue;
    }
    if (*last_ccc >= it.ccc) {  // blocked from the composee
      if (it.ccc == 0) {
        out.push_back(*composee);
        flush_blocked();
        composee = ch;
        last_ccc.reset();
        continue;
      }
      blocked.push_back(ch);
      last_ccc = it.ccc;
      continue;
    }
    if (auto r = compose_pair(composee->c, it.c)) {
      composee = Change{*r, composee->change + it.change - 1};
      continue;
    }
    blocked.push_back(ch);
    last_ccc = it.ccc;
  }
  if (composee) out.push_back(*composee);
  flush_blocked();
  return out;
}

bool all_below(const std::u32string& s, char32_t limit) {
  for (char32_t c : s)
    if (c >= limit) return false;
  return true;
}

// True when canonical decomposition, reordering or composition could change the text: some char
// has a canonical decomposition, is a non-starter, can be the second char of a composition, or
// is a conjoining Hangul jamo. Most text, including curly quotes and CJK, has none.
bool may_change_canonically(const std::u32string& s) {
  for (char32_t c : s) {
    if (c < 0xC0) continue;
    if (c >= 0x1100 && c <= 0x11FF) return true;
    if (c >= 0xAC00 && c <= 0xD7A3) return true;  // algorithmic Hangul decomposition
    const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
    if (p->combining_class != 0) return true;
    if (p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) return true;
    if (p->comb_index != UINT16_MAX && p->comb_index >= 0x8000) return true;
  }
  return false;
}

}  // namespace

NormalizedText NormalizedText::from_original(std::u32string_view original, uint32_t offset) {
  NormalizedText t;
  t.chars.assign(original.begin(), original.end());
  t.align.resize(original.size());
  for (uint32_t i = 0; i < original.size(); ++i) t.align[i] = {offset + i, offset + i + 1};
  t.base = offset;
  return t;
}

NormalizedText NormalizedText::from_utf8(std::string_view original, uint32_t offset) {
  NormalizedText t;
  t.chars = utf8_to_u32(original);
  t.align.resize(t.chars.size());
  for (uint32_t i = 0; i < t.chars.size(); ++i) t.align[i] = {offset + i, offset + i + 1};
  t.base = offset;
  return t;
}

void NormalizedText::transform(const std::vector<Change>& dest, size_t initial_offset) {
  std::u32string new_chars;
  std::vector<Span> new_align;
  new_chars.reserve(dest.size());
  new_align.reserve(dest.size());
  size_t offset = initial_offset;
  for (const Change& d : dest) {
    Span a;
    if (d.change > 0) {
      // An inserted char shares the alignment of the input char before the current position.
      a = offset < 1 ? Span{base, base} : align[std::min(offset, align.size()) - 1];
    } else {
      a = offset < align.size() ? align[offset] : Span{base, base};
      offset += 1 + static_cast<size_t>(-d.change);
    }
    new_chars.push_back(d.c);
    new_align.push_back(a);
  }
  chars = std::move(new_chars);
  align = std::move(new_align);
}

void NormalizedText::nfd() {
  if (!may_change_canonically(chars)) return;
  auto items = decompose(chars, false);
  std::vector<Change> dest;
  dest.reserve(items.size());
  for (const Item& it : items) dest.push_back({it.c, it.change});
  transform(dest, 0);
}

void NormalizedText::nfkd() {
  if (all_below(chars, 0xA0)) return;
  auto items = decompose(chars, true);
  std::vector<Change> dest;
  dest.reserve(items.size());
  for (const Item& it : items) dest.push_back({it.c, it.change});
  transform(dest, 0);
}

void NormalizedText::nfc() {
  // Below U+0300 every char is its own NFC form and none composes with a neighbour.
  if (!may_change_canonically(chars)) return;
  transform(recompose(decompose(chars, false)), 0);
}

void NormalizedText::nfkc() {
  if (all_below(chars, 0xA0)) return;
  transform(recompose(decompose(chars, true)), 0);
}

void NormalizedText::lowercase() {
  bool multi = false;
  for (char32_t& c : chars) {
    if (c < 128) {
      if (c >= 'A' && c <= 'Z') c += 32;
    } else if (c == 0x130) {
      multi = true;
    } else {
      c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
    }
  }
  if (!multi) return;
  std::vector<Change> dest;
  dest.reserve(chars.size() + 4);
  for (char32_t c : chars) {
    std::u32string tmp;
    append_lowercase(tmp, c);
    for (size_t k = 0; k < tmp.size(); ++k) dest.push_back({tmp[k], k == 0 ? 0 : 1});
  }
  transform(dest, 0);
}

void NormalizedText::filter(const std::function<bool(char32_t)>& keep) {
  // Kept chars keep their own alignment (HF tags them -N for the N removed after them).
  size_t w = 0;
  for (size_t r = 0; r < chars.size(); ++r) {
    if (!keep(chars[r])) continue;
    chars[w] = chars[r];
    align[w] = align[r];
    ++w;
  }
  chars.resize(w);
  align.resize(w);
}

void NormalizedText::map(const std::function<char32_t(char32_t)>& f) {
  for (char32_t& c : chars) c = f(c);
}

void NormalizedText::prepend(std::u32string_view s) {
  if (chars.empty() || s.empty()) return;
  // HF replaces the first char by s[0] and inserts the rest and that char again: all of them take
  // the first char's alignment.
  const Span first = align[0];
  chars.insert(chars.begin(), s.begin(), s.end());
  align.insert(align.begin(), s.size(), first);
}

void NormalizedText::strip(bool left, bool right) {
  size_t b = 0, e = chars.size();
  if (left)
    while (b < e && is_whitespace(chars[b])) ++b;
  if (right)
    while (e > b && is_whitespace(chars[e - 1])) --e;
  chars = chars.substr(b, e - b);
  align = std::vector<Span>(align.begin() + static_cast<ptrdiff_t>(b), align.begin() + static_cast<ptrdiff_t>(e));
}

void NormalizedText::replace(const std::vector<std::pair<uint32_t, uint32_t>>& matches, std::u32string_view content) {
  if (matches.empty()) return;
  std::u32string new_chars;
  std::vector<Span> new_align;
  new_chars.reserve(chars.size() + matches.size() * content.size());
  new_align.reserve(chars.size() + matches.size() * content.size());
  uint32_t pos = 0;
  for (auto [b, e] : matches) {
    for (; pos < b; ++pos) {
      new_chars.push_back(chars[pos]);
      new_align.push_back(align[pos]);
    }
    // HF's transform_range inserts after dropping the match: the inserted chars share the
    // alignment of the char before the insertion point, (0, 0) at the very start.
    const Span a = e >= 1 ? align[e - 1] : Span{base, base};
    for (char32_t c : content) {
      new_chars.push_back(c);
      new_align.push_back(a);
    }
    pos = e;
  }
  for (; pos < chars.size(); ++pos) {
    new_chars.push_back(chars[pos]);
    new_align.push_back(align[pos]);
  }
  chars = std::move(new_chars);
  align = std::move(new_align);
}

void NormalizedText::finalize() {
  if (all_below(chars, 0x80)) {  // ASCII: bytes are chars
    utf8.assign(chars.begin(), chars.end());
    byte_of_char.resize(chars.size() + 1);
    for (uint32_t i = 0; i <= chars.size(); ++i) byte_of_char[i] = i;
    return;
  }
  utf8.clear();
  utf8.reserve(chars.size());
  byte_of_char.resize(chars.size() + 1);
  for (size_t i = 0; i < chars.size(); ++i) {
    byte_of_char[i] = static_cast<uint32_t>(utf8.size());
    append_utf8(utf8, chars[i]);
  }
  byte_of_char[chars.size()] = static_cast<uint32_t>(utf8.size());
}

uint32_t NormalizedText::char_at_byte(uint32_t byte) const {
  auto it = std::upper_bound(byte_of_char.begin(), byte_of_char.end(), byte);
  return static_cast<uint32_t>(it - byte_of_char.begin()) - 1;
}

}  // namespace headlab::core::tok
