// The figures of `headlab circuits`: one composition heatmap per kind (Q, K, V), senders (every head
// of every layer but the last) down, receivers (every head of every layer but the first) across,
// on a fixed 0–1 colour scale so that two models' figures compare.
#pragma once

#include "analysis/composition.h"
#include "analysis/heatmap_figure.h"

#include <string>
#include <vector>

namespace headlab::analysis {

// The heatmap of one kind ("Q", "K" or "V"), for `headlab circuits` and the Circuits view alike:
// senders down, receivers across, 0–1. A receiver with no QK circuit (Composition::qk_zero) has no
// Q or K score: its column is grey ("no value"), never a measured 0, and a note says why. `model`
// names the model under the subtitle ("" = not named). Throws std::invalid_argument for another kind.
Heatmap composition_heatmap(const Composition& composition, const std::string& kind, const std::string& model);

// Writes composition_{q,k,v}.svg and .png into `folder` (a kind without scores is skipped) and
// returns the file names written.
std::vector<std::string> write_composition_figures(const Composition& composition, const std::string& model,
                                                   const std::string& folder);

}  // namespace headlab::analysis
