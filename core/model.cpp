#include "core/model.h"

#include "core/atomic_file.h"
#include "core/hf_import.h"
#include "core/safetensors.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
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

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the safetensors reader has bounded every product by 2^62
  return n;
}

void require_finite(const torch::Tensor& weights, const std::string& file, const std::string& name) {
  if (weights.numel() > 0 && !torch::isfinite(weights).all().item<bool>()) {
    const int64_t bad = weights.numel() - torch::isfinite(weights).sum().item<int64_t>();
    throw std::runtime_error(file + ": tensor '" + name + "' holds " + std::to_string(bad) +
                             " NaN or infinite value" + (bad == 1 ? "" : "s"));
  }
}

void load_native_weights(Transformer& module, const SafetensorsFile& file,
                         const std::function<bool(const std::string&)>& may_be_missing) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : module->named_parameters()) {
    const std::string& name = item.key();
    const TensorInfo* info = file.find(name);
    if (!info && may_be_missing && may_be_missing(name)) continue;
    if (!info) throw std::runtime_error(file.path() + ": tensor '" + name + "' is missing");
    if (std::vector<int64_t>(item.value().sizes().begin(), item.value().sizes().end()) != info->shape) {
      std::string expected = torch::str(item.value().sizes()), got = "[";
      for (size_t i = 0; i < info->shape.size(); ++i) got += (i ? ", " : "") + std::to_string(info->shape[i]);
      throw std::runtime_error(file.path() + ": tensor '" + name + "' has shape " + got + "], config expects " +
                               expected);
    }
    item.value().copy_(file.load(name, torch::kFloat32));
    require_finite(item.value(), file.path(), name);
    used.insert(name);
  }
  for (const auto& info : file.tensors())
    if (!used.count(info.name))
      throw std::runtime_error(file.path() + ": unexpected tensor '" + info.name +
                               "' (config.json and model.safetensors disagree)");
}

namespace {
std::shared_ptr<Model> load_model_unguarded(const std::string& folder);
}

std::shared_ptr<Model> load_model(const std::string& folder) {
  // File system failures (a symbolic link loop, a file that cannot be read) as one line naming the
  // path, not the library's "filesystem error: status: …".
  try {
    return load_model_unguarded(folder);
  } catch (const fs::filesystem_error& e) {
    throw std::runtime_error((e.path1().empty() ? folder : e.path1().string()) + ": " + e.code().message());
  }
}

namespace {

std::shared_ptr<Model> load_model_unguarded(const std::string& folder) {
  const fs::path dir(folder);
  if (!fs::is_directory(dir)) throw std::runtime_error(folder + ": not a folder");
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) throw std::runtime_error(folder + ": no config.json");
  nlohmann::json raw;
  {
    std::ifstream in(config_path);
    try {
      raw = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(config_path.string() + ": not valid JSON (" + e.what() + ")");
    }
  }
  if (raw.is_object() && raw.contains("architectures")) return import_hf_model(folder, raw);

  auto model = std::make_shared<Model>();
  model->folder = folder;
  try {
    model->config = model_config_from_json(raw);
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path.string() + ": " + e.what());
  }
  const fs::path weights_path = dir / "model.safetensors";
  if (!fs::exists(weights_path)) throw std::runtime_error(folder + ": no model.safetensors");
  auto file = SafetensorsFile::open(weights_path.string());
  if (file.tensors().empty()) throw std::runtime_error(weights_path.string() + ": holds no tensors");
  model->weights_dtype = dtype_name(file.tensors().front().dtype);
  // Nothing is allocated for a config the file cannot fill (a damaged layer count or width would
  // otherwise allocate gigabytes before the first missing tensor is noticed).
  try {
    model->config.validate();
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path.string() + ": " + e.what());
  }
  int64_t held = 0;
  for (const auto& info : file.tensors()) held += numel_of(info.shape);
  if (model->config.parameter_count() > held)
    throw std::runtime_error(config_path.string() + " describes " + std::to_string(model->config.parameter_count()) +
                             " parameters but " + weights_path.string() + " holds " + std::to_string(held) +
                             " values: config and weights disagree");
  model->module = Transformer(model->config);
  load_native_weights(model->module, file);
  model->module->eval();
  model->tokenizer = load_folder_tokenizer(folder);
  return model;
}

}  // namespace

std::shared_ptr<const Tokenizer> load_folder_tokenizer(const std::string& folder) {
  for (const char* name : {"tokenizer.json", "vocab.txt", "vocab.json"}) {
    if (!fs::exists(fs::path(folder) / name)) continue;
    try {
      return Tokenizer::load(folder);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("loading tokenizer: ") + e.what());
    }
  }
  return nullptr;
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
  if (!tokenizer_json.empty()) {
    const auto target = fs::path(folder) / "tokenizer.json";
    if (fs::absolute(tokenizer_json) != fs::absolute(target)) copy_file_atomic(tokenizer_json, target.string());
  }
  write_file_atomic(config_path, config_text);
}

}  // namespace headlab::core
