// The figures of `headlab circuits`: one composition heatmap per kind (Q, K, V), senders (every head
// of every layer but the last) down, receivers (every head of every layer but the first) across,
// on a fixed 0–1 colour scale so that two models' figures compare.
#pragma once

#include "analysis/composition.h"

#include <string>
#include <vector>

namespace headlab::analysis {

// Writes composition_{q,k,v}.svg and .png into `folder` (a kind without scores is skipped) and
// returns the file names written.
std::vector<std::string> write_composition_figures(const Composition& composition, const std::string& folder);

}  // namespace headlab::analysis
