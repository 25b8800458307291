// Unigram language-model segmentation (SentencePiece's unigram model, as T5, mT5, Marian/OPUS-MT
// and XLM-R use it), following Hugging Face `tokenizers`' models::unigram: the Viterbi best path
// over the pieces of the vocabulary, unknown characters and byte fallback handled as HF does.
// Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/tokenizer/model.h"

namespace headlab::core::tok {

class Unigram : public Model {
 public:
  // `pieces` in id order with their log-probabilities. Throws std::runtime_error for an empty
  // vocabulary or an unk_id outside it (HF's UnkIdNotInVocabulary).
  Unigram(const std::vector<std::pair<std::string, double>>& pieces, std::optional<int32_t> unk_id, bool byte_fallback);

  // Throws std::runtime_error when the word holds a character no piece covers and the model has
  // no unk_id (HF's MissingUnkId).
  void tokenize(std::string_view word, std::vector<ModelToken>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::optional<int32_t> unk_id() const override { return unk_id_; }
  bool byte_fallback() const { return byte_fallback_; }

 private:
  // Every piece (HF puts them all in its trie, control symbols such as "</s>" included) as a byte
  // trie walked for the common-prefix search of the lattice. Children by (node << 8 | byte).
  struct TrieNode {
    int32_t id = -1;  // the piece ending here, if any
  };
  int32_t child(int32_t node, unsigned char byte) const {
    auto it = children_.find((static_cast<uint64_t>(node) << 8) | byte);
    return it == children_.end() ? -1 : it->second;
  }
  // The best segmentation of `word` as byte ranges [begin, end), unknown runs fused.
  void viterbi(std::string_view word, std::vector<std::pair<uint32_t, uint32_t>>& pieces) const;

  Vocab vocab_;
  std::vector<double> scores_;  // by id
  std::optional<int32_t> unk_id_;
  bool byte_fallback_ = false;
  double min_score_ = 0;
  std::vector<TrieNode> nodes_;
  std::unordered_map<uint64_t, int32_t> children_;
};

}  // namespace headlab::core::tok
