// Session → engine: what to run for the current session, and selection housekeeping when a new
// model or run arrives. Torch-free and display-free, so tests check it directly.
#pragma once

#include "app/work/workbench_engine.h"
#include "app/document/session.h"

#include <string>
#include <vector>

namespace headlab::app {

// The run the session asks for: its text(s), controls, and J/L only when a J or L view needs them;
// the selected layer is the one whose maps stay whole when the rest are thumbnails.
RunInput make_run_input(const SessionState& session);

// Bytes of maps kept whole before thumbnails take over: $HEADLAB_FULL_MAPS (bytes, or with a K/M/G
// suffix; 0 = always whole) or kFullMapsBudget.
int64_t full_maps_budget();

// Keeps the selection inside the model (stack present, layer/head in range) and the run (token
// highlights inside the tokens).
void clamp_selection(Selection& selection, const ModelSummary& model, const RunSnapshot* snapshot);

// Makes controls fit a model: drops layers and stacks it lacks, and gates or mixing matrices of
// the wrong size. Returns what was dropped ("" = everything fitted).
std::string fit_controls(core::ModelControls& controls, const ModelSummary& model);

// The attention whose heads the Mixer's "take from counterfactual" sets: the main stack, the
// decoder's self-attention, else the encoder's. Null when the model has none.
const AttentionSummary* take_attention(const ModelSummary& model);

// Makes the Mixer's take-from-counterfactual weights ([layer][head] of take_attention) fit a model:
// drops layers and heads it lacks, and weights that are no number in [0, 1]. Returns what was
// dropped ("" = everything fitted).
std::string fit_take(std::vector<std::vector<float>>& take, const ModelSummary& model);

// The default demo text for a model: a [MASK] sentence for masked LMs, a prefix for causal ones.
std::string demo_text(const ModelSummary& model);

// "<model>_<stack>_L<l>_H<h>_<stage>" — file names of exported figures.
std::string figure_basename(const std::string& model_name, const std::string& view, const Selection& selection);

}  // namespace headlab::app
