// Model folders read without their weights' values (core/model_folder.h).
#include "core/model_folder.h"

#include "core/json_file.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace headlab::core {

namespace fs = std::filesystem;
using nlohmann::json;

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // the safetensors reader has bounded every product by 2^62
  return n;
}

void WeightFiles::add(std::unique_ptr<SafetensorsFile> file) {
  for (const auto& info : file->tensors()) {
    auto [it, inserted] = entries_.emplace(info.name, Entry{file.get(), &info});
    if (!inserted)
      throw std::runtime_error(file->path() + ": tensor '" + info.name + "' is also in " + it->second.file->path());
  }
  files_.push_back(std::move(file));
}

int64_t WeightFiles::values() const {
  int64_t held = 0;
  for (const auto& [name, entry] : entries_) held += numel_of(entry.info->shape);
  return held;
}

int64_t WeightFiles::bytes() const {
  int64_t total = 0;
  for (const auto& file : files_) total += file->bytes();
  return total;
}

std::shared_ptr<const WeightFiles> WeightFiles::open_file(const std::string& path) {
  auto files = std::make_shared<WeightFiles>();
  files->source_ = fs::path(path).filename().string();
  files->add(std::make_unique<SafetensorsFile>(SafetensorsFile::open(path)));
  return files;
}

std::shared_ptr<const WeightFiles> WeightFiles::open_folder(const std::string& folder) {
  const fs::path dir(folder);
  auto files = std::make_shared<WeightFiles>();
  const fs::path single = dir / "model.safetensors";
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {  // as transformers: a single file wins over an index
    files->source_ = "model.safetensors";
    files->add(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    return files;
  }
  if (!fs::exists(index_path)) {
    for (const char* legacy : {"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index"})
      if (fs::exists(dir / legacy))
        throw std::runtime_error(dir.string() + ": only safetensors weights are supported, found " + legacy +
                                 " (convert it to model.safetensors, e.g. with transformers' save_pretrained)");
    throw std::runtime_error(dir.string() + ": no model.safetensors or model.safetensors.index.json");
  }
  files->source_ = "model.safetensors.index.json";
  const std::string where = index_path.string();
  const json index = read_json_file(where);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw std::runtime_error(where + ": no 'weight_map' object");
  std::map<std::string, std::vector<std::string>> by_shard;  // shard file → tensor names it should hold
  for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
    if (!it.value().is_string()) throw std::runtime_error(where + ": weight_map['" + it.key() + "'] is not a string");
    const std::string shard = it.value().get<std::string>();
    // Shards are plain file names next to the index; anything else is a damaged (or hostile) index.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      throw std::runtime_error(where + ": weight_map['" + it.key() + "'] names '" + shard + "', not a file in the folder");
    by_shard[shard].push_back(it.key());
  }
  if (by_shard.empty()) throw std::runtime_error(where + ": weight_map is empty");
  for (const auto& [shard, names] : by_shard) {
    const fs::path path = dir / shard;
    if (!fs::exists(path))
      throw std::runtime_error(where + ": shard '" + shard + "' does not exist (it holds '" + names.front() + "'" +
                               (names.size() > 1 ? " and " + std::to_string(names.size() - 1) + " more tensors" : "") + ")");
    auto file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path.string()));
    for (const auto& name : names)
      if (!file->contains(name))
        throw std::runtime_error(path.string() + ": tensor '" + name + "' (listed in model.safetensors.index.json) is missing");
    files->add(std::move(file));
  }
  return files;
}

