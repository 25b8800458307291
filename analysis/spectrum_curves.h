// What a spectrum curve draws, shared by the Spectra view and its exported figure: a [D, D] key-query
// form of key size d_k < D has D − d_k exact zeros (the low-rank bottleneck), so curves stop at the
// last singular value above 1e-9·σ_1. A form that is zero (a head whose query or key weights are
// zero) or negligible beside its layer's others has no curve: σ_k / σ_1 would draw it as the same
// shape as a head that shapes its maps.
#pragma once

#include "analysis/spectra.h"

#include <cstddef>
#include <vector>

namespace headlab::analysis {

// The number of ranks worth drawing: 0 for an all-zero (or empty) spectrum.
size_t drawn_ranks(const Spectrum& s);
// σ_1, 0 for an empty spectrum.
double largest_singular_value(const Spectrum& s);
// The largest σ_1 among the applicable spectra.
double largest_singular_value(const std::vector<Spectrum>& heads);
// Zero, or σ_1 below kNegligible of `layer_top` (the largest σ_1 of its layer's heads): a form that
// adds nothing to the scores beside the layer's other heads (a weight-decayed head's, 1e-10 of them).
// analysis/composition.h judges a QK circuit's norm the same way.
inline constexpr double kNegligible = 1e-6;
bool negligible_form(const Spectrum& s, double layer_top);
// σ_k / σ_1 over the drawn ranks, so heads of different scale share an axis.
std::vector<double> relative_singular_values(const Spectrum& s);
// The cumulative energy over the drawn ranks.
std::vector<double> drawn_energy(const Spectrum& s);

}  // namespace headlab::analysis
