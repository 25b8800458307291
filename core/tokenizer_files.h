// The files a tokenizer consists of, copied into a model folder with the model: a model folder then
// reads the very tokenizer — and the special tokens — the model was made or run with.
#pragma once

#include <string>

namespace headlab::core {

// Copies the tokenizer `tokenizer` names into `folder` under the names a model folder is read by:
// `tokenizer` is what Tokenizer::load takes — a tokenizer.json (any name), a vocab.txt, a vocab.json
// with merges.txt (or encoder.json with vocab.bpe) beside it, or a folder holding one of these —
// and the tokenizer_config.json beside it, which decides the special tokens, goes along. From a
// model folder, the files keyed by its tokenizer's ids go too: token_counts.json (the rare-word
// ranks, `count-tokens`) and generation_config.json (the stop tokens, core/stop_tokens.h). A folder
// without tokenizer files copies nothing; a file already in `folder` is left as it is.
void copy_tokenizer_files(const std::string& tokenizer, const std::string& folder);

// Removes from `folder` what belongs to the model it holds besides its config and weights — the
// tokenizer in any format, tokenizer_config.json, token_counts.json, generation_config.json — before
// another model replaces it (init and convert with --force), so the new model is not read with the
// old one's tokenizer, rare-word ranks or stop tokens.
void remove_model_companions(const std::string& folder);

// "FOLDER has no tokenizer", saying also why when the folder holds a tokenizer in a format HeadLab
// does not read (SentencePiece's binary tokenizer.model, Mistral's tekken.json), and how to get one it
// reads. For the messages of everything that needs text turned into ids.
std::string no_tokenizer(const std::string& folder);

}  // namespace headlab::core
