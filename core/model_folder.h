// What a model folder holds, read without the weights' values: its config (native, or a Hugging
// Face config.json through the family mapping of core/families/families.h), the headers of its weight
// files, and how Hugging Face tensors map onto HeadLab's parameters. Torch-free, so `headlab info`
// describes a folder of any size in milliseconds; core/model/model.h loads the values from it.
#pragma once

#include "core/config.h"
#include "core/families/families.h"
#include "core/safetensors.h"
#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headlab::core {

// Every safetensors file of a folder (one file, or the shards of model.safetensors.index.json),
// searchable by tensor name. Headers are validated against the file sizes when opened.
class WeightFiles {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const TensorInfo* info;
  };

  // A Hugging Face folder: model.safetensors, else the shards its index names. Throws one line
  // naming the file (a legacy format such as pytorch_model.bin gets its own message).
  static std::shared_ptr<const WeightFiles> open_folder(const std::string& folder);
  // One file (a native folder's model.safetensors).
  static std::shared_ptr<const WeightFiles> open_file(const std::string& path);

  const Entry* find(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? nullptr : &it->second;
  }
  // "model.safetensors" or "model.safetensors.index.json", for messages.
  const std::string& source() const { return source_; }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  int64_t values() const;  // elements of every tensor together
  int64_t bytes() const;   // their stored bytes together

 private:
  void add(std::unique_ptr<SafetensorsFile> file);

  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Entry> entries_;
  std::string source_;
};

struct ModelFolder {
  std::string folder;
  std::string config_path;
  ModelConfig config;               // validated: sizes within HeadLab's limits
  std::string weights_dtype;        // the token embedding's dtype as stored ("F32", "BF16", …)
  std::string architecture;         // Hugging Face: config.json's architectures[0]; "" for native folders
  std::string family;               // Hugging Face family ("bert", "llama", …); "" for native folders
  std::shared_ptr<const hf::Layout> layout;    // Hugging Face: native parameter → stored tensor
  std::shared_ptr<const WeightFiles> weights;  // headers of the weight files, mapped
};

// Opens `folder`: config.json (native or Hugging Face), the weight files' headers, and the check
// that the weights hold as many values as the config needs (native exactly; Hugging Face within a
// margin for tied weights), so nothing large is allocated for a config the weights cannot fill.
// Every error is one line naming the file; file-system failures read "path: reason".
ModelFolder open_model_folder(const std::string& folder);

// The folder's tokenizer (tokenizer.json, vocab.txt or vocab.json + merges.txt), or null if it has
// none. Errors start with "loading tokenizer: ".
std::shared_ptr<const Tokenizer> load_folder_tokenizer(const std::string& folder);

// The product of a tensor's dimensions (shapes come bounded from the safetensors reader).
int64_t numel_of(const std::vector<int64_t>& shape);

}  // namespace headlab::core
