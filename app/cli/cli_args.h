// Arguments several commands share: token ids and head gates.
#pragma once

#include "core/controls.h"
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::app {

// "1,2,3" → ids; UsageError naming `what` (the option) for anything else.
std::vector<int64_t> parse_ids(const std::string& text, const char* what);

// Applies --gate LAYER.HEAD=VALUE specs to the layers of `stack` ("encoder" or "decoder");
// UsageError for a layer or head the model does not have.
void apply_gates(const core::Model& model, core::Stack stack, const std::vector<std::string>& gates,
                 core::ModelControls& controls);

}  // namespace headlab::app
