// Arguments several commands share: token ids and head gates.
#pragma once

#include "core/controls.h"
#include "core/model/model.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace headlab::app {

// --device cpu|cuda|cuda:N on an engine command: where its model runs (core/model/device.h).
void add_device_option(CLI::App* command, std::string& device);
// The device --device names, checked before anything loads: UsageError in one line for a name this
// process cannot use (a build without CUDA, no card, a card it does not have).
torch::Device device_option(const std::string& device);
// Moves a loaded model to `device` (nothing for the CPU); MemoryLimitError when its weights do not fit there.
void place_model(core::Model& model, torch::Device device);
// core::load_model(folder) on the device --device names, the device checked before the folder is read.
std::shared_ptr<core::Model> load_model_on(const std::string& folder, const std::string& device);

// "1,2,3" → ids; UsageError naming `what` (the option) for anything else.
std::vector<int64_t> parse_ids(const std::string& text, const char* what);

// A text given with option `flag` (e.g. "--text"): UsageError when it is empty, and when its ids
// (what the model's tokenizer made of it) are none. Returns the ids.
void require_text(const std::string& text, const char* flag);
std::vector<int64_t> require_tokens(std::vector<int64_t> ids, const char* flag);

// "1,2,3": ids as parse_ids reads them.
std::string ids_text(const std::vector<int64_t>& ids);

// What a dump's metadata says of the run that made it: the model folder ("model"), the input ids
// under `ids_key` ("ids" for run, "prompt_ids" for generate), and "precision" when it computed other
// than exactly (core/precision.h).
std::map<std::string, std::string> dump_metadata(const std::string& model, const std::string& ids_key,
                                                 const std::vector<int64_t>& ids);

// One token named on the command line: an integer id, a token of the vocabulary as written there
// (e.g. "Ġcat"), or a text the tokenizer turns into exactly one token (e.g. " cat"). UsageError naming
// `what` otherwise, with the pieces a text became.
int64_t parse_token(const core::Model& model, const std::string& text, const char* what);

// Applies --gate LAYER.HEAD=VALUE specs to the layers of `stack` ("encoder" or "decoder");
// UsageError for a layer or head the model does not have.
void apply_gates(const core::Model& model, core::Stack stack, const std::vector<std::string>& gates,
                 core::ModelControls& controls);

}  // namespace headlab::app
