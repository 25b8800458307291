#include "core/tokenizer/unigram.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

// HF's K_UNK_PENALTY: an unknown character scores this far below the least likely piece.
constexpr double kUnkPenalty = 10.0;

}  // namespace

Unigram::Unigram(const std::vector<std::pair<std::string, double>>& pieces, std::optional<int32_t> unk_id,
                 bool byte_fallback)
    : unk_id_(unk_id), byte_fallback_(byte_fallback) {
  // HF accepts an empty vocabulary without an unk_id, but such a model cannot encode a single
  // character; it is refused here.
  if (pieces.empty()) throw std::runtime_error("Unigram: the vocabulary is empty");
  if (unk_id_) {
    if (*unk_id_ < 0 || static_cast<size_t>(*unk_id_) >= pieces.size())
      throw std::runtime_error("Unigram: unk_id " + std::to_string(*unk_id_) + " is outside the " +
                               std::to_string(pieces.size()) + " pieces of the vocabulary");
  }
  scores_.reserve(pieces.size());
  nodes_.emplace_back();
  min_score_ = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto& [piece, score] = pieces[i];
    const int32_t id = static_cast<int32_t>(i);
    vocab_.add(piece, id);  // a repeated piece keeps its last id, as HF's token_to_ids map does
    scores_.push_back(score);
    min_score_ = std::min(min_score_, score);
    int32_t node = 0;
    for (unsigned char b : piece) {
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        children_.emplace((static_cast<uint64_t>(node) << 8) | b, next);
      }
      node = next;
    }
    nodes_[static_cast<size_t>(node)].id = vocab_.token_to_id[piece];
  }
  // Trie nodes point at the final id of a repeated piece.
  for (auto& n : nodes_) {
    if (n.id >= 0) n.id = vocab_.token_to_id[vocab_.id_to_token[static_cast<size_t>(n.id)]];
  }
}

void Unigram::viterbi(std::string_view word, std::vector<std::pair<uint32_t, uint32_t>>& pieces) const {
  // HF's Unigram::encode_optimized (after SentencePiece's unigram_model.cc): for each char start,
  // every piece that starts there relaxes the node where it ends; a char no single piece covers
  // gets an unknown node scored min_score - 10. Ties keep the earlier (shorter) candidate.
  struct Node {
    int32_t id = -1;
    double score = 0;
    int64_t starts_at = -1;
  };
  const size_t size = word.size();
  const double unk_score = min_score_ - kUnkPenalty;
  std::vector<Node> best(size + 1);
  size_t start = 0;
  while (start < size) {
    const double here = best[start].score;
    const size_t mblen = std::min<size_t>(utf8_length(static_cast<unsigned char>(word[start])), size - start);
    bool has_single = false;
    int32_t node = 0;
    for (size_t k = start; k < size; ++k) {
      node = child(node, static_cast<unsigned char>(word[k]));
      if (node < 0) break;
      const int32_t id = nodes_[static_cast<size_t>(node)].id;
      if (id < 0) continue;
      Node& target = best[k + 1];
      const double candidate = scores_[static_cast<size_t>(id)] + here;
      if (target.starts_at < 0 || candidate > target.score) {
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = id;
      }
      if (k + 1 - start == mblen) has_single = true;
    }
    if (!has_single) {
      Node& target = best[start + mblen];
      const double candidate = unk_score + here;
      if (target.starts_at < 0 || candidate > target.score) {
        if (!unk_id_)
          throw std::runtime_error("Unigram: the text holds a character no piece covers and the model has no unk_id");
        target.score = candidate;
        target.starts_at = static_cast<int64_t>(start);
        target.id = *unk_id_;
      }
    }
    start += mblen;
  }
  // Back from the end; consecutive unknown nodes become one piece (HF's Unigram always fuses).
  pieces.clear();
  size_t end = size;
  std::optional<uint32_t> unk_end;
  while (end > 0) {
    const Node& n = best[end];
    const size_t s = static_cast<size_t>(n.starts_at);
    if (unk_id_ && n.id == *unk_id_) {
      if (!unk_end) unk_end = static_cast<uint32_t>(end);
    } else {
      if (unk_end) {
        pieces.emplace_back(static_cast<uint32_t>(end), *unk_end);
        unk_end.reset();
      }
      pieces.emplace_back(static_cast<uint32_t>(s), static_cast<uint32_t>(end));
    }
    end = s;
  }
  if (unk_end) pieces.emplace_back(0u, *unk_end);
  std::reverse(pieces.begin(), pieces.end());
}

void Unigram::tokenize(std::string_view word, std::vector<ModelToken>& out) const {
  if (word.empty()) return;
  thread_local std::vector<std::pair<uint32_t, uint32_t>> pieces;
  viterbi(word, pieces);
  // HF's Unigram::tokenize: each piece string is looked up again; one not in the vocabulary is
  // either its UTF-8 bytes as <0xXX> pieces (all spanning the whole piece) or the unknown id
  // reported with the piece's own text.
  for (auto [b, e] : pieces) {
    const std::string_view text = word.substr(b, e - b);
    if (auto id = vocab_.find(text)) {
      out.push_back({*id, b, e});
      continue;
    }
    if (byte_fallback_) {
      const size_t first = out.size();
      bool all = true;
      for (unsigned char c : text) {
        char code[8];
        std::snprintf(code, sizeof(code), "<0x%02X>", c);
        auto id = vocab_.find(code);
        if (!id) {
          all = false;
          break;
        }
        out.push_back({*id, b, e});
      }
      if (all) continue;
      out.resize(first);
    }
    if (!unk_id_) throw std::runtime_error("Unigram: a piece is not in the vocabulary and the model has no unk_id");
    out.push_back({*unk_id_, b, e, true});
  }
}

}  // namespace headlab::core::tok
