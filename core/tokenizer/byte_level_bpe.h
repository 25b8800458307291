// Byte-pair encoding as in GPT-2, Llama-3 and Qwen2/3: words are split into bytes (seen through
// GPT-2's byte-to-unicode map) and the lowest-ranked adjacent pair is merged until none applies.
// Also handles plain character-level BPE. Private to core/tokenizer/.
#pragma once

#include <array>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizer/model.h"

namespace headlab::core::tok {

// GPT-2's reversible byte <-> printable code point map (printable Latin-1 bytes map to
// themselves, the other 68 to U+0100...).
const std::array<char32_t, 256>& byte_to_unicode();
// -1 for code points not in the map.
int unicode_to_byte(char32_t c);

struct BpeOptions {
  std::optional<std::string> unk_token;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;  // a word that is a whole vocabulary entry skips the merges (Llama-3)
  bool byte_level = true;      // units are bytes through byte_to_unicode(), not chars
};

class Bpe : public Model {
 public:
  // `merges` in rank order. Throws std::runtime_error naming a merge whose parts or result are
  // not in the vocabulary.
  Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::optional<int32_t> unk_id() const override {
    return unk_id_ >= 0 ? std::optional<int32_t>(unk_id_) : std::nullopt;
  }
  const BpeOptions& options() const { return options_; }
  size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  // (id, byte length) pieces of a word, what the cache stores.
  using Pieces = std::vector<std::pair<int32_t, uint32_t>>;

  void initial_units(std::string_view word, Pieces& units) const;
  void merge_all(Pieces& symbols) const;
  const Merge* find_merge(int32_t a, int32_t b) const {
    auto it = merges_.find((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b));
    return it == merges_.end() ? nullptr : &it->second;
  }

  Vocab vocab_;
  BpeOptions options_;
  int32_t unk_id_ = -1;
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_unit_id_{};  // byte-level, no prefix/suffix: id of each byte's symbol

  // word -> pieces; like HF, bounded and filled until full (frequent words arrive early).
  // A flat open-addressing table over two arenas: one probe run and two arena reads per hit,
  // where a node-based map costs several dependent cache misses (it showed as 15% of encode).
  class WordCache {
   public:
    static constexpr size_t kCapacity = 65536;  // entries; the table has twice as many slots
    static constexpr size_t kMaxWordBytes = 256;
    bool find(std::string_view word, size_t hash, Pieces& out) const;
    void insert(std::string_view word, size_t hash, const Pieces& pieces);

   private:
    struct Slot {
      size_t hash = 0;
      uint32_t key_offset = 0, key_length = 0, value_offset = 0, value_length = 0;
      bool used = false;
    };
    std::vector<Slot> slots_ = std::vector<Slot>(2 * kCapacity);
    std::string keys_;
    Pieces values_;
    size_t size_ = 0;
  };
  mutable std::mutex cache_mutex_;
  mutable WordCache cache_;
};

}  // namespace headlab::core::tok
