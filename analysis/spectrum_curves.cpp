#include "analysis/spectrum_curves.h"

#include <algorithm>

namespace headlab::analysis {

size_t drawn_ranks(const Spectrum& s) {
  const auto& v = s.singular_values;
  if (v.empty() || !(v.front() > 0)) return 0;
  size_t n = v.size();
  while (n > 1 && !(v[n - 1] > 1e-9 * v.front())) --n;
  return n;
}

double largest_singular_value(const Spectrum& s) { return s.singular_values.empty() ? 0.0 : s.singular_values.front(); }

double largest_singular_value(const std::vector<Spectrum>& heads) {
  double top = 0;
  for (const auto& s : heads)
    if (s.applicable) top = std::max(top, largest_singular_value(s));
  return top;
}

bool negligible_form(const Spectrum& s, double layer_top) {
  const double top = largest_singular_value(s);
  return !(top > 0) || top < kNegligible * layer_top;
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
