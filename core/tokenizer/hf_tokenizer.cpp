#include "core/tokenizer/hf_tokenizer.h"

#include <algorithm>

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

// HF's WordPiece decoder cleanup, applied per token as HF does.
void cleanup_token(std::string& t) {
  replace_all(t, " .", ".");
  replace_all(t, " ?", "?");
  replace_all(t, " !", "!");
  replace_all(t, " ,", ",");
  replace_all(t, " ' ", "'");
  replace_all(t, " n't", "n't");
  replace_all(t, " 'm", "'m");
  replace_all(t, " do not", " don't");
  replace_all(t, " 's", "'s");
  replace_all(t, " 've", "'ve");
  replace_all(t, " 're", "'re");
}

// Byte-level tokens back to bytes; a token with a char outside the byte map (an added token
// such as a literal "\n") contributes its own UTF-8 bytes.
std::string byte_level_decode(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    std::u32string cps = utf8_to_u32(t);
    std::string mapped;
    bool ok = true;
    for (char32_t c : cps) {
      int b = unicode_to_byte(c);
      if (b < 0) {
        ok = false;
        break;
      }
      mapped.push_back(static_cast<char>(b));
    }
    bytes += ok ? mapped : t;
  }
  return sanitize_utf8(bytes);  // like String::from_utf8_lossy
}

// HF's decoders::ByteFallback: runs of <0xXX> tokens become the string of their bytes, or one
// U+FFFD per byte when those bytes are not UTF-8.
std::vector<std::string> byte_fallback_decode(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string bytes;
  size_t count = 0;
  auto flush = [&]() {
    if (count == 0) return;
    if (is_valid_utf8(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t k = 0; k < count; ++k) out.push_back("\xEF\xBF\xBD");
    }
    bytes.clear();
    count = 0;
  };
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (const std::string& t : tokens) {
    // Rust's u8::from_str_radix(&t[3..5], 16): two hex digits, or a '+' and one.
    int byte = -1;
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
      const int hi = hex(t[3]), lo = hex(t[4]);
      if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
      else if (t[3] == '+' && lo >= 0) byte = lo;
    }
    if (byte >= 0) {
      bytes.push_back(static_cast<char>(byte));
      ++count;
    } else {
      flush();
      out.push_back(t);
    }
  }
  flush();
  return out;
}

}  // namespace

HfTokenizer::HfTokenizer(TokenizerParts parts) : p_(std::move(parts)) {
  byte_level_ = p_.pre_tokenizer && p_.pre_tokenizer->byte_level();
  vocab_size_ = p_.model->vocab().size();
  for (const AddedToken& t : p_.added.tokens()) vocab_size_ = std::max<int64_t>(vocab_size_, int64_t{t.id} + 1);
}

