// One token named by a person: an integer id, a vocabulary entry as the vocabulary spells it
// (e.g. "Ġcat"), or a text the tokenizer turns into exactly one token (e.g. " cat"). The answer and
// wrong tokens of `headlab patch`, `run --dla` and the window's Patching view are read this way.
#pragma once

#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <string>

namespace headlab::core {

// How an id is shown: the tokenizer's spelling of it, or "#id" where there is none — no tokenizer,
// or one of the embedding rows many models have past their tokenizer's vocabulary (padding rows:
// Pythia's 50,304 against 50,277 tokens, Qwen's 151,936 against 151,669), which a model can still
// predict. `headlab generate --ids` reads "#id" back.
std::string token_name(const Tokenizer* tokenizer, int64_t id);

// The id `text` names; throws std::invalid_argument saying why not: an id outside [0, vocab), no
// tokenizer to read a token with, or a text of several tokens (listing them).
int64_t token_id(const Tokenizer* tokenizer, int64_t vocab, const std::string& text);

}  // namespace headlab::core
