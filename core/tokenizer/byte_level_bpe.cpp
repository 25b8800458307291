#include "core/tokenizer/byte_level_bpe.h"

#include <cstdio>
#include <queue>
#include <stdexcept>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

const std::array<char32_t, 256>& byte_to_unicode() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

int unicode_to_byte(char32_t c) {
  static const std::unordered_map<char32_t, int> inverse = [] {
    std::unordered_map<char32_t, int> m;
    const auto& t = byte_to_unicode();
    for (int b = 0; b < 256; ++b) m[t[static_cast<size_t>(b)]] = b;
    return m;
  }();
  auto it = inverse.find(c);
  return it == inverse.end() ? -1 : it->second;
}

Bpe::Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  if (options_.unk_token) {
    if (auto id = vocab_.find(*options_.unk_token)) unk_id_ = *id;
  }
  const size_t prefix_len = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = vocab_.find(a), ib = vocab_.find(b);
    // The merged token drops the continuation prefix of the right part, as HF does.
    std::string merged = a + (prefix_len && b.compare(0, prefix_len, options_.continuing_subword_prefix) == 0
                                  ? b.substr(prefix_len)
                                  : b);
    auto im = vocab_.find(merged);
    if (!ia || !ib || !im) {
      throw std::runtime_error("merge " + std::to_string(rank + 1) + " '" + a + " " + b +
                               "' uses a token that is not in the vocabulary");
    }
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(*ia)) << 32) | static_cast<uint32_t>(*ib);
    merges_.emplace(key, Merge{static_cast<int32_t>(rank), *im});  // the first (lowest) rank wins
  }
  const auto& table = byte_to_unicode();
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, table[static_cast<size_t>(b)]);
    auto id = vocab_.find(s);
    byte_unit_id_[static_cast<size_t>(b)] = id ? *id : -1;
  }
}

void Bpe::initial_units(std::string_view word, Pieces& units) const {
  // One unit per byte (byte-level) or per char; a unit missing from the vocabulary becomes the
  // unknown token (fused with a neighbouring unknown if fuse_unk), byte-fallback tokens, or is
  // dropped when the model has no unknown token — all as HF's BPE::merge_word.
  const auto& table = byte_to_unicode();
  const bool affixes = !options_.continuing_subword_prefix.empty() || !options_.end_of_word_suffix.empty();
  std::optional<std::pair<int32_t, uint32_t>> unk;
  std::string s;
  size_t i = 0;
  while (i < word.size()) {
    const size_t len = options_.byte_level ? 1 : std::min<size_t>(utf8_length(static_cast<unsigned char>(word[i])), word.size() - i);
    const bool is_first = i == 0, is_last = i + len == word.size();
    int32_t id = -1;
    if (options_.byte_level && !affixes) {
      id = byte_unit_id_[static_cast<unsigned char>(word[i])];
    } else {
      s.clear();
      if (!is_first) s += options_.continuing_subword_prefix;
      if (options_.byte_level) append_utf8(s, table[static_cast<unsigned char>(word[i])]);
      else s.append(word.data() + i, len);
      if (is_last) s += options_.end_of_word_suffix;
      auto it = vocab_.token_to_id.find(s);
      if (it != vocab_.token_to_id.end()) id = it->second;
    }
    if (id >= 0) {
      if (unk) {
        units.push_back(*unk);
        unk.reset();
      }
      units.emplace_back(id, static_cast<uint32_t>(len));
    } else {
      bool handled = false;
      if (options_.byte_fallback) {
        // Each byte of the unit becomes a one-byte <0xXX> piece; a pending unknown token is not
        // flushed first, so it follows them, as in HF. (HF spells the bytes of the looked-up
        // string, affixes included; those would not fit the word, so the word's bytes are used.)
        const std::string_view unit = word.substr(i, len);
        Pieces bytes;
        for (unsigned char b : unit) {
          char code[8];
          std::snprintf(code, sizeof(code), "<0x%02X>", b);
          auto it = vocab_.token_to_id.find(code);
          if (it == vocab_.token_to_id.end()) break;
          bytes.emplace_back(it->second, 1);
        }
        if (bytes.size() == unit.size()) {
          units.insert(units.end(), bytes.begin(), bytes.end());
          handled = true;
        }
      }
      if (!handled && unk_id_ >= 0) {
        if (unk && options_.fuse_unk) {
          unk->second += static_cast<uint32_t>(len);
        } else {
          if (unk) units.push_back(*unk);
          unk = std::make_pair(unk_id_, static_cast<uint32_t>(len));
        }
      }
    }
    i += len;
  }
  if (unk) units.push_back(*unk);
}

