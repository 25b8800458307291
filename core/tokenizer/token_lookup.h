// One token named by a person: an integer id, a vocabulary entry as the vocabulary spells it
// (e.g. "Ġcat"), or a text the tokenizer turns into exactly one token (e.g. " cat"). The answer and
// wrong tokens of `headlab patch`, `run --dla` and the window's Patching view are read this way.
#pragma once

#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <string>

namespace headlab::core {

// The id `text` names; throws std::invalid_argument saying why not: an id outside [0, vocab), no
// tokenizer to read a token with, or a text of several tokens (listing them).
int64_t token_id(const Tokenizer* tokenizer, int64_t vocab, const std::string& text);

}  // namespace headlab::core
