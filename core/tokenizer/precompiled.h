// SentencePiece's precompiled character map (the "Precompiled" normalizer of tokenizer.json, as
// T5, mT5, XLM-R, ALBERT and Marian/OPUS-MT files carry it): a darts-clone double-array trie over
// UTF-8 sequences whose values index a block of NUL-terminated replacement strings. Read and
// applied as the Rust crate spm_precompiled and HF's normalizers::Precompiled do.
// Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer/normalized_text.h"

namespace headlab::core::tok {

class PrecompiledCharsMap {
 public:
  // From the raw bytes (base64-decoded precompiled_charsmap): a little-endian u32 trie size in
  // bytes, the trie units, then the replacement strings. Throws std::runtime_error when the
  // sizes do not fit or the strings are not UTF-8 (spm_precompiled's errors).
  explicit PrecompiledCharsMap(std::string_view blob);

  // The replacement of the shortest rule that is a prefix of `chunk`, if any (spm_precompiled's
  // transform: the first common-prefix result, not the longest).
  std::optional<std::string_view> transform(std::string_view chunk) const;

  // HF's Precompiled::normalize: per extended grapheme cluster shorter than 6 bytes the cluster's
  // rule, else per char; the change tags as HF computes them, so offsets follow HF's.
  void normalize(NormalizedText& text) const;

 private:
  std::vector<uint32_t> units_;
  std::string normalized_;
};

// Decodes standard base64 (with or without padding). Throws std::runtime_error on other chars.
std::string base64_decode(std::string_view text);

}  // namespace headlab::core::tok
