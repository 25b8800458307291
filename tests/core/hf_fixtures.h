// The Hugging Face fixtures of tests/data/hf/ (written by make_fixtures.py) and how a test compares
// HeadLab's run of one with its float64 reference: shared by the hf_*_test.cpp files.
#pragma once

#include "test_common.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

// Fixtures: tests/data/hf/<family>/ written by tests/data/hf/make_fixtures.py, an independent
// float64 transcription of the transformers modeling code; expected.safetensors holds its logits
// and attention probabilities for the ids in its metadata.
namespace headlab::test::hf {

using namespace headlab::core;
using headlab::test::TempDir;

// HeadLab's float32 run against the float64 transcriptions: measured at most ~1e-6 on every fixture
// (F32 and BF16 weights alike); a few times that leaves room for BLAS summation order, and is
// 40–200× tighter than a bug that changes one formula gives.
inline constexpr double kAttentionTolerance = 5e-6;  // max |Δ| of the attention weights
inline constexpr double kLogitTolerance = 5e-6;      // max |Δ logit| / max |logit|

using Tensors = std::vector<std::pair<std::string, torch::Tensor>>;

// One fixture of each family (and of each stored dtype): what every-family tests iterate over.
inline const std::vector<std::string>& one_per_family() {
  static const std::vector<std::string> names{
      "bert", "roberta", "distilbert", "gpt2", "llama", "llama-bf16", "qwen2", "mistral", "qwen3", "electra", "albert",
      "gemma2", "gemma3", "bart", "t5", "llama31", "phi3", "smollm3", "gemma", "opt", "olmo", "pythia", "gptj", "bloom",
      "mixtral", "gpt-oss", "gpt-oss-mxfp4", "phi", "falcon", "olmo2", "modernbert", "deepseek-v2", "deepseek-v3",
      "deberta-v3"};
  return names;
}

// max |a − b| / max |b| (as float64, on the host).
inline double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.detach().to(torch::kCPU).abs().max().item<double>();
  return headlab::test::max_abs_diff(a, b) / (scale > 0 ? scale : 1.0);
}

// The numbers a loaded model holds: what ModelConfig::parameter_count must equal.
inline int64_t stored_parameters(Model& model) {
  int64_t n = 0;
  for (const auto& p : model.module->parameters()) n += p.numel();
  return n;
}

inline std::string fixture(const std::string& name) { return std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/" + name; }

inline std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path);
  out << j.dump(2);
}

// A transformers 4.x config as transformers 5 writes it: `rope_theta`, the `rope_scaling` object (its
// `type` renamed `rope_type`, "default" without one) and `partial_rotary_factor` folded into one
// `rope_parameters` object.
inline void as_transformers5_rope(nlohmann::json& j) {
  nlohmann::json rope = j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"] : nlohmann::json::object();
  const std::string type = rope.value("rope_type", rope.value("type", std::string("default")));
  rope.erase("type");
  rope["rope_type"] = type;
  for (const char* key : {"rope_theta", "partial_rotary_factor"})
    if (j.contains(key)) rope[key] = j[key];
  for (const char* key : {"rope_scaling", "rope_theta", "partial_rotary_factor"}) j.erase(key);
  j["rope_parameters"] = rope;
  j["transformers_version"] = "5.0.0";
}

// All tensors of a file in their stored dtype, detached from the mapping.
inline Tensors read_all(const std::string& path) {
  auto file = SafetensorsFile::open(path);
  Tensors out;
  for (const auto& info : file.tensors()) out.emplace_back(info.name, load_tensor(file, info.name, to_scalar_type(info.dtype)).clone());
  return out;
}

inline torch::Tensor get(const Tensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  FAIL("no tensor " << name);
  return {};
}

// A copy of a fixture folder's config with edited weights, in `dir`.
inline void write_variant(const TempDir& dir, const nlohmann::json& config, const Tensors& weights,
                   DType store_as = DType::F32) {
  write_json(dir.str("config.json"), config);
  save_safetensors(dir.str("model.safetensors"), weights, store_as);
}

