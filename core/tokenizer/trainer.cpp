#include "core/tokenizer/trainer.h"

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/pretokenizer.h"
#include "core/tokenizer/unicode.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace headlab::core::train {

using nlohmann::json;
using namespace headlab::core::tok;

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

constexpr const char* kPrefix = "##";

// Word counts after normalization and pre-tokenization, in first-seen order for determinism.
struct WordCounts {
  std::unordered_map<std::string, size_t> index;
  std::vector<std::pair<std::string, int64_t>> words;
  void add(const std::string& w) {
    auto [it, fresh] = index.emplace(w, words.size());
    if (fresh) words.emplace_back(w, 0);
    ++words[it->second].second;
  }
};

WordCounts count_words(const std::vector<std::string>& texts, const Normalizer* normalizer,
                       const PreTokenizer& pre) {
  WordCounts counts;
  for (const std::string& raw : texts) {
    const std::string text = is_valid_utf8(raw) ? raw : sanitize_utf8(raw);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      else ++end;  // keep the newline: byte-level BPE must learn it
      PreTokenized pt;
      NormalizedText piece = NormalizedText::from_original(utf8_to_u32(std::string_view(text).substr(start, end - start)), 0);
      start = end;
      if (normalizer) normalizer->normalize(piece);
      piece.finalize();
      if (piece.chars.empty()) continue;
      const uint32_t n = static_cast<uint32_t>(piece.chars.size());
      pt.pieces.push_back(std::move(piece));
      pt.splits.push_back(Split{0, 0, n, -1, {}, {}});
      pre.pre_tokenize(pt);
      for (const Split& s : pt.splits) {
        const NormalizedText& p = pt.pieces[s.piece];
        const uint32_t b = p.byte_of_char[s.begin], e = p.byte_of_char[s.end];
        if (e > b) counts.add(p.utf8.substr(b, e - b));
      }
    }
  }
  return counts;
}

struct Trained {
  std::vector<std::string> vocab;  // by id
  std::vector<std::pair<std::string, std::string>> merges;
};

