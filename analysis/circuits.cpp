#include "analysis/circuits.h"

#include "analysis/circuit_weights.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace headlab::analysis {

OvCircuits ov_circuits(core::Model& model) { return ov_circuits(circuit_weights(model)); }

OvCircuits ov_circuits(const CircuitWeights& weights) {
  OvCircuits out;
  for (const auto& note : weights.notes) out.notes.push_back("OV circuits: " + note);
  if (!weights.unembed_embed.defined()) return out;
  const auto& G = weights.unembed_embed;  // [D, D]: W_U W_E, shared by every head
  for (size_t l = 0; l < weights.layers.size(); ++l) {
    const auto& ov = weights.layers[l].ov;
    // The cyclic product W_O W_U W_E W_V [H, d_v, d_v] has the nonzero eigenvalues of W_E W_V W_O W_U.
    const auto cyclic = torch::matmul(torch::matmul(ov.S.transpose(1, 2), G), ov.P);
    for (int64_t h = 0; h < ov.heads(); ++h) {
      const auto eig = at::linalg_eigvals(cyclic[h]).contiguous();  // complex128 [d_v]
      OvCircuit circuit;
      circuit.stack = weights.stack;
      circuit.layer = static_cast<int>(l);
      circuit.head = static_cast<int>(h);
      const auto* z = eig.data_ptr<c10::complex<double>>();
      double re = 0, magnitude = 0;
      for (int64_t i = 0; i < eig.size(0); ++i) {
        circuit.eigenvalues.emplace_back(z[i].real(), z[i].imag());
        re += z[i].real();
        magnitude += std::abs(circuit.eigenvalues.back());
      }
      std::sort(circuit.eigenvalues.begin(), circuit.eigenvalues.end(),
                [](const auto& x, const auto& y) { return std::abs(x) > std::abs(y); });
      if (magnitude > 0) circuit.copying = re / magnitude;
      out.heads.push_back(std::move(circuit));
    }
  }
  return out;
}

}  // namespace headlab::analysis
