#include "core/model/rope.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace headlab::core {

namespace {

torch::Tensor plain(double theta, int64_t rot) {  // [rot/2]
  return 1.0 / torch::pow(theta, torch::arange(0, rot, 2, torch::kFloat64) / double(rot));
}

// Llama 3.1 (transformers' _compute_llama3_parameters): by wavelength λ = 2π/inv_freq, high
// frequencies (λ < L/high_freq_factor) stay, low ones (λ > L/low_freq_factor) are divided by the
// factor, and in between s = (L/λ − low)/(high − low) blends them: (1 − s)·f/factor + s·f.
torch::Tensor llama3(const torch::Tensor& inv_freq, const RopeScaling& r) {
  const double L = r.original_max_positions;
  const auto wavelen = 2 * M_PI / inv_freq;
  const auto scaled = torch::where(wavelen > L / r.low_freq_factor, inv_freq / r.factor, inv_freq);
  const auto smooth = (L / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
  const auto blended = (1 - smooth) * scaled / r.factor + smooth * scaled;
  const auto medium = (wavelen >= L / r.high_freq_factor).logical_and(wavelen <= L / r.low_freq_factor);
  return torch::where(medium, blended, scaled);
}

// YaRN (Peng et al. 2023, §3.2; transformers' _compute_yarn_parameters): the dimension that turns
// n times in L tokens is rot·ln(L/(2πn)) / (2 ln θ); between the dimensions of beta_fast and
// beta_slow turns (rounded outward when `truncate`, clamped to [0, rot − 1]) a linear ramp moves
// each frequency from extrapolation (kept) to interpolation (/ factor).
torch::Tensor yarn(double theta, int64_t rot, const RopeScaling& r) {
  auto correction_dim = [&](double turns) {
    return rot * std::log(r.original_max_positions / (turns * 2 * M_PI)) / (2 * std::log(theta));
  };
  double low = correction_dim(r.beta_fast), high = correction_dim(r.beta_slow);
  if (r.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, double(rot - 1));
  if (low == high) high += 0.001;  // as transformers: no division by zero
  const auto ramp = ((torch::arange(rot / 2, torch::kFloat64) - low) / (high - low)).clamp(0, 1);
  const auto extrapolation = 1 - ramp;  // 1: the frequency kept
  const auto kept = plain(theta, rot);
  return kept / r.factor * (1 - extrapolation) + kept * extrapolation;
}

}  // namespace

RopeFrequencies rope_frequencies(double theta, int64_t rot, const RopeScaling& scaling, int64_t length,
                                 int max_positions) {
  RopeFrequencies out;
  switch (scaling.kind) {
    case RopeScalingKind::None: out.inv_freq = plain(theta, rot); break;
    case RopeScalingKind::Linear: out.inv_freq = plain(theta, rot) / scaling.factor; break;
    case RopeScalingKind::Dynamic: {
      // transformers' dynamic NTK: the base for a sequence of max(length, max_positions) tokens.
      const double T = std::max<double>(length, max_positions);
      const double base = theta * std::pow(scaling.factor * T / max_positions - (scaling.factor - 1),
                                           double(rot) / double(rot - 2));
      out.inv_freq = plain(base, rot);
      break;
    }
    case RopeScalingKind::Llama3: out.inv_freq = llama3(plain(theta, rot), scaling); break;
    case RopeScalingKind::Yarn:
      out.inv_freq = yarn(theta, rot, scaling);
      out.attention_factor = scaling.attention_factor;
      break;
  }
  return out;
}

}  // namespace headlab::core