inline std::string load_error(const std::string& folder) {
  try {
    load_model(folder);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

struct Expected {
  std::vector<int64_t> ids, token_types;
  torch::Tensor logits;                  // [T, V]
  std::vector<torch::Tensor> attentions;  // [layers] × [heads, T, T]
  // Encoder-decoders: the decoder's ids and each stack's maps ("encoder", "decoder", "cross").
  std::vector<int64_t> decoder_ids;
  std::map<std::string, std::vector<torch::Tensor>> stack_attentions;
};

// One tensor of a fixture's reference (expected.safetensors beside its weights), e.g. "experts.1".
inline torch::Tensor expected_tensor(const std::string& folder, const std::string& name) {
  auto file = SafetensorsFile::open(fixture(folder) + "/expected.safetensors");
  return load_tensor(file, name).clone();
}

inline Expected read_expected(const std::string& folder) {
  auto file = SafetensorsFile::open(folder + "/expected.safetensors");
  Expected e;
  e.ids = parse_list(file.metadata().at("ids"));
  if (file.metadata().count("token_types")) e.token_types = parse_list(file.metadata().at("token_types"));
  e.logits = load_tensor(file, "logits").clone();
  for (int l = 0; file.contains("attentions." + std::to_string(l)); ++l)
    e.attentions.push_back(load_tensor(file, "attentions." + std::to_string(l)).clone());
  if (file.metadata().count("decoder_ids")) e.decoder_ids = parse_list(file.metadata().at("decoder_ids"));
  for (const char* stack : {"encoder", "decoder", "cross"}) {
    const std::string prefix = std::string(stack) + "_attentions.";
    for (int l = 0; file.contains(prefix + std::to_string(l)); ++l)
      e.stack_attentions[stack].push_back(load_tensor(file, prefix + std::to_string(l)).clone());
  }
  return e;
}

struct Errors {
  double attention = 0;  // max abs difference over every layer's [heads, T, T]
  double logits = 0;     // max abs difference / max |expected logit|
};

inline Errors compare(Model& model, const Expected& expected) {
  RunRequest request;
  request.ids = expected.ids;
  request.token_types = expected.token_types;
  auto trace = run(model, request);
  const auto& stack = trace->main_stack();
  REQUIRE(stack.layers.size() == expected.attentions.size());
  Errors errors;
  for (size_t l = 0; l < stack.layers.size(); ++l)
    errors.attention =
        std::max(errors.attention, headlab::test::max_abs_diff(value_weights(stack.layers[l].self), expected.attentions[l]));
  errors.logits = headlab::test::max_abs_diff(trace->logits, expected.logits) / expected.logits.abs().max().item<double>();
  return errors;
}

// An encoder-decoder against its reference: encoder, decoder and cross maps of every layer, and the
// decoder's logits.
inline Errors compare_seq2seq(Model& model, const Expected& expected) {
  RunRequest request;
  request.ids = expected.ids;
  request.decoder_ids = expected.decoder_ids;
  auto trace = run(model, request);
  const auto& enc = expected.stack_attentions.at("encoder");
  const auto& dec = expected.stack_attentions.at("decoder");
  const auto& cross = expected.stack_attentions.at("cross");
  REQUIRE(trace->encoder.layers.size() == enc.size());
  REQUIRE(trace->decoder.layers.size() == dec.size());
  REQUIRE(cross.size() == dec.size());
  Errors errors;
  auto worst = [&](const AttentionStages& stages, const torch::Tensor& reference) {
    errors.attention = std::max(errors.attention, headlab::test::max_abs_diff(value_weights(stages), reference));
  };
  for (size_t l = 0; l < enc.size(); ++l) worst(trace->encoder.layers[l].self, enc[l]);
  for (size_t l = 0; l < dec.size(); ++l) {
    worst(trace->decoder.layers[l].self, dec[l]);
    worst(trace->decoder.layers[l].cross, cross[l]);
  }
  REQUIRE(trace->logits.sizes() == expected.logits.sizes());
  errors.logits = headlab::test::max_abs_diff(trace->logits, expected.logits) / expected.logits.abs().max().item<double>();
  return errors;
}

// An edited copy of a fixture folder's config with its own weights: the maps' and logits' errors
// against the folder's reference, or the load's error.
struct FixtureVariants {
  explicit FixtureVariants(const std::string& folder)
      : folder(folder), dir("hf-variant-" + folder), weights(read_all(fixture(folder + "/model.safetensors"))),
        expected(read_expected(fixture(folder))) {}
  void write(const std::function<void(nlohmann::json&)>& edit) const {
    auto config = read_json(fixture(folder + "/config.json"));
    edit(config);
    write_variant(dir, config, weights);
  }
  Errors errors_with(const std::function<void(nlohmann::json&)>& edit) const {
    write(edit);
    return compare(*load_model(dir.str()), expected);
  }
  std::string refused(const std::function<void(nlohmann::json&)>& edit) const {
    write(edit);
    return load_error(dir.str());
  }
  std::string folder;
  TempDir dir;
  Tensors weights;
  Expected expected;
};

}  // namespace headlab::test::hf
