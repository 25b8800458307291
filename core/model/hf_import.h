// Importers that map Hugging Face model folders (BERT, GPT-2, Llama, Qwen2) onto HeadLab's
// ModelConfig and weight names.
#pragma once

#include "core/model/model.h"
#include "core/model_folder.h"

#include <memory>
#include <string>

namespace headlab::core {

// The weights of a Hugging Face folder opened by open_model_folder (its `layout` is set) copied into
// a new module. Throws a one-line error naming the tensor that is missing, misshaped or not finite.
// The caller adds the tokenizer.
std::shared_ptr<Model> import_hf_model(const ModelFolder& folder);

}  // namespace headlab::core
