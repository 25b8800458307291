// The Hugging Face families HeadLab opens, as data: one table row per family (its name, the
// transformers modeling file it transcribes, its architecture names and its layout function), and
// per family a table of its layers' tensor names (core/families/family_parts.h). A layout function
// reads config.json into a ModelConfig and says where each native parameter comes from in the
// checkpoint; core/model_folder.cpp picks the row, core/model/hf_import.cpp loads the tensors.
// "Adding a family" in core/README.md lists every step.
#pragma once

#include "core/config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
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
  // > 0: the slice is taken within each of this many equal groups along slice_dim and the pieces are
  // joined (a fused projection laid out per head: GPT-NeoX's and BLOOM's query_key_value, each head's
  // q, k, v side by side).
  int64_t slice_groups = 0;
  // Set: the file holds no such tensor and the parameter is this constant (OLMo's LayerNorms have no
  // weights: weight 1, bias 0); `name` is then only a label.
  std::optional<float> fill = std::nullopt;
  // ≥ 0: first take this index along dim 0 (one expert of a stacked [experts, …] tensor, gpt-oss's);
  // slice_dim and transpose then apply to what remains. stored_shape must be given.
  int64_t select_index = -1;
  // Set: the tensor is stored in MXFP4 (the OCP Microscaling format's FP4; gpt-oss's experts as the hub
  // ships them). `name` is then the `_blocks` tensor, U8 [..., R, G, 16]: 32 E2M1 values a block, two
  // a byte, the low nibble first. This names its `_scales` tensor, U8 [..., R, G]: one E8M0 exponent a
  // block (2^(s − 127)). The source reads as their product [..., R, G·32] with its last two dims
  // swapped, as transformers' convert_moe_packed_tensors gives it; `stored_shape` is that shape, and
  // select_index, slice_dim and transpose apply to it.
  std::string mxfp4_scales;
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

// What a family's layout function reads about one folder.
struct FamilyInput {
  const HfConfig& config;
  const std::string& architecture;  // config.json's architectures[0]
  const std::string& family;        // the table row's name ("llama", "qwen2", …)
  const HasTensor& has;
  const TensorDType& dtype_of;
};

// config.json + checkpoint → ModelConfig + sources; throws (naming the key) for unsupported options.
using LayoutFunction = Layout (*)(const FamilyInput&);

// One row of the family table.
struct Family {
  const char* name;                         // HeadLab's family name, ModelConfig::family
  const char* modeling_file;                // the transformers file the layout transcribes
  std::vector<const char*> architectures;   // config.json architectures[0] values it opens
  LayoutFunction layout;
  // Architectures recognised only to be refused with a clear message by `layout` (not listed as
  // supported), e.g. a multimodal wrapper of a text model HeadLab opens.
  std::vector<const char*> refused = {};
};

// Every family HeadLab opens (core/families/families.cpp).
const std::vector<Family>& families();
// The row of an architecture name, nullptr when no family opens it.
const Family* family_of(const std::string& architecture);
// The supported architecture names, comma-separated, for error messages.
std::string supported_architectures();

// The layout functions of the table's rows, one file each under core/families/.
Layout bert_layout(const FamilyInput& in);        // bert.cpp: BERT, RoBERTa
Layout distilbert_layout(const FamilyInput& in);  // bert.cpp
Layout electra_layout(const FamilyInput& in);     // electra_albert.cpp
Layout albert_layout(const FamilyInput& in);      // electra_albert.cpp
Layout gpt2_layout(const FamilyInput& in);        // gpt2.cpp
Layout llama_layout(const FamilyInput& in);       // llama.cpp: Llama, Qwen2, Qwen3, Mistral, Phi-3, SmolLM3
Layout gemma_layout(const FamilyInput& in);       // gemma.cpp: Gemma, Gemma 2, Gemma 3
Layout opt_layout(const FamilyInput& in);         // opt.cpp
Layout gpt_neox_layout(const FamilyInput& in);    // gpt_neox.cpp: GPT-NeoX, Pythia
Layout gptj_layout(const FamilyInput& in);        // gptj.cpp
Layout bloom_layout(const FamilyInput& in);       // bloom.cpp
Layout mixtral_layout(const FamilyInput& in);     // moe.cpp
Layout gpt_oss_layout(const FamilyInput& in);     // moe.cpp
Layout deepseek_layout(const FamilyInput& in);    // deepseek.cpp: DeepSeek-V2, DeepSeek-V3
Layout falcon_layout(const FamilyInput& in);      // falcon.cpp
Layout phi_layout(const FamilyInput& in);         // phi.cpp: Phi-1, Phi-1.5, Phi-2
Layout modernbert_layout(const FamilyInput& in);  // modernbert.cpp
Layout deberta_layout(const FamilyInput& in);     // deberta.cpp: DeBERTa-v2/v3
Layout bart_layout(const FamilyInput& in);        // seq2seq.cpp: BART, Marian, mBART
Layout t5_layout(const FamilyInput& in);          // seq2seq.cpp

}  // namespace headlab::core::hf
