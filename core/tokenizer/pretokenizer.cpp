#include "core/tokenizer/pretokenizer.h"

#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/json_keys.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// HF's SplitDelimiterBehavior: what happens to the matched delimiters.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const std::string& s) {
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  throw std::runtime_error("unknown split behavior '" + s + "'");
}

// A piece of a split: chars [b, e) and whether it is a delimiter match.
struct Seg {
  uint32_t b, e;
  bool match;
};

// HF NormalizedString::split: turns the (match / gap) segments into the kept ranges.
void apply_behavior(const std::vector<Seg>& segs, Behavior behavior, std::vector<std::pair<uint32_t, uint32_t>>& out) {
  out.clear();
  switch (behavior) {
    case Behavior::Isolated:
      for (const Seg& s : segs) out.emplace_back(s.b, s.e);
      break;
    case Behavior::Removed:
      for (const Seg& s : segs)
        if (!s.match) out.emplace_back(s.b, s.e);
      break;
    case Behavior::Contiguous: {
      bool prev = false;
      for (const Seg& s : segs) {
        if (s.match == prev && !out.empty()) out.back().second = s.e;
        else out.emplace_back(s.b, s.e);
        prev = s.match;
      }
      break;
    }
    case Behavior::MergedWithPrevious: {
      bool prev = false;
      for (const Seg& s : segs) {
        if (s.match && !prev && !out.empty()) out.back().second = s.e;
        else out.emplace_back(s.b, s.e);
        prev = s.match;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool prev = false;
      std::vector<std::pair<uint32_t, uint32_t>> rev;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->match && !prev && !rev.empty()) rev.back().first = it->b;
        else rev.emplace_back(it->b, it->e);
        prev = it->match;
      }
      out.assign(rev.rbegin(), rev.rend());
      break;
    }
  }
}

// Applies `segment` (which fills the segments of one split) to every non-added split.
template <typename F>
void split_all(PreTokenized& pt, Behavior behavior, F&& segment) {
  std::vector<Split> result;
  result.reserve(pt.splits.size() * 4);
  std::vector<Seg> segs;
  std::vector<std::pair<uint32_t, uint32_t>> kept;
  for (const Split& s : pt.splits) {
    if (s.added_id >= 0) {
      result.push_back(s);
      continue;
    }
    segs.clear();
    segment(pt.pieces[s.piece], s.begin, s.end, segs);
    apply_behavior(segs, behavior, kept);
    for (auto [b, e] : kept) {
      if (b < e) result.push_back(Split{s.piece, b, e, -1, {}, {}});
    }
  }
  pt.splits = std::move(result);
}

// Segments of chars [b, e) where each char satisfying `pred` is its own match (HF's char pattern).
void char_segments(const NormalizedText& t, uint32_t b, uint32_t e, const std::function<bool(char32_t)>& pred,
                   std::vector<Seg>& segs) {
  uint32_t last = b;
  for (uint32_t i = b; i < e; ++i) {
    if (!pred(t.chars[i])) continue;
    if (last < i) segs.push_back({last, i, false});
    segs.push_back({i, i + 1, true});
    last = i + 1;
  }
  if (last < e) segs.push_back({last, e, false});
}

// Segments of chars [b, e) from the regex matches over that range alone (look-arounds do not see
// past the split, as in HF where each split is its own string).
void regex_segments(const Regex& re, bool invert, const NormalizedText& t, uint32_t b, uint32_t e,
                    std::vector<Seg>& segs) {
  const uint32_t byte_b = t.byte_of_char[b], byte_e = t.byte_of_char[e];
  thread_local std::vector<std::pair<uint32_t, uint32_t>> matches;  // reused: one per word otherwise
  matches.clear();
  re.find_all(std::string_view(t.utf8).substr(byte_b, byte_e - byte_b), matches);
  // Match boundaries are char boundaries; walk the byte offsets forward instead of searching.
  uint32_t cursor = b;
  auto to_char = [&](uint32_t byte) {
    while (t.byte_of_char[cursor] < byte_b + byte) ++cursor;
    return cursor;
  };
  uint32_t prev = b;
  for (auto [mb, me] : matches) {
    uint32_t cb = to_char(mb), ce = to_char(me);
    if (prev != cb) segs.push_back({prev, cb, invert});
    segs.push_back({cb, ce, !invert});
    prev = ce;
  }
  if (prev != e) segs.push_back({prev, e, invert});
}

