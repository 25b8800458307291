// Whether a tokenizer frames a sentence with special tokens — what encode(text, true) adds through
// its post-processor (BERT's [CLS] … [SEP]; nothing for GPT-2's byte-level BPE or a tokenizer saved
// without one). The trainer and the head measurements frame their inputs the same way, so a model
// is trained, measured and run on the same kind of input.
#pragma once

#include "core/tokenizer.h"

namespace headlab::core {

inline bool frames_sentences(const Tokenizer& tokenizer) {
  const char* probe = "a";
  return tokenizer.encode(probe, true).ids.size() > tokenizer.encode(probe, false).ids.size();
}

}  // namespace headlab::core
