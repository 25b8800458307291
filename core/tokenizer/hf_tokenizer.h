// The tokenizer pipeline of Hugging Face `tokenizers`, specialised to what HeadLab reads:
// added tokens -> normalizer -> pre-tokenizer -> model (WordPiece / BPE / WordLevel / Unigram) -> post-processor, and
// the decoder chain for decode(). Private to core/tokenizer/; built by tokenizer_load.cpp.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/added_vocabulary.h"
#include "core/tokenizer/model.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/pretokenizer.h"
#include "core/tokenizer/regex.h"

namespace headlab::core::tok {

// One element of a TemplateProcessing "single" template: the sequence, or special token ids.
struct TemplatePiece {
  bool sequence = false;
  std::vector<int32_t> ids;
  std::vector<std::string> tokens;
};

struct PostStep {
  enum class Kind { ByteLevelTrim, Template } kind = Kind::Template;
  bool add_prefix_space = false;       // ByteLevelTrim: keep a first token's single added space
  std::vector<TemplatePiece> single;   // Template (BertProcessing / RobertaProcessing map here too)
};

struct DecodeStep {
  enum class Kind { ByteLevel, WordPiece, Fuse, Metaspace, Replace, ByteFallback, Strip } kind = Kind::ByteLevel;
  std::string prefix = "##";  // WordPiece
  bool cleanup = true;        // WordPiece
  char32_t replacement = U'\u2581';  // Metaspace
  bool prepend = true;                // Metaspace: drop the replacement from the first token
  std::shared_ptr<const Regex> pattern;  // Replace
  std::string content;                   // Replace: the replacement text
  char32_t strip_char = U' ';            // Strip
  size_t strip_start = 0, strip_stop = 0;  // Strip: at most this many from each end
};

struct SpecialIds {
  std::optional<int64_t> mask, pad, unk, cls, sep, bos, eos;
};

struct TokenizerParts {
  std::string source;  // file or folder it came from, for messages
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::string kind;  // "wordpiece", "bpe", "wordlevel" or "unigram"
  AddedVocabulary added;
  std::vector<PostStep> post;
  bool has_decoder = false;  // without one, decode joins tokens with spaces (HF's default)
  std::vector<DecodeStep> decoders;
  SpecialIds specials;
};

class HfTokenizer : public Tokenizer {
 public:
  explicit HfTokenizer(TokenizerParts parts);

  std::string kind() const override { return p_.kind; }
  Encoding encode(std::string_view utf8, bool add_special_tokens = false) const override;
  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens = false) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  std::optional<int64_t> token_to_id(std::string_view token) const override;
  std::string id_to_token(int64_t id) const override;
  std::optional<int64_t> mask_id() const override { return p_.specials.mask; }
  std::optional<int64_t> pad_id() const override { return p_.specials.pad; }
  std::optional<int64_t> unk_id() const override { return p_.specials.unk; }
  std::optional<int64_t> cls_id() const override { return p_.specials.cls; }
  std::optional<int64_t> sep_id() const override { return p_.specials.sep; }
  std::optional<int64_t> bos_id() const override { return p_.specials.bos; }
  std::optional<int64_t> eos_id() const override { return p_.specials.eos; }
  bool is_special(int64_t id) const override { return p_.added.is_special(id); }
  std::vector<AddedTokenInfo> added_tokens() const override;

 private:
  void post_process(Encoding& e, bool add_special_tokens) const;

  TokenizerParts p_;
  bool byte_level_ = false;
  int64_t vocab_size_ = 0;
};

}  // namespace headlab::core::tok