class BertPreTokenizer : public PreTokenizer {
 public:
  // Whitespace splits and is dropped; each punctuation char becomes its own word.
  void pre_tokenize(PreTokenized& pt) const override {
    std::vector<Split> result;
    result.reserve(pt.splits.size() * 8);
    for (const Split& s : pt.splits) {
      if (s.added_id >= 0) {
        result.push_back(s);
        continue;
      }
      const NormalizedText& t = pt.pieces[s.piece];
      uint32_t start = s.begin;
      for (uint32_t i = s.begin; i < s.end; ++i) {
        char32_t c = t.chars[i];
        if (is_whitespace(c)) {
          if (start < i) result.push_back(Split{s.piece, start, i, -1, {}, {}});
          start = i + 1;
        } else if (is_bert_punctuation(c)) {
          if (start < i) result.push_back(Split{s.piece, start, i, -1, {}, {}});
          result.push_back(Split{s.piece, i, i + 1, -1, {}, {}});
          start = i + 1;
        }
      }
      if (start < s.end) result.push_back(Split{s.piece, start, s.end, -1, {}, {}});
    }
    pt.splits = std::move(result);
  }
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern) : nullptr) {}

  void pre_tokenize(PreTokenized& pt) const override {
    if (add_prefix_space_) {
      // Every split not starting with a space gets one, aligned to its first char; it becomes a
      // piece of its own so the regex below sees the space.
      for (Split& s : pt.splits) {
        if (s.added_id >= 0 || s.begin >= s.end) continue;
        const NormalizedText& src = pt.pieces[s.piece];
        if (src.chars[s.begin] == U' ') continue;
        NormalizedText t;
        t.base = src.align[s.begin].start;
        t.chars = src.chars.substr(s.begin, s.end - s.begin);
        t.align.assign(src.align.begin() + s.begin, src.align.begin() + s.end);
        t.prepend(U" ");
        t.finalize();
        pt.pieces.push_back(std::move(t));
        s = Split{static_cast<uint32_t>(pt.pieces.size() - 1), 0, static_cast<uint32_t>(pt.pieces.back().chars.size()),
                  -1, {}, {}};
      }
    }
    if (regex_) {
      split_all(pt, Behavior::Isolated, [&](const NormalizedText& t, uint32_t b, uint32_t e, std::vector<Seg>& segs) {
        regex_segments(*regex_, false, t, b, e, segs);
      });
    }
    if (map_bytes_) map_bytes(pt);
  }
  // Last (or alone), ByteLevel leaves the byte mapping to the model (bytes through byte_to_unicode).
  bool byte_level() const override { return !map_bytes_; }

  // Before other steps of a Sequence (Falcon: Digits and Split after it), those steps must see the
  // mapped chars, as Hugging Face's do: the words are mapped here and the model reads them as they are.
  void map_bytes_before_later_steps() { map_bytes_ = true; }

 private:
  // Each word becomes a piece of its UTF-8 bytes through byte_to_unicode(); every byte's char keeps
  // the alignment of the char it came from (so a token holding part of a char spans the whole char).
  static void map_bytes(PreTokenized& pt) {
    const auto& table = byte_to_unicode();
    for (Split& s : pt.splits) {
      if (s.added_id >= 0 || s.begin >= s.end) continue;
      const NormalizedText& src = pt.pieces[s.piece];
      NormalizedText t;
      t.base = src.align[s.begin].start;
      for (uint32_t i = s.begin; i < s.end; ++i)
        for (uint32_t byte = src.byte_of_char[i]; byte < src.byte_of_char[i + 1]; ++byte) {
          t.chars.push_back(table[static_cast<unsigned char>(src.utf8[byte])]);
          t.align.push_back(src.align[i]);
        }
      t.finalize();
      pt.pieces.push_back(std::move(t));
      s = Split{static_cast<uint32_t>(pt.pieces.size() - 1), 0, static_cast<uint32_t>(pt.pieces.back().chars.size()),
                -1, {}, {}};
    }
  }

  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
  bool map_bytes_ = false;
};