Encoding HfTokenizer::encode(std::string_view input, bool add_special_tokens) const {
  std::string repaired;
  std::string_view text = input;
  if (!is_valid_utf8(input)) {
    repaired = sanitize_utf8(input);
    text = repaired;
  }
  PreTokenized pt;
  std::vector<AddedSegment> raw_segments, norm_segments;

  // 1. Added tokens with normalized=false, in the original text.
  p_.added.split(text, false, raw_segments);
  uint32_t byte_pos = 0, char_pos = 0;
  auto char_at_byte = [&](uint32_t byte) {
    while (byte_pos < byte) {
      byte_pos += utf8_length(static_cast<unsigned char>(text[byte_pos]));
      ++char_pos;
    }
    return char_pos;
  };
  for (const AddedSegment& seg : raw_segments) {
    const uint32_t cb = char_at_byte(seg.begin), ce = char_at_byte(seg.end);
    if (seg.id >= 0) {
      pt.splits.push_back(Split{0, 0, 0, seg.id, Span{cb, ce}, std::string(text.substr(seg.begin, seg.end - seg.begin))});
      continue;
    }
    // 2. The normalizer on each remaining piece, then added tokens with normalized=true in it.
    NormalizedText piece = NormalizedText::from_utf8(text.substr(seg.begin, seg.end - seg.begin), cb);
    if (p_.normalizer) p_.normalizer->normalize(piece);
    piece.finalize();
    if (piece.chars.empty()) continue;
    pt.pieces.push_back(std::move(piece));
    const uint32_t index = static_cast<uint32_t>(pt.pieces.size() - 1);
    const NormalizedText& t = pt.pieces.back();
    p_.added.split(t.utf8, true, norm_segments);
    for (const AddedSegment& s : norm_segments) {
      const uint32_t b = t.char_at_byte(s.begin), e = t.char_at_byte(s.end);
      if (s.id >= 0) {
        pt.splits.push_back(Split{index, b, e, s.id, t.original_span(b, e), t.utf8.substr(s.begin, s.end - s.begin)});
      } else if (b < e) {
        pt.splits.push_back(Split{index, b, e, -1, {}, {}});
      }
    }
  }

  // 3. Pre-tokenization into words.
  if (p_.pre_tokenizer) p_.pre_tokenizer->pre_tokenize(pt);

  // 4. The model on each word; offsets through the alignments back to the original.
  Encoding enc;
  std::vector<ModelToken> mtoks;
  const Vocab& vocab = p_.model->vocab();
  for (const Split& s : pt.splits) {
    if (s.added_id >= 0) {
      const AddedToken* a = p_.added.by_id(s.added_id);
      enc.ids.push_back(s.added_id);
      enc.tokens.push_back(s.added_text);
      enc.offsets.emplace_back(s.span.start, s.span.end);
      enc.special.push_back(a && a->special);
      continue;
    }
    if (s.begin >= s.end) continue;
    const NormalizedText& t = pt.pieces[s.piece];
    const uint32_t word_byte = t.byte_of_char[s.begin];
    mtoks.clear();
    const std::string_view word = std::string_view(t.utf8).substr(word_byte, t.byte_of_char[s.end] - word_byte);
    p_.model->tokenize(word, mtoks);
    uint32_t cursor = s.begin;  // tokens come in order: walk the char index forward
    for (const ModelToken& m : mtoks) {
      const uint32_t first_byte = word_byte + m.begin, last_byte = word_byte + m.end - 1;
      while (t.byte_of_char[cursor + 1] <= first_byte) ++cursor;
      uint32_t last = cursor;
      while (t.byte_of_char[last + 1] <= last_byte) ++last;
      const Span span = t.original_span(cursor, last + 1);
      enc.ids.push_back(m.id);
      if (m.surface) {
        enc.tokens.emplace_back(word.substr(m.begin, m.end - m.begin));
      } else {
        const std::string* str = vocab.token(m.id);
        enc.tokens.push_back(str ? *str : std::string());
      }
      enc.offsets.emplace_back(span.start, span.end);
      enc.special.push_back(p_.added.is_special(m.id));
    }
  }

  // 5. Post-processing (offset trimming, [CLS]/[SEP] or BOS).
  post_process(enc, add_special_tokens);
  return enc;
}

