#include "analysis/composition.h"

#include "analysis/circuit_weights.h"
#include "analysis/spectrum_curves.h"
#include "core/cancelled.h"

#include <torch/torch.h>

namespace headlab::analysis {
namespace {

// ‖OV^{h1} · R^{h2}‖_F for every head h1 of `left` (OV circuits, [H1]) and h2 of `right` [H2]:
// OV = A Bᵀ with B = left.S, R = P M Sᵀ, so the product is A (Bᵀ P M) Sᵀ and its squared norm
// tr(AᵀA · C · SᵀS · Cᵀ) with C = Bᵀ P M [d, b] — one D-sized contraction per pair, as a single
// matrix product over all pairs. Returns [H1, H2].
torch::Tensor product_norms(const Factored& left, const Factored& right) {
  const int64_t H1 = left.heads(), H2 = right.heads(), D = left.P.size(1);
  const int64_t d = left.S.size(2), a = right.P.size(2);
  const auto Bt = left.S.transpose(1, 2).reshape({H1 * d, D});     // [H1·d, D]
  const auto P = right.P.permute({1, 0, 2}).reshape({D, H2 * a});  // [D, H2·a]
  auto C = torch::matmul(Bt, P).view({H1, d, H2, a}).permute({0, 2, 1, 3});  // [H1, H2, d, a]
  if (right.M.defined()) C = torch::matmul(C, right.M.unsqueeze(0));         // [H1, H2, d, b]
  const auto GA = torch::matmul(left.P.transpose(1, 2), left.P).unsqueeze(1);     // [H1, 1, d, d]
  const auto GS = torch::matmul(right.S.transpose(1, 2), right.S).unsqueeze(0);  // [1, H2, b, b]
  return (torch::matmul(torch::matmul(GA, C), GS) * C).sum({2, 3}).clamp_min(0).sqrt();
}

// The composition table of one kind, [layer1][head1][layer2][head2], from `right(l2)`, the circuit
// head h2 of layer l2 reads with (empty: a layer without one).
CompositionTable empty_table(const std::vector<LayerCircuits>& layers, const std::vector<int64_t>& right_heads) {
  CompositionTable t(layers.size());
  for (size_t l1 = 0; l1 < layers.size(); ++l1) {
    t[l1].resize(layers[l1].ov.heads());
    for (auto& row : t[l1]) {
      row.resize(layers.size());
      for (size_t l2 = 0; l2 < layers.size(); ++l2) row[l2].assign(right_heads[l2], 0.0);
    }
  }
  return t;
}

}  // namespace

Composition composition_scores(core::Model& model, const std::function<bool(int64_t, int64_t)>& progress) {
  const auto weights = circuit_weights(model);
  Composition out;
  out.stack = weights.stack;
  out.ov = ov_circuits(weights);
  for (const auto& note : weights.notes) out.notes.push_back("composition: " + note);
  for (const auto& note : weights.qk_notes) out.notes.push_back("composition: " + note);
  const auto& layers = weights.layers;
  const int64_t L = static_cast<int64_t>(layers.size());
  bool has_qk = true;
  std::vector<int64_t> qk_heads, ov_heads;
  for (const auto& layer : layers) {
    has_qk = has_qk && layer.qk.has_value();
    qk_heads.push_back(layer.qk ? layer.qk->heads() : 0);
    ov_heads.push_back(layer.ov.heads());
  }
  if (has_qk) out.q = out.k = empty_table(layers, qk_heads);
  out.v = empty_table(layers, ov_heads);
  auto fill = [&](CompositionTable& table, int64_t l1, int64_t l2, const torch::Tensor& scores) {
    const auto s = scores.contiguous();
    const auto* p = s.data_ptr<double>();
    for (int64_t h1 = 0; h1 < s.size(0); ++h1)
      for (int64_t h2 = 0; h2 < s.size(1); ++h2) table[l1][h1][l2][h2] = p[h1 * s.size(1) + h2];
  };
  // score = ‖OV R‖ / (‖OV‖ ‖R‖), 0 where either circuit is zero.
  auto scores = [](const torch::Tensor& product, const torch::Tensor& left, const torch::Tensor& right) {
    const auto denominator = left.unsqueeze(1) * right.unsqueeze(0);
    return torch::where(denominator > 0, product / denominator.clamp_min(1e-300), torch::zeros_like(product));
  };
  std::vector<torch::Tensor> ov_norms;
  for (const auto& layer : layers) ov_norms.push_back(layer.ov.frobenius());
  // Each receiver's ‖W_QK‖, with a negligible one set to 0: its scores would be scale-free ratios of
  // rounding noise, and `scores` gives 0 where a circuit is zero.
  std::vector<torch::Tensor> qk_norms;
  if (has_qk) {
    std::string zero_heads;
    for (int64_t l = 0; l < L; ++l) {
      auto norms = layers[l].qk->frobenius().contiguous();  // [heads]
      const double top = norms.max().item<double>();
      auto& flags = out.qk_zero.emplace_back(static_cast<size_t>(norms.size(0)), false);
      for (int64_t h = 0; h < norms.size(0); ++h) {
        const double n = norms[h].item<double>();
        flags[h] = !(n > 0) || n < kNegligible * top;
        if (!flags[h]) continue;
        norms[h] = 0.0;
        zero_heads += (zero_heads.empty() ? "" : ", ") + ("L" + std::to_string(l) + " H" + std::to_string(h));
      }
      qk_norms.push_back(norms);
    }
    if (!zero_heads.empty())
      out.notes.push_back("composition: " + zero_heads + (zero_heads.find(',') == std::string::npos ? " has" : " have") +
                          " a zero QK circuit (query or key weights zero or decayed away): nothing composes into "
                          "their queries or keys, and their Q- and K-composition scores are given as 0");
  }
  for (int64_t l2 = 1; l2 < L; ++l2) {
    const auto& receiver = layers[l2];
    std::optional<Factored> q, k;
    if (has_qk) {
      q = *receiver.qk;
      k = Factored{q->S, q->M.defined() ? q->M.transpose(1, 2) : torch::Tensor(), q->P};
    }
    for (int64_t l1 = 0; l1 < l2; ++l1) {
      const auto& sender = layers[l1].ov;
      if (q) {
        fill(out.q, l1, l2, scores(product_norms(sender, *q), ov_norms[l1], qk_norms[l2]));
        fill(out.k, l1, l2, scores(product_norms(sender, *k), ov_norms[l1], qk_norms[l2]));
      }
      fill(out.v, l1, l2, scores(product_norms(sender, receiver.ov), ov_norms[l1], ov_norms[l2]));
    }
    if (progress && !progress(l2, L - 1)) throw core::Cancelled();
  }
  return out;
}

}  // namespace headlab::analysis
