// Hugging Face folder → Model: config.json through the family mapping (core/hf_families.cpp), then
// the weights tensor by tensor from model.safetensors or the shards of model.safetensors.index.json.
//
// Memory: the files are memory-mapped; each tensor is copied (converted from F16/BF16 as it goes)
// straight into the module's parameter, in slices of at most kChunkBytes, and the slice's pages are
// dropped from the mapping right after (madvise DONTNEED: the pages are clean, private and never
// written, so this only unmaps them). Peak RSS is ≈ the float32 parameters plus one slice.
#include "core/hf_import.h"

#include "core/hf_families.h"
#include "core/safetensors.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

namespace headlab::core {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kChunkBytes = 16 << 20;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Every safetensors file of the folder, searchable by tensor name.
class Checkpoint {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };

  static Checkpoint open(const fs::path& dir);

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  // "model.safetensors" or "model.safetensors.index.json", for messages.
  const std::string& source() const { return source_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  void add(std::unique_ptr<SafetensorsFile> file) {
    for (const auto& info : file->tensors()) {
      auto [it, inserted] = entries_.emplace(info.name, Entry{file.get(), &info});
      if (!inserted)
        throw std::runtime_error(file->path() + ": tensor '" + info.name + "' is also in " + it->second.file->path());
    }
    files_.push_back(std::move(file));
  }

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> entries_;
  std::string source_;
};

Checkpoint Checkpoint::open(const fs::path& dir) {
  Checkpoint checkpoint;
  const fs::path single = dir / "model.safetensors";
  const fs::path index_path = dir / "model.safetensors.index.json";
  if (fs::exists(single)) {  // as transformers: a single file wins over an index
    checkpoint.source_ = "model.safetensors";
    checkpoint.add(std::make_unique<SafetensorsFile>(SafetensorsFile::open(single.string())));
    return checkpoint;
  }
  if (!fs::exists(index_path)) {
    for (const char* legacy : {"pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index"})
      if (fs::exists(dir / legacy))
        throw std::runtime_error(dir.string() + ": only safetensors weights are supported, found " + legacy +
                                 " (convert it to model.safetensors, e.g. with transformers' save_pretrained)");
    throw std::runtime_error(dir.string() + ": no model.safetensors or model.safetensors.index.json");
  }
  checkpoint.source_ = "model.safetensors.index.json";
  const std::string where = index_path.string();
  json index;
  {
    std::ifstream in(index_path);
    try {
      index = json::parse(in);
    } catch (const json::parse_error& e) {
      throw std::runtime_error(where + ": not valid JSON (" + e.what() + ")");
    }
  }
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
    if (!fs::exists(path)) throw std::runtime_error(where + ": shard '" + shard + "' does not exist");
    auto file = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path.string()));
    for (const auto& name : names)
      if (!file->contains(name))
        throw std::runtime_error(path.string() + ": tensor '" + name + "' (listed in model.safetensors.index.json) is missing");
    checkpoint.add(std::move(file));
  }
  return checkpoint;
}

// Drops the mapping's pages for bytes [offset, offset + size) of a tensor (rounded out to pages:
// neighbouring pages are clean too and simply fault back in if read again).
void release_pages(const SafetensorsFile& file, const TensorInfo& info, uint64_t offset, uint64_t size) {
  if (size == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(file.data(info)) + offset;
  const uintptr_t first = begin & ~(page - 1);
  const uintptr_t last = (begin + size + page - 1) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // advisory: failure is harmless
}

bool is_float(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F64;
}

// parameter ← the source tensor (narrowed, transposed, converted to float32).
void copy_into(torch::Tensor& param, const Checkpoint::Entry& entry, const hf::TensorSource& source) {
  const TensorInfo& info = *entry.info;
  const SafetensorsFile& file = *entry.file;
  // In its stored dtype: a zero-copy view of the mapping (copy_ converts as it copies).
  torch::Tensor raw = file.load(info.name, to_scalar_type(info.dtype));
  const uint64_t bytes = info.end - info.begin;
  if (source.slice_dim >= 0) raw = raw.narrow(source.slice_dim, source.slice_begin, source.slice_count);
  if (source.transpose) raw = raw.t();
  if (source.slice_dim < 0 && !source.transpose && raw.dim() >= 1 && raw.size(0) > 0) {
    // Row slices, so a large embedding never has all its pages mapped at once.
    const int64_t rows = raw.size(0);
    const int64_t row_bytes = static_cast<int64_t>(bytes) / rows;
    const int64_t step = std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, row_bytes));
    for (int64_t r = 0; r < rows; r += step) {
      const int64_t n = std::min(step, rows - r);
      param.narrow(0, r, n).copy_(raw.narrow(0, r, n));
      release_pages(file, info, static_cast<uint64_t>(r * row_bytes), static_cast<uint64_t>(n * row_bytes));
    }
    return;
  }
  param.copy_(raw);
  release_pages(file, info, 0, bytes);
}

std::string folder_name(const std::string& folder) {
  fs::path path = fs::path(folder).lexically_normal();
  std::string name = path.filename().string();
  if (name.empty()) name = path.parent_path().filename().string();
  return name.empty() ? "model" : name;
}

}  // namespace

