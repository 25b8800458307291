// A loaded model: its config, its weights as a Transformer module, its tokenizer (if any) and
// where it came from. Folders: HeadLab's native format (config.json + model.safetensors
// [+ tokenizer.json]); Hugging Face folders go through core/model/hf_import.h.
#pragma once

#include "core/config.h"
#include "core/model_folder.h"
#include "core/tokenizer/tokenizer.h"
#include "core/model/transformer.h"

#include <functional>
#include <memory>
#include <string>

namespace headlab::core {

struct Model {
  ModelConfig config;
  Transformer module{nullptr};
  std::shared_ptr<const Tokenizer> tokenizer;  // null when the folder has none
  std::string folder;                          // empty for in-memory models
  std::string weights_dtype = "F32";           // as stored on disk
  // Bytes of weights that are zero-copy views of the folder's memory-mapped files (page cache,
  // shared and evictable), not float32 copies of this process: 0 for models made in memory.
  int64_t mapped_bytes = 0;
};

// Where a loader puts a folder's weights. Mapped: every projection and embedding matrix (a 2-D
// "*.weight" or "head_weight") stays a zero-copy view of the mapped file in its stored dtype
// (core/model/linear.h computes with it); the small rest is copied to float32. Copied: every weight
// is copied to float32, as training needs.
enum class Residency { Copied, Mapped };
bool keeps_stored_view(const std::string& name, const torch::Tensor& param);
bool mappable(DType dtype);
// Mapped weights are checked for NaN and infinite values at load only up to this many bytes in all:
// the check reads every byte, and opening a 16 GB folder must not. Larger folders' values are read
// when their layers first run.
constexpr int64_t kFiniteScanBytes = int64_t(1) << 30;
bool scan_mapped_values(int64_t mapped_total);

// Replaces every mapped weight of `model` with an owned float32 copy, so it can be trained.
void own_weights(Model& model);

// A model of `config` with HeadLab's random initialisation.
std::shared_ptr<Model> make_random_model(const ModelConfig& config, uint64_t seed);

// Loads a native or Hugging Face model folder (open_model_folder, then every weight, checked for
// shape and finite values). Errors name the folder, the file and the tensor.
std::shared_ptr<Model> load_model(const std::string& folder);

// Writes a native folder: model.safetensors (+ tokenizer.json when `tokenizer_json` names a file
// to copy), then config.json, so a folder interrupted mid-save never looks complete. Atomic per file.
void save_model(const Model& model, const std::string& folder, const std::string& dtype = "F32",
                const std::string& tokenizer_json = "");

// Copies weights from `file` into the module; every parameter must be present with its exact shape,
// and no unknown tensor may remain. Parameters for which `may_be_missing(name)` holds may be absent
// (they keep their values: e.g. the new layers of a deeper model started from a shallower one).
class SafetensorsFile;
// Throws "FILE: tensor 'NAME' holds N NaN or infinite values" unless every value is finite.
void require_finite(const torch::Tensor& weights, const std::string& file, const std::string& name);
// Parameters for which `loaded_elsewhere(name)` holds are skipped here and their tensors in `file`
// are not reported as unexpected: the caller loads them itself (e.g. the first rows of a grown
// vocabulary).
// Returns the bytes left mapped (Residency::Mapped), else 0.
int64_t load_native_weights(Transformer& module, const SafetensorsFile& file,
                            const std::function<bool(const std::string&)>& may_be_missing = {},
                            const std::function<bool(const std::string&)>& loaded_elsewhere = {},
                            Residency residency = Residency::Copied);

}  // namespace headlab::core
