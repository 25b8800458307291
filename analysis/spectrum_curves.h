// What a spectrum curve draws, shared by the Spectra view and its exported figure: a [D, D] key-query
// form of key size d_k < D has D − d_k exact zeros (the low-rank bottleneck), so curves stop at the
// last singular value above 1e-9·σ_1.
#pragma once

#include "analysis/spectra.h"

#include <cstddef>
#include <vector>

namespace headlab::analysis {

// The number of ranks worth drawing (at least 1 for a non-empty spectrum).
size_t drawn_ranks(const Spectrum& s);
// σ_k / σ_1 over the drawn ranks, so heads of different scale share an axis.
std::vector<double> relative_singular_values(const Spectrum& s);
// The cumulative energy over the drawn ranks.
std::vector<double> drawn_energy(const Spectrum& s);

}  // namespace headlab::analysis