class RegexSplitPreTokenizer : public PreTokenizer {
 public:
  RegexSplitPreTokenizer(const std::string& pattern, Behavior behavior, bool invert)
      : regex_(pattern), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(PreTokenized& pt) const override {
    split_all(pt, behavior_, [&](const NormalizedText& t, uint32_t b, uint32_t e, std::vector<Seg>& segs) {
      regex_segments(regex_, invert_, t, b, e, segs);
    });
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

class CharSplitPreTokenizer : public PreTokenizer {
 public:
  CharSplitPreTokenizer(std::function<bool(char32_t)> pred, Behavior behavior)
      : pred_(std::move(pred)), behavior_(behavior) {}
  void pre_tokenize(PreTokenized& pt) const override {
    split_all(pt, behavior_, [&](const NormalizedText& t, uint32_t b, uint32_t e, std::vector<Seg>& segs) {
      char_segments(t, b, e, pred_, segs);
    });
  }

 private:
  std::function<bool(char32_t)> pred_;
  Behavior behavior_;
};

// HF's pre_tokenizers::Metaspace (SentencePiece's whitespace marker): spaces become the
// replacement char (U+2581 "▁"), the replacement is prepended to each split (prepend_scheme
// "always") or only to the split at the very start of the input ("first"), unless the split
// already starts with it; with split=true each replacement starts a new word (MergedWithNext).
class MetaspacePreTokenizer : public PreTokenizer {
 public:
  enum class Prepend { Always, First, Never };
  MetaspacePreTokenizer(char32_t replacement, Prepend prepend, bool split)
      : replacement_(replacement), prepend_(prepend), split_(split) {}

  void pre_tokenize(PreTokenized& pt) const override {
    std::vector<Split> result;
    result.reserve(pt.splits.size() * 4);
    std::vector<Seg> segs;
    std::vector<std::pair<uint32_t, uint32_t>> kept;
    const std::u32string rep(1, replacement_);
    for (const Split& s : pt.splits) {
      if (s.added_id >= 0 || s.begin >= s.end) {
        if (s.added_id >= 0) result.push_back(s);
        continue;
      }
      const NormalizedText& src = pt.pieces[s.piece];
      NormalizedText t;
      t.base = src.align[s.begin].start;
      t.chars = src.chars.substr(s.begin, s.end - s.begin);
      t.align.assign(src.align.begin() + s.begin, src.align.begin() + s.end);
      for (char32_t& c : t.chars)
        if (c == U' ') c = replacement_;
      // HF's "first" looks at where this split starts in the original input.
      const bool at_start = t.align[0].start == 0;
      if (t.chars[0] != replacement_ && (prepend_ == Prepend::Always || (prepend_ == Prepend::First && at_start)))
        t.prepend(rep);
      t.finalize();
      pt.pieces.push_back(std::move(t));
      const uint32_t index = static_cast<uint32_t>(pt.pieces.size() - 1);
      const uint32_t n = static_cast<uint32_t>(pt.pieces.back().chars.size());
      if (!split_) {
        result.push_back(Split{index, 0, n, -1, {}, {}});
        continue;
      }
      segs.clear();
      char_segments(pt.pieces.back(), 0, n, [&](char32_t c) { return c == replacement_; }, segs);
      apply_behavior(segs, Behavior::MergedWithNext, kept);
      for (auto [b, e] : kept)
        if (b < e) result.push_back(Split{index, b, e, -1, {}, {}});
    }
    pt.splits = std::move(result);
  }

 private:
  char32_t replacement_;
  Prepend prepend_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {
    // Last, ByteLevel leaves the byte mapping to the model; before other steps it maps the words
    // itself, so that those steps split the mapped chars (and the model reads them as they are).
    bool mapped = false;
    for (size_t i = 0; i + 1 < steps_.size(); ++i) {
      if (auto* byte_level = dynamic_cast<ByteLevelPreTokenizer*>(steps_[i].get())) {
        byte_level->map_bytes_before_later_steps();
        mapped = true;
      } else if (steps_[i]->byte_level()) {
        throw std::runtime_error("pre_tokenizer: a Sequence ending in ByteLevel must be the last step of a Sequence");
      }
    }
    if (mapped && steps_.back()->byte_level())
      throw std::runtime_error("pre_tokenizer: two ByteLevel steps in one Sequence map the bytes twice");
  }
  void pre_tokenize(PreTokenized& pt) const override {
    for (const auto& s : steps_) s->pre_tokenize(pt);
  }
  bool byte_level() const override { return !steps_.empty() && steps_.back()->byte_level(); }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

MetaspaceOptions metaspace_options(const nlohmann::json& j, const std::string& where) {
  require_known_keys(j, {"type", "replacement", "add_prefix_space", "prepend_scheme", "split", "str_rep"}, where);
  MetaspaceOptions o;
  const std::u32string rep = utf8_to_u32(j.at("replacement").get<std::string>());
  if (rep.size() != 1) throw std::runtime_error(where + ": replacement must be a single character");
  o.replacement = rep[0];
  if (j.contains("prepend_scheme") && !j["prepend_scheme"].is_null()) {
    o.prepend_scheme = j["prepend_scheme"].get<std::string>();
    if (o.prepend_scheme != "always" && o.prepend_scheme != "first" && o.prepend_scheme != "never")
      throw std::runtime_error(where + ": prepend_scheme '" + o.prepend_scheme + "' is not always, first or never");
  }
  // The older spelling: HF accepts add_prefix_space true beside any prepend_scheme (which wins),
  // and false only beside prepend_scheme "never"; otherwise it refuses the file.
  if (j.contains("add_prefix_space") && !j["add_prefix_space"].is_null() && !j["add_prefix_space"].get<bool>() &&
      o.prepend_scheme != "never")
    throw std::runtime_error(where + ": add_prefix_space false does not match prepend_scheme '" + o.prepend_scheme + "'");
  if (j.contains("split") && !j["split"].is_null()) o.split = j["split"].get<bool>();
  return o;
}

std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() { return std::make_unique<BertPreTokenizer>(); }

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw std::runtime_error("pre_tokenizer: expected an object with a \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "BertPreTokenizer") return make_bert_pre_tokenizer();
  if (type == "ByteLevel") return make_byte_level_pre_tokenizer(j.value("add_prefix_space", false), j.value("use_regex", true));
  if (type == "Split") {
    const auto& p = j.at("pattern");
    std::string pattern;
    if (p.contains("Regex")) pattern = p["Regex"].get<std::string>();
    else if (p.contains("String")) pattern = regex_escape(p["String"].get<std::string>());
    else throw std::runtime_error("pre_tokenizer Split: pattern must be {\"Regex\": …} or {\"String\": …}");
    return std::make_unique<RegexSplitPreTokenizer>(pattern, parse_behavior(j.value("behavior", std::string("Isolated"))),
                                                    j.value("invert", false));
  }
  if (type == "Whitespace") return std::make_unique<RegexSplitPreTokenizer>(R"(\w+|[^\w\s]+)", Behavior::Removed, true);
  if (type == "WhitespaceSplit") return std::make_unique<CharSplitPreTokenizer>(is_whitespace, Behavior::Removed);
  if (type == "Digits") {
    return std::make_unique<CharSplitPreTokenizer>(
        is_numeric, j.value("individual_digits", false) ? Behavior::Isolated : Behavior::Contiguous);
  }
  if (type == "Punctuation") {
    return std::make_unique<CharSplitPreTokenizer>(is_bert_punctuation,
                                                   parse_behavior(j.value("behavior", std::string("Isolated"))));
  }
  if (type == "Metaspace") {
    const MetaspaceOptions o = metaspace_options(j, "pre_tokenizer Metaspace");
    return std::make_unique<MetaspacePreTokenizer>(o.replacement,
                                                   o.prepend_scheme == "always"  ? MetaspacePreTokenizer::Prepend::Always
                                                   : o.prepend_scheme == "first" ? MetaspacePreTokenizer::Prepend::First
                                                                                 : MetaspacePreTokenizer::Prepend::Never,
                                                   o.split);
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& s : j.at("pretokenizers")) {
      if (auto p = make_pre_tokenizer(s)) steps.push_back(std::move(p));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  throw std::runtime_error("unsupported pre_tokenizer type '" + type + "'");
}

}  // namespace headlab::core::tok