// BPE-style merges over words given as initial symbol strings.
Trained learn_merges(const std::vector<std::vector<std::string>>& word_symbols, const std::vector<int64_t>& word_counts,
                     std::vector<std::string> vocab, int64_t vocab_size, int64_t min_frequency, bool wordpiece) {
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 0; i < vocab.size(); ++i) ids.emplace(vocab[i], static_cast<int32_t>(i));
  auto id_of = [&](const std::string& s) {
    auto [it, fresh] = ids.emplace(s, static_cast<int32_t>(vocab.size()));
    if (fresh) vocab.push_back(s);
    return it->second;
  };
  std::vector<std::vector<int32_t>> words(word_symbols.size());
  for (size_t w = 0; w < words.size(); ++w)
    for (const auto& s : word_symbols[w]) words[w].push_back(id_of(s));

  auto key = [](int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); };
  std::unordered_map<uint64_t, int64_t> pair_count;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  for (size_t w = 0; w < words.size(); ++w)
    for (size_t i = 0; i + 1 < words[w].size(); ++i) {
      const uint64_t k = key(words[w][i], words[w][i + 1]);
      pair_count[k] += word_counts[w];
      auto& list = where[k];
      if (list.empty() || list.back() != w) list.push_back(static_cast<uint32_t>(w));
    }
  // Max count first; ties: the smaller pair of ids (deterministic).
  using Entry = std::pair<int64_t, uint64_t>;
  auto cmp = [](const Entry& x, const Entry& y) { return x.first != y.first ? x.first < y.first : x.second > y.second; };
  std::priority_queue<Entry, std::vector<Entry>, decltype(cmp)> heap(cmp);
  for (const auto& [k, c] : pair_count) heap.push({c, k});

  Trained out;
  while (static_cast<int64_t>(vocab.size()) < vocab_size && !heap.empty()) {
    auto [count, k] = heap.top();
    heap.pop();
    auto it = pair_count.find(k);
    const int64_t current = it == pair_count.end() ? 0 : it->second;
    if (current != count) {
      if (current > 0) heap.push({current, k});
      continue;
    }
    if (count < min_frequency) break;
    const int32_t a = int32_t(k >> 32), b = int32_t(k & 0xffffffffu);
    const std::string left = vocab[a], right = vocab[b];
    std::string merged = left + (wordpiece && right.rfind(kPrefix, 0) == 0 ? right.substr(2) : right);
    const int32_t m = id_of(merged);
    out.merges.emplace_back(left, right);
    std::vector<uint32_t> affected = std::move(where[k]);
    where.erase(k);
    std::unordered_map<uint64_t, int64_t> delta;
    for (uint32_t w : affected) {
      auto& syms = words[w];
      const int64_t c = word_counts[w];
      bool found = false;
      for (size_t i = 0; i + 1 < syms.size(); ++i)
        if (syms[i] == a && syms[i + 1] == b) found = true;
      if (!found) continue;
      for (size_t i = 0; i + 1 < syms.size(); ++i) delta[key(syms[i], syms[i + 1])] -= c;
      std::vector<int32_t> next;
      next.reserve(syms.size());
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          next.push_back(m);
          ++i;
        } else {
          next.push_back(syms[i]);
        }
      }
      syms = std::move(next);
      for (size_t i = 0; i + 1 < syms.size(); ++i) {
        const uint64_t nk = key(syms[i], syms[i + 1]);
        delta[nk] += c;
        auto& list = where[nk];
        if (list.empty() || list.back() != w) list.push_back(w);
      }
    }
    // Apply in a sorted order so the heap sees the same pushes every run.
    std::map<uint64_t, int64_t> ordered(delta.begin(), delta.end());
    for (const auto& [dk, d] : ordered) {
      if (d == 0) continue;
      int64_t& c = pair_count[dk];
      c += d;
      if (c > 0) heap.push({c, dk});
      else pair_count.erase(dk);
    }
    pair_count.erase(k);
  }
  out.vocab = std::move(vocab);
  return out;
}

json added_token(const std::string& content, int64_t id) {
  return json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json vocab_json(const std::vector<std::string>& vocab) {
  json v = json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = static_cast<int64_t>(i);
  return v;
}

// The parts of a Hugging Face tokenizer.json that every trained tokenizer shares; the special
// tokens take the first ids.
json tokenizer_skeleton(const std::vector<std::string>& specials) {
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = json::array();
  for (size_t i = 0; i < specials.size(); ++i) j["added_tokens"].push_back(added_token(specials[i], int64_t(i)));
  return j;
}

const std::vector<std::string> kBertSpecials = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

// Word counts after BERT's normalizer (lowercase and accents stripped unless cased) and
// pre-tokenizer (whitespace, punctuation split off).
WordCounts count_bert_words(const std::vector<std::string>& texts, const TokenizerTrainOptions& o) {
  BertNormalizerOptions no;
  no.lowercase = o.lowercase;
  no.strip_accents = o.lowercase;  // HF: strip_accents null follows lowercase
  auto normalizer = make_bert_normalizer(no);
  auto pre = make_bert_pre_tokenizer();
  return count_words(texts, normalizer.get(), *pre);
}

// A BERT-style tokenizer.json around `model`: BertNormalizer, BertPreTokenizer, [CLS] A [SEP] (no
// post-processor without o.cls_sep).
json bert_style_tokenizer(const TokenizerTrainOptions& o, json model) {
  json j = tokenizer_skeleton(kBertSpecials);
  j["normalizer"] = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                     {"strip_accents", nullptr}, {"lowercase", o.lowercase}};
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  auto special = [](const char* name) { return json{{"SpecialToken", {{"id", name}, {"type_id", 0}}}}; };
  auto seq = [](const char* id, int type) { return json{{"Sequence", {{"id", id}, {"type_id", type}}}}; };
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({special("[CLS]"), seq("A", 0), special("[SEP]")})},
      {"pair", json::array({special("[CLS]"), seq("A", 0), special("[SEP]"), seq("B", 1),
                            json{{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 1}}}}})},
      {"special_tokens",
       {{"[CLS]", {{"id", "[CLS]"}, {"ids", {2}}, {"tokens", {"[CLS]"}}}},
        {"[SEP]", {{"id", "[SEP]"}, {"ids", {3}}, {"tokens", {"[SEP]"}}}}}}};
  if (!o.cls_sep) j["post_processor"] = nullptr;  // [CLS]/[SEP] stay in the vocabulary, unused
  // The WordPiece decoder joins tokens with spaces and tidies " ." and " ' "; WordLevel has no
  // "##" pieces, so it serves both.
  j["decoder"] = {{"type", "WordPiece"}, {"prefix", kPrefix}, {"cleanup", true}};
  j["model"] = std::move(model);
  return j;
}

