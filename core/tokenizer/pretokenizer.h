// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): BertPreTokenizer, ByteLevel, Split,
// Whitespace, WhitespaceSplit, Digits, Punctuation, Metaspace and Sequence. Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/tokenizer/normalized_text.h"

namespace headlab::core::tok {

// A run of normalized chars [begin, end) of pieces[piece], or an already matched added token.
struct Split {
  uint32_t piece = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  int32_t added_id = -1;  // >= 0: an added token, final; `span` holds its original offsets
  Span span;
  std::string added_text;  // the matched text (with what lstrip/rstrip took), HF's token string
};

struct PreTokenized {
  std::deque<NormalizedText> pieces;  // deque: splits refer to pieces by index, pieces only grow
  std::vector<Split> splits;          // in text order
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every split that is not an added token by its sub-splits (empty ones dropped).
  virtual void pre_tokenize(PreTokenized& pt) const = 0;
  // True when the model must see the UTF-8 bytes of each word through GPT-2's byte-to-unicode map.
  virtual bool byte_level() const { return false; }
};

// The regex GPT-2's ByteLevel pre-tokenizer uses when use_regex is true.
extern const char* const kGpt2Pattern;

// From the "pre_tokenizer" JSON value; nullptr for JSON null. Throws std::runtime_error for an
// unknown or malformed type.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j);

// Metaspace's options, shared by the pre-tokenizer and the decoder of that name.
struct MetaspaceOptions {
  char32_t replacement = U'\u2581';
  std::string prepend_scheme = "always";  // "always", "first" or "never"
  bool split = true;
};
// Reads them from a Metaspace object; throws std::runtime_error naming `where` and the key.
MetaspaceOptions metaspace_options(const nlohmann::json& j, const std::string& where);

// The classic setups, for vocab.txt and vocab.json + merges.txt folders.
std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);

}  // namespace headlab::core::tok
