// Where a generation stops: the end-of-sequence ids of a model folder, read as transformers'
// generate() reads them. One rule for `headlab generate` and the window's Generate view.
// Torch-free.
#pragma once

#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::core {

// generation_config.json's eos_token_id (a number or a list: Llama 3.1 Instruct stops at three
// ids), else config.json's when it is a Hugging Face config; a folder that names none (HeadLab's
// own models, an import without either) stops at its tokenizer's end token, an encoder-decoder also
// at [SEP]. Ids outside [0, vocab) are left out. Throws std::runtime_error naming the file when one
// is not valid JSON or its eos_token_id is neither a number nor a list of numbers.
std::vector<int64_t> generation_stop_ids(const std::string& folder, const Tokenizer* tokenizer, bool encoder_decoder,
                                         int64_t vocab);

}  // namespace headlab::core