// WordLevel: the specials, then the vocab_size - 5 most frequent words seen at least
// min_frequency times (ties by word, so the result is deterministic); everything else is [UNK].
json train_wordlevel(const std::vector<std::string>& texts, const TokenizerTrainOptions& o) {
  WordCounts counts = count_bert_words(texts, o);
  std::vector<std::pair<std::string, int64_t>> words;
  for (const auto& [w, c] : counts.words)
    if (c >= o.min_frequency) words.emplace_back(w, c);
  std::sort(words.begin(), words.end(),
            [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
  std::vector<std::string> vocab = kBertSpecials;
  for (const auto& [w, c] : words) {
    if (static_cast<int64_t>(vocab.size()) >= o.vocab_size) break;
    vocab.push_back(w);
  }
  return bert_style_tokenizer(o, {{"type", "WordLevel"}, {"unk_token", "[UNK]"}, {"vocab", vocab_json(vocab)}});
}

json train_wordpiece(const std::vector<std::string>& texts, const TokenizerTrainOptions& o) {
  WordCounts counts = count_bert_words(texts, o);
  const std::vector<std::string>& specials = kBertSpecials;
  // Alphabet: the most frequent characters (limit_alphabet), first-char and "##" forms.
  std::map<std::string, int64_t> char_count;
  for (const auto& [w, c] : counts.words) {
    const std::u32string u = utf8_to_u32(w);
    for (char32_t ch : u) char_count[u32_to_utf8(std::u32string(1, ch))] += c;
  }
  std::vector<std::pair<std::string, int64_t>> chars(char_count.begin(), char_count.end());
  std::stable_sort(chars.begin(), chars.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  if (static_cast<int64_t>(chars.size()) > o.limit_alphabet) chars.resize(static_cast<size_t>(o.limit_alphabet));
  std::unordered_set<std::string> alphabet;
  std::vector<std::string> vocab = specials;
  std::sort(chars.begin(), chars.end());
  for (const auto& [ch, c] : chars) {
    alphabet.insert(ch);
    vocab.push_back(ch);
  }
  for (const auto& [ch, c] : chars) vocab.push_back(kPrefix + ch);

  // Whole words: the most frequent ones (ties by word), made of alphabet characters only.
  std::unordered_set<std::string> whole;
  if (o.whole_words > 0) {
    std::vector<std::pair<std::string, int64_t>> words;
    for (const auto& [w, c] : counts.words) {
      if (c < o.min_frequency) continue;
      const std::u32string u = utf8_to_u32(w);
      if (u.size() < 2 || u.size() > 100) continue;  // one character is in the alphabet already
      bool ok = true;
      for (char32_t ch : u) ok = ok && alphabet.count(u32_to_utf8(std::u32string(1, ch))) > 0;
      if (ok) words.emplace_back(w, c);
    }
    std::sort(words.begin(), words.end(),
              [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
    for (const auto& [w, c] : words) {
      if (static_cast<int64_t>(whole.size()) >= o.whole_words || static_cast<int64_t>(vocab.size()) >= o.vocab_size)
        break;
      whole.insert(w);
      vocab.push_back(w);
    }
  }

  std::vector<std::vector<std::string>> symbols;
  std::vector<int64_t> word_counts;
  for (const auto& [w, c] : counts.words) {
    if (whole.count(w)) continue;  // already one token
    const std::u32string u = utf8_to_u32(w);
    std::vector<std::string> syms;
    bool ok = true;
    for (size_t i = 0; i < u.size(); ++i) {
      std::string ch = u32_to_utf8(std::u32string(1, u[i]));
      if (!alphabet.count(ch)) ok = false;
      syms.push_back(i == 0 ? ch : kPrefix + ch);
    }
    if (!ok || u.size() > 100) continue;  // such words become [UNK] anyway
    symbols.push_back(std::move(syms));
    word_counts.push_back(c);
  }
  Trained t = learn_merges(symbols, word_counts, vocab, o.vocab_size, o.min_frequency, true);
  return bert_style_tokenizer(o, {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", kPrefix},
                                  {"max_input_chars_per_word", 100}, {"vocab", vocab_json(t.vocab)}});
}

json train_bpe(const std::vector<std::string>& texts, const TokenizerTrainOptions& o) {
  auto pre = make_byte_level_pre_tokenizer(false, true);
  WordCounts counts = count_words(texts, nullptr, *pre);
  const auto& table = byte_to_unicode();
  const std::vector<std::string> specials = {"<s>", "<pad>", "</s>", "<unk>", "<mask>"};
  std::vector<std::string> vocab = specials;
  std::vector<std::string> byte_sym(256);
  for (int b = 0; b < 256; ++b) byte_sym[b] = u32_to_utf8(std::u32string(1, table[b]));
  std::vector<std::string> sorted_bytes = byte_sym;
  std::sort(sorted_bytes.begin(), sorted_bytes.end());
  for (const auto& s : sorted_bytes) vocab.push_back(s);

  std::vector<std::vector<std::string>> symbols;
  std::vector<int64_t> word_counts;
  for (const auto& [w, c] : counts.words) {
    std::vector<std::string> syms;
    for (unsigned char ch : w) syms.push_back(byte_sym[ch]);
    symbols.push_back(std::move(syms));
    word_counts.push_back(c);
  }
  Trained t = learn_merges(symbols, word_counts, vocab, o.vocab_size, o.min_frequency, false);

  json j = tokenizer_skeleton(specials);
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  json merges = json::array();
  for (const auto& [a, b] : t.merges) merges.push_back(a + " " + b);
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                {"vocab", vocab_json(t.vocab)}, {"merges", merges}};
  return j;
}

}  // namespace

json train_tokenizer(const std::vector<std::string>& texts, const TokenizerTrainOptions& options) {
  if (options.vocab_size < 300) throw std::invalid_argument("vocab size must be at least 300");
  if (options.kind == "wordpiece") return train_wordpiece(texts, options);
  if (options.kind == "bpe") return train_bpe(texts, options);
  if (options.kind == "wordlevel") return train_wordlevel(texts, options);
  throw std::invalid_argument("tokenizer kind must be 'wordpiece', 'bpe' or 'wordlevel', not '" + options.kind + "'");
}

json train_tokenizer_on_files(const std::vector<std::string>& paths, const TokenizerTrainOptions& options) {
  std::vector<std::string> texts;
  for (const auto& p : paths) {
    texts.push_back(read_text_file(p));
    // A file with nothing to learn from is a wrong path or a failed export, not a tiny vocabulary.
    if (texts.back().find_first_not_of(" \t\r\n\f\v") == std::string::npos)
      throw std::runtime_error(p + ": no text to learn a vocabulary from (the file is empty or only whitespace)");
  }
  return train_tokenizer(texts, options);
}

}  // namespace headlab::core::train