void HfTokenizer::post_process(Encoding& e, bool add_special_tokens) const {
  for (const PostStep& step : p_.post) {
    if (step.kind == PostStep::Kind::ByteLevelTrim) {
      // HF's ByteLevel process_offsets: leading/trailing spaces ('Ġ' or whitespace) leave the offsets.
      const char32_t space_char = byte_to_unicode()[' '];
      for (size_t i = 0; i < e.tokens.size(); ++i) {
        std::u32string cps = utf8_to_u32(e.tokens[i]);
        auto is_space = [&](char32_t c) { return c == space_char || is_whitespace(c); };
        size_t leading = 0, trailing = 0;
        while (leading < cps.size() && is_space(cps[leading])) ++leading;
        while (trailing < cps.size() && is_space(cps[cps.size() - 1 - trailing])) ++trailing;
        auto& [start, end] = e.offsets[i];
        if (leading > 0) {
          const bool is_first = i == 0 || start == 0;
          if (is_first && step.add_prefix_space && leading == 1) leading = 0;
          start = std::min<int64_t>(start + static_cast<int64_t>(leading), end);
        }
        if (trailing > 0 && end >= static_cast<int64_t>(trailing)) {
          end = std::max<int64_t>(end - static_cast<int64_t>(trailing), start);
        }
      }
      continue;
    }
    if (!add_special_tokens) continue;
    Encoding out;
    for (const TemplatePiece& piece : step.single) {
      if (piece.sequence) {
        out.ids.insert(out.ids.end(), e.ids.begin(), e.ids.end());
        out.tokens.insert(out.tokens.end(), e.tokens.begin(), e.tokens.end());
        out.offsets.insert(out.offsets.end(), e.offsets.begin(), e.offsets.end());
        out.special.insert(out.special.end(), e.special.begin(), e.special.end());
        continue;
      }
      for (size_t k = 0; k < piece.ids.size(); ++k) {
        out.ids.push_back(piece.ids[k]);
        out.tokens.push_back(k < piece.tokens.size() ? piece.tokens[k] : id_to_token(piece.ids[k]));
        out.offsets.emplace_back(0, 0);
        out.special.push_back(true);
      }
    }
    e = std::move(out);
  }
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (const AddedToken* a = p_.added.by_id(id)) {
      if (skip_special_tokens && a->special) continue;
      tokens.push_back(a->content);
    } else if (const std::string* s = p_.model->vocab().token(id)) {
      tokens.push_back(*s);
    }  // unknown ids are skipped, as HF does
  }
  if (!p_.has_decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const DecodeStep& step : p_.decoders) {
    switch (step.kind) {
      case DecodeStep::Kind::ByteLevel:
        tokens = {byte_level_decode(tokens)};
        break;
      case DecodeStep::Kind::WordPiece:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string& t = tokens[i];
          if (i != 0) {
            if (t.compare(0, step.prefix.size(), step.prefix) == 0) t.erase(0, step.prefix.size());
            else t.insert(0, " ");
          }
          if (step.cleanup) cleanup_token(t);
        }
        break;
      case DecodeStep::Kind::Metaspace:
        // HF's Metaspace decoder: the replacement is a space, except in the first token, where
        // every replacement is dropped unless nothing was prepended (prepend_scheme "never").
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::u32string cps = utf8_to_u32(tokens[i]);
          std::u32string kept;
          kept.reserve(cps.size());
          for (char32_t c : cps) {
            if (c != step.replacement) kept.push_back(c);
            else if (!(i == 0 && step.prepend)) kept.push_back(U' ');
          }
          tokens[i] = u32_to_utf8(kept);
        }
        break;
      case DecodeStep::Kind::Replace:
        for (std::string& t : tokens) {
          thread_local std::vector<std::pair<uint32_t, uint32_t>> matches;
          matches.clear();
          step.pattern->find_all(t, matches);
          if (matches.empty()) continue;
          std::string r;
          uint32_t pos = 0;
          for (auto [b, e] : matches) {
            r.append(t, pos, b - pos);
            r += step.content;
            pos = e;
          }
          r.append(t, pos, std::string::npos);
          t = std::move(r);
        }
        break;
      case DecodeStep::Kind::ByteFallback:
        tokens = byte_fallback_decode(tokens);
        break;
      case DecodeStep::Kind::Strip:
        // HF's Strip decoder: up to `start` leading and `stop` trailing copies of the char.
        for (std::string& t : tokens) {
          std::u32string cps = utf8_to_u32(t);
          size_t b = 0, e = cps.size();
          while (b < step.strip_start && b < cps.size() && cps[b] == step.strip_char) ++b;
          for (size_t k = 0; k < step.strip_stop && e > b && cps[e - 1] == step.strip_char; ++k) --e;
          t = u32_to_utf8(std::u32string_view(cps).substr(b, e - b));
        }
        break;
      case DecodeStep::Kind::Fuse: {
        std::string all;
        for (const auto& t : tokens) all += t;
        tokens = {all};
        break;
      }
    }
  }
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

std::optional<int64_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (auto id = p_.added.id_of(token)) return *id;
  if (auto id = p_.model->vocab().find(token)) return *id;
  return std::nullopt;
}

std::string HfTokenizer::id_to_token(int64_t id) const {
  if (const AddedToken* a = p_.added.by_id(id)) return a->content;
  if (const std::string* s = p_.model->vocab().token(id)) return *s;
  return {};
}

std::vector<AddedTokenInfo> HfTokenizer::added_tokens() const {
  std::vector<AddedTokenInfo> out;
  for (const AddedToken& t : p_.added.tokens()) out.push_back({t.content, t.id, t.special});
  std::sort(out.begin(), out.end(), [](const AddedTokenInfo& a, const AddedTokenInfo& b) { return a.id < b.id; });
  return out;
}

}  // namespace headlab::core::tok
