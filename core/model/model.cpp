#include "core/model/model.h"

#include "core/atomic_file.h"
#include "core/model/hf_import.h"
#include "core/model/safetensors_torch.h"
#include "core/tokenizer_files.h"
#include "core/weights_policy.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace headlab::core {

namespace fs = std::filesystem;

std::shared_ptr<Model> make_random_model(const ModelConfig& config, uint64_t seed) {
  auto model = std::make_shared<Model>();
  model->config = config;
  model->module = Transformer(config);
  initialize_weights(model->module, seed);
  model->module->eval();
  return model;
}

void require_finite(const torch::Tensor& weights, const std::string& file, const std::string& name) {
  // In slices of 1M values, so the check's temporaries stay small next to an 8B model's 2 GB tables.
  constexpr int64_t kSlice = 1 << 20;
  const torch::Tensor flat = weights.reshape({-1});
  bool finite = true;
  for (int64_t i = 0; i < flat.numel() && finite; i += kSlice)
    finite = torch::isfinite(flat.narrow(0, i, std::min(kSlice, flat.numel() - i))).all().item<bool>();
  if (!finite) {
    const int64_t bad = weights.numel() - torch::isfinite(weights).sum().item<int64_t>();
    throw std::runtime_error(file + ": tensor '" + name + "' holds " + std::to_string(bad) +
                             " NaN or infinite value" + (bad == 1 ? "" : "s"));
  }
}

bool keeps_stored_view(const std::string& name, const torch::Tensor& param) {
  auto ends_with = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  // Position and token-type tables stay float32: they are small, and LRP differentiates by them.
  if (ends_with("positions.weight") || ends_with("token_types.weight")) return false;
  return param.dim() == 2 && (name == "head_weight" || ends_with(".weight"));
}

bool mappable(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

bool scan_mapped_values(int64_t mapped_total) { return mapped_total <= kFiniteScanBytes; }

void own_weights(Model& model) {
  torch::NoGradGuard no_grad;
  for (auto& item : model.module->named_parameters()) {
    torch::Tensor& param = item.value();
    if (!keeps_stored_view(item.key(), param)) continue;
    param.set_data(param.to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true));
    param.requires_grad_(true);
  }
  model.mapped_bytes = 0;
}

int64_t load_native_weights(Transformer& module, const SafetensorsFile& file,
                            const std::function<bool(const std::string&)>& may_be_missing,
                            const std::function<bool(const std::string&)>& loaded_elsewhere, Residency residency) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  const bool scan = scan_mapped_values(file.bytes());
  int64_t mapped = 0;
  for (auto& item : module->named_parameters()) {
    const std::string& name = item.key();
    if (loaded_elsewhere && loaded_elsewhere(name)) {
      used.insert(name);
      continue;
    }
    const TensorInfo* info = file.find(name);
    if (!info && may_be_missing && may_be_missing(name)) continue;
    if (!info) throw std::runtime_error(file.path() + ": tensor '" + name + "' is missing");
    if (std::vector<int64_t>(item.value().sizes().begin(), item.value().sizes().end()) != info->shape) {
      std::string expected = torch::str(item.value().sizes()), got = "[";
      for (size_t i = 0; i < info->shape.size(); ++i) got += (i ? ", " : "") + std::to_string(info->shape[i]);
      throw std::runtime_error(file.path() + ": tensor '" + name + "' has shape " + got + "], config expects " +
                               expected);
    }
    // A weight is a floating-point number: an integer dtype is a damaged header or another kind of
    // file, whose bytes read as numbers would give other logits without a word.
    if (info->dtype != DType::F32 && info->dtype != DType::F16 && info->dtype != DType::BF16 && info->dtype != DType::F64)
      throw std::runtime_error(file.path() + ": tensor '" + name + "' has dtype " + dtype_name(info->dtype) +
                               ", expected F32, F16, BF16 or F64");
    torch::Tensor& param = item.value();
    if (residency == Residency::Mapped && mappable(info->dtype) && keeps_stored_view(name, param)) {
      // A zero-copy view of the mapping in the stored dtype (core/model/linear.h computes with it).
      torch::Tensor view = load_tensor(file, name, to_scalar_type(info->dtype));
      if (scan) require_finite(view, file.path(), name);
      param.set_data(view);
      param.requires_grad_(false);
      mapped += static_cast<int64_t>(info->end - info->begin);
    } else {
      with_storage(param);
      param.copy_(load_tensor(file, name, torch::kFloat32));
      require_finite(param, file.path(), name);
    }
    used.insert(name);
  }
  for (const auto& info : file.tensors())
    if (!used.count(info.name))
      throw std::runtime_error(file.path() + ": unexpected tensor '" + info.name +
                               "' (config.json and model.safetensors disagree)");
  return mapped;
}

std::shared_ptr<Model> load_model(const std::string& folder) {
  const ModelFolder opened = open_model_folder(folder);
  std::shared_ptr<Model> model;
  if (opened.layout) {
    model = import_hf_model(opened);
  } else {
    model = std::make_shared<Model>();
    model->folder = folder;
    model->config = opened.config;
    model->weights_dtype = opened.weights_dtype;
    {
      WeightsArriveLater unwritten;  // every weight is mapped or copied below
      model->module = Transformer(model->config);
    }
    model->mapped_bytes = load_native_weights(model->module, *opened.weights->files().front(), {}, {}, Residency::Mapped);
    model->module->eval();
  }
  // Small folders are copied to float32: faster to compute with (core/weights_policy.h).
  if (!keep_weights_mapped(opened.weights->values())) own_weights(*model);
  model->tokenizer = load_folder_tokenizer(folder);
  return model;
}

void save_model(const Model& model, const std::string& folder, const std::string& dtype,
                const std::string& tokenizer_json) {
  fs::create_directories(folder);
  // config.json last: a folder is loadable only once it is complete, so a crash while the weights
  // are written never leaves a folder that looks whole (each file is replaced atomically). Over
  // another model's folder its config goes first, so old config and new weights never meet.
  const std::string config_path = (fs::path(folder) / "config.json").string();
  const std::string config_text = to_json(model.config).dump(2) + "\n";
  if (fs::exists(config_path) && read_file_bytes(config_path) != config_text && !fs::remove(config_path))
    throw std::runtime_error(config_path + ": cannot remove the previous model's config");
  save_safetensors((fs::path(folder) / "model.safetensors").string(), named_weights(model.module),
                   dtype_from_name(dtype), {{"format", "pt"}, {"producer", "headlab"}});
  copy_tokenizer_files(tokenizer_json, folder);  // with its tokenizer_config.json, in any format the loader reads
  write_file_atomic(config_path, config_text);
}

}  // namespace headlab::core
