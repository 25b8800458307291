#include "app/cli/cli_args.h"

#include "app/cli/cli.h"
#include "core/model/device.h"
#include "core/model/stacks.h"
#include "core/precision.h"
#include "core/tokenizer/token_lookup.h"

#include <CLI/CLI.hpp>

#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace headlab::app {

void add_device_option(CLI::App* command, std::string& device) {
  command->add_option("--device", device,
                      "Where the model runs: cpu (default), cuda or cuda:N (a build against a CUDA LibTorch)");
}

torch::Device device_option(const std::string& device) {
  if (device.empty()) return torch::kCPU;
  try {
    return core::parse_device(device);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--device: ") + e.what());
  }
}

void place_model(core::Model& model, torch::Device device) {
  if (!device.is_cpu()) core::move_to_device(model, device);
}

std::shared_ptr<core::Model> load_model_on(const std::string& folder, const std::string& device_text) {
  const torch::Device device = device_option(device_text);
  auto model = core::load_model(folder);
  place_model(*model, device);
  return model;
}

std::vector<int64_t> parse_ids(const std::string& text, const char* what) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      ids.push_back(std::stoll(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw UsageError(std::string(what) + ": '" + item + "' is not an integer id (expected e.g. 1,2,3)");
    }
  }
  if (ids.empty()) throw UsageError(std::string(what) + ": no ids");
  return ids;
}

void require_text(const std::string& text, const char* flag) {
  if (text.empty()) throw UsageError(std::string(flag) + " is empty: give the text to read");
}

std::vector<int64_t> require_tokens(std::vector<int64_t> ids, const char* flag) {
  if (ids.empty()) throw UsageError(std::string(flag) + " produced no tokens");
  return ids;
}

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
  return text;
}

std::map<std::string, std::string> dump_metadata(const std::string& model, const std::string& ids_key,
                                                 const std::vector<int64_t>& ids) {
  std::map<std::string, std::string> metadata{{"model", model}, {ids_key, ids_text(ids)}};
  if (const std::string p = core::recorded_precision(); !p.empty()) metadata["precision"] = p;  // absent: exact
  return metadata;
}

int64_t parse_token(const core::Model& model, const std::string& text, const char* what) {
  try {
    return core::token_id(model.tokenizer.get(), model.config.vocab_size, text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string(what) + ": " + e.what());
  }
}

void apply_gates(const core::Model& model, core::Stack stack, const std::vector<std::string>& gates,
                 core::ModelControls& controls) {
  if (gates.empty()) return;  // nothing to check: a model without this stack is the command's to refuse
  const int layers = model.module->layer_count(stack);
  const auto& attention = core::layers_config(model.config, core::layers_of(stack)).attention;
  std::map<std::pair<int, int>, std::string> given;  // (layer, head) → the --gate that set it
  for (const auto& text : gates) {
    core::GateSpec spec;
    try {
      spec = core::parse_gate_spec(text);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (spec.layer >= layers) throw UsageError("gate '" + text + "': the model has " + std::to_string(layers) + " layers");
    if (spec.head >= attention.output_heads())
      throw UsageError("gate '" + text + "': layers have " + std::to_string(attention.output_heads()) + " heads");
    // One head twice: which one is meant is not for the command to guess.
    if (const auto [at, fresh] = given.emplace(std::pair{spec.layer, spec.head}, text); !fresh)
      throw UsageError("--gate '" + at->second + "' and --gate '" + text + "' set the same head: give each head once");
    auto& c = controls.at(stack, spec.layer);
    c.gates.resize(attention.output_heads(), 1.0f);
    c.gates[spec.head] = spec.value;
  }
}

}  // namespace headlab::app