std::shared_ptr<Model> import_hf_model(const std::string& folder, const nlohmann::json& raw) {
  const fs::path dir(folder);
  const std::string config_path = (dir / "config.json").string();
  const json& architectures = raw["architectures"];
  if (!architectures.is_array() || architectures.empty() || !architectures[0].is_string())
    throw std::runtime_error(config_path + ": 'architectures' must be a non-empty list of names");
  const std::string arch = architectures[0].get<std::string>();
  const std::string family = hf::family_of(arch);
  if (family.empty())
    throw std::runtime_error(config_path + ": Hugging Face architecture '" + arch +
                             "' is not supported (HeadLab imports " + hf::supported_architectures() + ")");

  const hf::HfConfig config(raw, config_path);
  const Checkpoint checkpoint = Checkpoint::open(dir);
  const hf::HasTensor has = [&](const std::string& name) { return checkpoint.find(name) != nullptr; };
  const hf::TensorDType dtype_of = [&](const std::string& name) -> std::string {
    const Checkpoint::Entry* entry = checkpoint.find(name);
    return entry ? dtype_name(entry->info->dtype) : "";
  };
  hf::Layout layout = family == "bert" || family == "roberta" ? hf::bert_layout(config, arch, has)
                      : family == "distilbert"                 ? hf::distilbert_layout(config, arch, has)
                      : family == "electra"                    ? hf::electra_layout(config, arch, has)
                      : family == "albert"                     ? hf::albert_layout(config, arch, has)
                      : family == "gpt2"                       ? hf::gpt2_layout(config, arch, has)
                      : family == "gemma2" || family == "gemma3" ? hf::gemma_layout(config, arch, has, dtype_of, family)
                                                                 : hf::llama_layout(config, arch, has, family);
  layout.config.name = folder_name(folder) + (layout.note.empty() ? "" : " [" + layout.note + "]");

  auto model = std::make_shared<Model>();
  model->folder = folder;
  model->config = layout.config;
  try {
    model->config.validate();
  } catch (const std::exception& e) {
    throw std::runtime_error(config_path + " (" + arch + "): " + e.what());
  }
  // Nothing is allocated for a config the weights cannot fill. Every native parameter has one
  // source tensor; the margin covers sources read twice (tied or shared weights).
  int64_t held = 0;
  for (const auto& [name, entry] : checkpoint.entries()) held += numel_of(entry.info->shape);
  if (double(model->config.parameter_count()) > 2.0 * double(held) + double(1 << 20))
    throw std::runtime_error(config_path + " (" + arch + ") describes " +
                             std::to_string(model->config.parameter_count()) + " parameters but " +
                             checkpoint.source() + " holds " + std::to_string(held) +
                             " values: config and weights disagree");
  model->module = Transformer(model->config);

  // Every native parameter has exactly one source and every source feeds a parameter.
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  std::set<std::string> native_names;
  for (auto& item : model->module->named_parameters()) {
    const std::string& native = item.key();
    native_names.insert(native);
    auto found = layout.sources.find(native);
    if (found == layout.sources.end())
      throw std::logic_error(folder + ": HeadLab's " + family + " mapping has no source for parameter '" + native + "'");
    const hf::TensorSource& source = found->second;
    const Checkpoint::Entry* entry = checkpoint.find(source.name);
    if (!entry)
      throw std::runtime_error(folder + ": tensor '" + source.name + "' is missing from " + checkpoint.source() +
                               " (" + arch + " needs it for '" + native + "')");
    const TensorInfo& info = *entry->info;
    torch::Tensor& param = item.value();
    std::vector<int64_t> expected = source.stored_shape;
    if (expected.empty()) {
      expected = param.sizes().vec();
      if (source.transpose) std::reverse(expected.begin(), expected.end());
    }
    if (info.shape != expected)
      throw std::runtime_error(entry->file->path() + ": tensor '" + source.name + "' has shape " +
                               shape_text(info.shape) + ", expected " + shape_text(expected) + " from config.json (" +
                               arch + ")");
    if (!is_float(info.dtype))
      throw std::runtime_error(entry->file->path() + ": tensor '" + source.name + "' has dtype " +
                               dtype_name(info.dtype) + ", expected F32, F16 or BF16");
    copy_into(param, *entry, source);
    require_finite(param, entry->file->path(), source.name);
    used.insert(source.name);
    if (native == "tokens.weight") model->weights_dtype = dtype_name(info.dtype);
  }
  for (const auto& [native, source] : layout.sources)
    if (!native_names.count(native))
      throw std::logic_error(folder + ": HeadLab's " + family + " mapping names '" + native +
                             "', which the model does not have");
  for (const auto& [name, entry] : checkpoint.entries())
    if (!used.count(name) && !(layout.ignorable && layout.ignorable(name)))
      throw std::runtime_error(entry.file->path() + ": unexpected tensor '" + name + "': the " + arch +
                               " described by config.json does not use it (config and weights disagree?)");
  model->module->eval();

  model->tokenizer = load_folder_tokenizer(folder);
  return model;
}

}  // namespace headlab::core
