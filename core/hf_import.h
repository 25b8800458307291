// Importers that map Hugging Face model folders (BERT, GPT-2, Llama, Qwen2) onto HeadLab's
// ModelConfig and weight names.
#pragma once

#include "core/model.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>

namespace headlab::core {

// `config` is the folder's parsed config.json (it has an "architectures" field). Throws a
// one-line error naming what is unsupported or which tensor is missing/misshaped.
std::shared_ptr<Model> import_hf_model(const std::string& folder, const nlohmann::json& config);

}  // namespace headlab::core