namespace {

std::string folder_name(const std::string& folder) {
  fs::path path = fs::path(folder).lexically_normal();
  std::string name = path.filename().string();
  if (name.empty()) name = path.parent_path().filename().string();
  return name.empty() ? "model" : name;
}

// A Hugging Face folder: config.json (`raw`) through the family mapping, its weight files' headers.
ModelFolder open_hf_folder(const std::string& folder, const json& raw) {
  const fs::path dir(folder);
  ModelFolder result;
  result.folder = folder;
  result.config_path = (dir / "config.json").string();
  const std::string& config_path = result.config_path;
  const json& architectures = raw["architectures"];
  if (!architectures.is_array() || architectures.empty() || !architectures[0].is_string())
    throw std::runtime_error(config_path + ": 'architectures' must be a non-empty list of names");
  const std::string arch = architectures[0].get<std::string>();
  const hf::Family* row = hf::family_of(arch);
  if (!row)
    throw std::runtime_error(config_path + ": Hugging Face architecture '" + arch +
                             "' is not supported (HeadLab imports " + hf::supported_architectures() + ")");
  const std::string family = row->name;
  result.architecture = arch;
  result.family = family;

  const hf::HfConfig config(raw, config_path);
  result.weights = WeightFiles::open_folder(folder);
  const WeightFiles& weights = *result.weights;
  const hf::HasTensor has = [&](const std::string& name) { return weights.find(name) != nullptr; };
  const hf::TensorDType dtype_of = [&](const std::string& name) -> std::string {
    const WeightFiles::Entry* entry = weights.find(name);
    return entry ? dtype_name(entry->info->dtype) : "";
  };
  auto layout = std::make_shared<hf::Layout>(row->layout(hf::FamilyInput{config, arch, family, has, dtype_of}));
  layout->config.name = folder_name(folder) + (layout->note.empty() ? "" : " [" + layout->note + "]");
  result.config = layout->config;
  try {
    result.config.validate();
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path + " (" + arch + "): " + e.what());
  }
  // Nothing is allocated for a config the weights cannot fill. Every native parameter has one
  // source tensor; the margin covers sources read twice (tied or shared weights).
  const int64_t held = weights.values();
  if (double(result.config.parameter_count()) > 2.0 * double(held) + double(1 << 20))
    throw std::runtime_error(config_path + " (" + arch + ") describes " +
                             std::to_string(result.config.parameter_count()) + " parameters but " +
                             weights.source() + " holds " + std::to_string(held) +
                             " values: config and weights disagree");
  auto embedding = layout->sources.find("tokens.weight");
  if (embedding != layout->sources.end())
    if (const WeightFiles::Entry* entry = weights.find(embedding->second.name))
      result.weights_dtype = dtype_name(entry->info->dtype);
  result.layout = std::move(layout);
  return result;
}

ModelFolder open_native_folder(const std::string& folder, const json& raw) {
  const fs::path dir(folder);
  ModelFolder result;
  result.folder = folder;
  result.config_path = (dir / "config.json").string();
  const std::string& config_path = result.config_path;
  try {
    result.config = model_config_from_json(raw);
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path + ": " + e.what());
  }
  const fs::path weights_path = dir / "model.safetensors";
  if (!fs::exists(weights_path)) throw std::runtime_error(folder + ": no model.safetensors");
  result.weights = WeightFiles::open_file(weights_path.string());
  const auto& tensors = result.weights->files().front()->tensors();
  if (tensors.empty()) throw std::runtime_error(weights_path.string() + ": holds no tensors");
  result.weights_dtype = dtype_name(tensors.front().dtype);
  // Nothing is allocated for a config the file cannot fill (a damaged layer count or width would
  // otherwise allocate gigabytes before the first missing tensor is noticed).
  try {
    result.config.validate();
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path + ": " + e.what());
  }
  const int64_t held = result.weights->values();
  if (result.config.parameter_count() > held)
    throw std::runtime_error(config_path + " describes " + std::to_string(result.config.parameter_count()) +
                             " parameters but " + weights_path.string() + " holds " + std::to_string(held) +
                             " values: config and weights disagree");
  return result;
}

ModelFolder open_model_folder_unguarded(const std::string& folder) {
  const fs::path dir(folder);
  if (!fs::is_directory(dir)) throw std::runtime_error(folder + ": not a folder");
  const fs::path config_path = dir / "config.json";
  if (!fs::exists(config_path)) throw std::runtime_error(folder + ": no config.json");
  const json raw = read_json_file(config_path.string());
  if (raw.is_object() && raw.contains("architectures")) return open_hf_folder(folder, raw);
  // A Hugging Face config without its class: which head the weights carry is not said, so ask for it
  // rather than guess (transformers writes the list whenever it saves a model).
  if (raw.is_object() && !raw.contains("format") && raw.contains("model_type") && raw["model_type"].is_string()) {
    const std::string type = raw["model_type"].get<std::string>();
    std::string classes;
    for (const auto& f : hf::families())
      if (type == f.name)
        for (const char* a : f.architectures) classes += std::string(classes.empty() ? "" : ", ") + a;
    throw std::runtime_error(config_path.string() + ": a Hugging Face config (model_type '" + type +
                             "') without 'architectures': add the class the weights were saved from, e.g. " +
                             "\"architectures\": [\"" + (classes.empty() ? "LlamaForCausalLM" : classes.substr(0, classes.find(','))) +
                             "\"]" + (classes.empty() ? " (HeadLab imports " + hf::supported_architectures() + ")"
                                                       : " (" + type + ": " + classes + ")"));
  }
  return open_native_folder(folder, raw);
}

}  // namespace

ModelFolder open_model_folder(const std::string& folder) {
  // File system failures (a symbolic link loop, a file that cannot be read) as one line naming the
  // path, not the library's "filesystem error: status: …".
  try {
    return open_model_folder_unguarded(folder);
  } catch (const fs::filesystem_error& e) {
    throw std::runtime_error((e.path1().empty() ? folder : e.path1().string()) + ": " + e.code().message());
  }
}

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

}  // namespace headlab::core