void Bpe::merge_all(Pieces& pieces) const {
  // HF's Word::merge_all: a heap of candidate merges ordered by (rank, position); stale entries
  // are recognised when the pair at that position no longer produces the same token.
  struct Symbol {
    int32_t id;
    uint32_t len;
    int32_t prev, next;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator<(const Candidate& o) const {  // std::priority_queue pops the largest
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const int32_t n = static_cast<int32_t>(pieces.size());
  if (n < 2) return;
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) sym[static_cast<size_t>(i)] = {pieces[static_cast<size_t>(i)].first, pieces[static_cast<size_t>(i)].second, i - 1, i + 1 < n ? i + 1 : -1};
  std::vector<Candidate> storage;
  storage.reserve(static_cast<size_t>(n));
  std::priority_queue<Candidate> queue(std::less<Candidate>(), std::move(storage));
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (const Merge* m = find_merge(sym[static_cast<size_t>(i)].id, sym[static_cast<size_t>(i) + 1].id))
      queue.push({m->rank, i, m->new_id});
  }
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& cur = sym[static_cast<size_t>(top.pos)];
    if (cur.len == 0 || cur.next < 0) continue;
    Symbol& right = sym[static_cast<size_t>(cur.next)];
    const Merge* m = find_merge(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    right.len = 0;
    const int32_t right_next = right.next;
    cur.next = right_next;
    if (right_next >= 0) sym[static_cast<size_t>(right_next)].prev = top.pos;
    if (cur.prev >= 0) {
      if (const Merge* pm = find_merge(sym[static_cast<size_t>(cur.prev)].id, cur.id))
        queue.push({pm->rank, cur.prev, pm->new_id});
    }
    if (right_next >= 0) {
      if (const Merge* nm = find_merge(cur.id, sym[static_cast<size_t>(right_next)].id))
        queue.push({nm->rank, top.pos, nm->new_id});
    }
  }
  pieces.clear();
  for (const Symbol& s : sym)
    if (s.len) pieces.emplace_back(s.id, s.len);
}

bool Bpe::WordCache::find(std::string_view word, size_t hash, Pieces& out) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.used) return false;
    if (s.hash == hash && s.key_length == word.size() &&
        std::string_view(keys_).substr(s.key_offset, s.key_length) == word) {
      out.assign(values_.begin() + s.value_offset, values_.begin() + s.value_offset + s.value_length);
      return true;
    }
  }
}

void Bpe::WordCache::insert(std::string_view word, size_t hash, const Pieces& pieces) {
  if (size_ >= kCapacity) return;
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].used) {
    if (slots_[i].hash == hash && std::string_view(keys_).substr(slots_[i].key_offset, slots_[i].key_length) == word)
      return;  // another thread got there first
    i = (i + 1) & mask;
  }
  Slot& s = slots_[i];
  s = Slot{hash, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(word.size()),
           static_cast<uint32_t>(values_.size()), static_cast<uint32_t>(pieces.size()), true};
  keys_.append(word);
  values_.insert(values_.end(), pieces.begin(), pieces.end());
  ++size_;
}

void Bpe::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  auto emit = [&](const Pieces& pieces) {
    uint32_t pos = 0;
    for (const auto& [id, len] : pieces) {
      out.push_back({id, pos, pos + len});
      pos += len;
    }
  };
  thread_local Pieces pieces;  // reused across calls: most words hit the cache
  pieces.clear();
  const bool cacheable = word.size() <= WordCache::kMaxWordBytes;
  const size_t hash = cacheable ? std::hash<std::string_view>()(word) : 0;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.find(word, hash, pieces)) {
      emit(pieces);
      return;
    }
  }
  bool whole = false;
  if (options_.ignore_merges) {
    std::string mapped;
    if (options_.byte_level) {
      for (unsigned char b : word) append_utf8(mapped, byte_to_unicode()[b]);
    } else {
      mapped = std::string(word);
    }
    auto it = vocab_.token_to_id.find(mapped);
    if (it != vocab_.token_to_id.end()) {
      pieces.emplace_back(it->second, static_cast<uint32_t>(word.size()));
      whole = true;
    }
  }
  if (!whole) {
    initial_units(word, pieces);
    merge_all(pieces);
  }
  emit(pieces);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    cache_.insert(word, hash, pieces);
  }
}

}  // namespace headlab::core::tok
