// Normalizers of tokenizer.json ("normalizer"): BertNormalizer, NFC/NFD/NFKC/NFKD, Lowercase,
// StripAccents, Strip, Prepend, Replace, Precompiled (SentencePiece's charsmap) and Sequence.
// Private to core/tokenizer/.
#pragma once

#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "core/tokenizer/normalized_text.h"

namespace headlab::core::tok {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(NormalizedText& text) const = 0;
};

// BERT's cleaning, CJK spacing, accent stripping and lowercasing, in that order.
struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // HF's null means "same as lowercase"; resolved by the caller
  bool lowercase = true;
};
std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& options);

// From the "normalizer" JSON value; nullptr for JSON null. Throws std::runtime_error for an
// unknown or malformed type.
std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j);

}  // namespace headlab::core::tok
