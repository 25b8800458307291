#include "analysis/spectrum_curves.h"

namespace headlab::analysis {

size_t drawn_ranks(const Spectrum& s) {
  const auto& v = s.singular_values;
  size_t n = v.size();
  while (n > 1 && !(v[n - 1] > 1e-9 * v.front())) --n;
  return n;
}

std::vector<double> relative_singular_values(const Spectrum& s) {
  std::vector<double> v(s.singular_values.begin(), s.singular_values.begin() + static_cast<long>(drawn_ranks(s)));
  const double top = v.empty() ? 1.0 : v.front();
  for (double& x : v) x = top > 0 ? x / top : 0.0;
  return v;
}

std::vector<double> drawn_energy(const Spectrum& s) {
  return {s.cumulative_energy.begin(), s.cumulative_energy.begin() + static_cast<long>(drawn_ranks(s))};
}

}  // namespace headlab::analysis
