// Tokenizers in the Hugging Face `tokenizer.json` format (and the older vocab.txt /
// vocab.json + merges.txt files): WordPiece (BERT), byte-level BPE (GPT-2, Llama-3, Qwen2/3),
// WordLevel, and SentencePiece's models as converted to tokenizer.json: Unigram with its
// precompiled charsmap (T5, Marian/OPUS-MT) and byte-fallback BPE (Llama-2, Mistral, Gemma).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headlab::core {

// One entry of the tokenizer's added vocabulary (tokenizer.json "added_tokens").
struct AddedTokenInfo {
  std::string content;
  int64_t id = 0;
  bool special = false;
};

struct Encoding {
  std::vector<int64_t> ids;
  std::vector<std::string> tokens;                // the vocabulary strings (a Unigram unknown: its text, as HF)
  std::vector<std::pair<int64_t, int64_t>> offsets;  // [start, end) in Unicode code points of the input
  std::vector<bool> special;                      // true for added special tokens ([CLS], <|endoftext|>, …)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Loads a tokenizer.json file, or a folder holding tokenizer.json, vocab.txt, or
  // vocab.json + merges.txt. Throws std::runtime_error naming the file and the defect.
  static std::shared_ptr<const Tokenizer> load(const std::string& path);

  // Builds a tokenizer from the text of a tokenizer.json; `origin` names it in error messages.
  static std::shared_ptr<const Tokenizer> from_json(std::string_view json_text,
                                                    const std::string& origin = "tokenizer.json");

  // "wordpiece", "bpe", "wordlevel" or "unigram".
  virtual std::string kind() const = 0;
  // Matches Hugging Face `tokenizers` (ids, tokens, offsets). Ill-formed UTF-8 is read as if each
  // bad sequence were U+FFFD. add_special_tokens adds the post-processor's tokens ([CLS] ... [SEP],
  // a BOS), with offsets (0, 0). Thread-safe.
  virtual Encoding encode(std::string_view utf8, bool add_special_tokens = false) const = 0;
  // Ids back to text through the tokenizer's decoder (byte-level bytes -> UTF-8, or WordPiece's
  // "##" joining with HF's cleanup). Unknown ids are skipped.
  virtual std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const = 0;
  virtual int64_t vocab_size() const = 0;  // including added tokens: one past the largest id
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  virtual std::string id_to_token(int64_t id) const = 0;  // "" for an id not in the vocabulary

  // Well-known special tokens, when the tokenizer has them.
  virtual std::optional<int64_t> mask_id() const = 0;  // [MASK] / <mask>
  virtual std::optional<int64_t> pad_id() const = 0;
  virtual std::optional<int64_t> unk_id() const = 0;
  // From tokenizer_config.json beside the file when present, else the conventional names
  // ([CLS]/<s>, [SEP]/</s>, <|begin_of_text|>, <|endoftext|>, ...) and the post-processor.
  virtual std::optional<int64_t> cls_id() const { return std::nullopt; }
  virtual std::optional<int64_t> sep_id() const { return std::nullopt; }
  virtual std::optional<int64_t> bos_id() const { return std::nullopt; }
  virtual std::optional<int64_t> eos_id() const { return std::nullopt; }

  // True for added tokens flagged special ([CLS], <|im_start|>, ...).
  virtual bool is_special(int64_t id) const { return false; }
  // The added vocabulary, by id.
  virtual std::vector<AddedTokenInfo> added_tokens() const { return {}; }
};

}  // namespace headlab::core
