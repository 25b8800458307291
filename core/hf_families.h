// Internal to the Hugging Face importer (core/hf_import.cpp): how each supported family's
// config.json maps onto a ModelConfig and where each native parameter comes from in its files.
#pragma once

#include "core/config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace headlab::core::hf {

// Typed reads from a Hugging Face config.json; every error names the file and the key.
class HfConfig {
 public:
  HfConfig(const nlohmann::json& json, std::string where) : json_(json), where_(std::move(where)) {}

  int integer(const char* key) const;  // required
  int integer(const char* key, int fallback) const;
  double number(const char* key, double fallback) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key, const std::string& fallback) const;
  // The value of `key`, nullptr when absent or null.
  const nlohmann::json* find(const char* key) const;
  // Whether `key` is written at all (a null counts: it can switch off a family's default).
  bool contains(const char* key) const { return json_.contains(key); }
  [[noreturn]] void fail(const std::string& text) const;

 private:
  const nlohmann::json& json_;
  std::string where_;
};

// Where one native parameter comes from: a tensor in the checkpoint, optionally narrowed along
// one dimension and/or transposed (GPT-2's Conv1D stores [in, out]; Linear wants [out, in]).
struct TensorSource {
  std::string name;                   // Hugging Face tensor name
  std::vector<int64_t> stored_shape;  // expected in the file; empty = the native shape (reversed if transposed)
  int slice_dim = -1;                 // ≥ 0: take [slice_begin, slice_begin + slice_count) along this dim
  int64_t slice_begin = 0;
  int64_t slice_count = 0;
  bool transpose = false;  // 2-D only, applied after the slice
};

// A family's answer for one folder: the config and a source for every native parameter.
struct Layout {
  ModelConfig config;
  std::map<std::string, TensorSource> sources;           // native parameter name → source
  std::function<bool(const std::string&)> ignorable;     // checkpoint tensors HeadLab does not need
  // Checkpoint tensors that store a table HeadLab computes (Marian's sinusoids): checkpoint name →
  // the native buffer it must equal, row for row; the import refuses a file where they differ.
  std::map<std::string, std::string> fixed_tables;
  std::string note;  // appended to the model's name, e.g. what stands in for a missing LM head
};

// Does the checkpoint hold a tensor of this name? (Used to detect prefixes and optional heads.)
using HasTensor = std::function<bool(const std::string&)>;
// The stored dtype of a checkpoint tensor ("F32", "BF16", "F16", …), "" when it is absent.
using TensorDType = std::function<std::string(const std::string&)>;

// `arch` is config.json's architectures[0]; the family functions throw for unsupported options.
Layout bert_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);
Layout distilbert_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);
Layout gpt2_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);
// family: "llama", "qwen2" or "mistral".
Layout llama_layout(const HfConfig& config, const std::string& arch, const HasTensor& has, const std::string& family);
// core/hf_families_encoders.cpp: ELECTRA (generator MLM, discriminator, bare model) and ALBERT.
Layout electra_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);
Layout albert_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);

// core/hf_families_seq2seq.cpp: encoder-decoders. family: "bart", "marian" or "mbart".
Layout bart_layout(const HfConfig& config, const std::string& arch, const HasTensor& has, const std::string& family);
Layout t5_layout(const HfConfig& config, const std::string& arch, const HasTensor& has);
// "bart" / "marian" / "t5" for their architectures, "" otherwise; and their names for messages.
std::string seq2seq_family_of(const std::string& arch);
std::string seq2seq_architectures();

// family: "gemma2" or "gemma3" (core/hf_families_gemma.cpp).
Layout gemma_layout(const HfConfig& config, const std::string& arch, const HasTensor& has, const TensorDType& dtype_of,
                    const std::string& family);
// "gemma2" / "gemma3" for the Gemma architectures, "" otherwise; and their names for messages.
std::string gemma_family_of(const std::string& arch);
std::string gemma_architectures();

// The family of a supported architecture name ("bert", "gpt2", "llama", "qwen2", "mistral"), "" otherwise.
std::string family_of(const std::string& arch);
// The supported architecture names, comma-separated, for error messages.
std::string supported_architectures();

}  // namespace headlab::core::hf
