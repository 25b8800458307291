// The files a tokenizer consists of, copied into a model folder with the model: a model folder then
// reads the very tokenizer — and the special tokens — the model was made or run with.
#pragma once

#include <string>

namespace headlab::core {

// Copies the tokenizer `tokenizer` names into `folder` under the names a model folder is read by:
// `tokenizer` is what Tokenizer::load takes — a tokenizer.json (any name), a vocab.txt, a vocab.json
// with merges.txt (or encoder.json with vocab.bpe) beside it, or a folder holding one of these —
// and the tokenizer_config.json beside it, which decides the special tokens, goes along. A folder
// without tokenizer files copies nothing; a file already in `folder` is left as it is.
void copy_tokenizer_files(const std::string& tokenizer, const std::string& folder);

// "FOLDER has no tokenizer", saying also why when the folder holds a tokenizer in a format HeadLab
// does not read (SentencePiece's binary tokenizer.model, Mistral's tekken.json), and how to get one it
// reads. For the messages of everything that needs text turned into ids.
std::string no_tokenizer(const std::string& folder);

}  // namespace headlab::core
