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

// A vocabulary string as a person reads it, for labels (the vocabulary's own spelling stays what
// the engine reports and exports). Byte-level BPE (GPT-2, Llama-3, Qwen) spells each byte as a
// character; when every character of `token` is such a stand-in and the bytes are well-formed text
// they are shown as that text: "ĠâĢľ" reads "·“", "cafÃ©" reads "café". A space reads "·" (also
// SentencePiece's "▁"), a newline "↵", a tab "⇥". Anything else keeps its spelling: a WordPiece "é"
// or "ć" (whose stand-in bytes are no text, or a control byte), and a byte-level piece of a
// character, such as half an emoji, whose bytes alone are no text either; in those, and with
// `decode_bytes` false, only the marks change: byte-level's "Ġ", "Ċ" and "ĉ" read "·", "↵", "⇥".
std::string readable_token(const std::string& token, bool decode_bytes = true);

// The id `text` names; throws std::invalid_argument saying why not: an id outside [0, vocab), no
// tokenizer to read a token with, or a text of several tokens (listing them).
int64_t token_id(const Tokenizer* tokenizer, int64_t vocab, const std::string& text);

}  // namespace headlab::core
