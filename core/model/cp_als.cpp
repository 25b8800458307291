#include "core/model/cp_als.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace headlab::core {
namespace {

// Solves X G = M for X, G symmetric positive semi-definite [R, R] (pseudo-inverse: a rank-deficient
// G, e.g. a zero column, gives the least-norm solution instead of NaN).
torch::Tensor solve_right(const torch::Tensor& m, const torch::Tensor& g) { return m.mm(torch::linalg_pinv(g, 1e-12, true)); }

// The leading `rank` left singular vectors of `unfolded` [I, …]; columns past its rank are random.
torch::Tensor leading_vectors(const torch::Tensor& unfolded, int64_t rank, at::Generator& generator) {
  const auto svd = torch::linalg_svd(unfolded, false);
  const torch::Tensor u = std::get<0>(svd);  // [I, min(I, …)]
  const int64_t have = std::min<int64_t>(rank, u.size(1));
  torch::Tensor out = u.narrow(1, 0, have);
  if (have < rank)  // drawn on the CPU, so a seed gives the same columns on any device
    out = torch::cat({out, at::normal(0, 1.0 / std::sqrt(double(u.size(0))), {u.size(0), rank - have}, generator)
                               .to(u.device(), torch::kFloat64)},
                     1);
  return out;
}

// Σ_k T[k] B diag(C[k]) = T_(1) (C ⊙ B): [I, R].
torch::Tensor mttkrp_a(const torch::Tensor& t, const torch::Tensor& b, const torch::Tensor& c) {
  return torch::einsum("kij,jr,kr->ir", {t, b, c});
}
// Σ_k T[k]ᵀ A diag(C[k]): [J, R].
torch::Tensor mttkrp_b(const torch::Tensor& t, const torch::Tensor& a, const torch::Tensor& c) {
  return torch::einsum("kij,ir,kr->jr", {t, a, c});
}
// diag(Aᵀ T[k] B) for every k: [K, R].
torch::Tensor mttkrp_c(const torch::Tensor& t, const torch::Tensor& a, const torch::Tensor& b) {
  return torch::einsum("kij,ir,jr->kr", {t, a, b});
}

}  // namespace

torch::Tensor cp_reconstruct(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& c) {
  return torch::einsum("ir,jr,kr->kij", {a, b, c});
}

CpResult cp_als(const torch::Tensor& t_in, int64_t rank, const CpOptions& o) {
  if (t_in.dim() != 3) throw std::invalid_argument("cp_als: needs a 3-way tensor [K, I, J]");
  if (rank < 1) throw std::invalid_argument("cp_als: rank must be ≥ 1");
  torch::NoGradGuard no_grad;
  const torch::Tensor t = t_in.to(o.device, torch::kFloat64);
  const int64_t K = t.size(0), I = t.size(1), J = t.size(2);
  const double norm = t.norm().item<double>();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(o.seed);

  CpResult r;
  if (o.init_a.defined()) {
    r.a = o.init_a.to(o.device, torch::kFloat64).clone();
    r.b = o.init_b.to(o.device, torch::kFloat64).clone();
    r.c = o.init_c.to(o.device, torch::kFloat64).clone();
    if (r.a.sizes() != torch::IntArrayRef({I, rank}) || r.b.sizes() != torch::IntArrayRef({J, rank}) ||
        r.c.sizes() != torch::IntArrayRef({K, rank}))
      throw std::invalid_argument("cp_als: starting factors must be [I, R], [J, R], [K, R]");
  } else {
    r.a = leading_vectors(t.permute({1, 0, 2}).reshape({I, K * J}), rank, generator);  // mode-1 unfolding
    r.b = leading_vectors(t.permute({2, 0, 1}).reshape({J, K * I}), rank, generator);  // mode-2 unfolding
    r.c = solve_right(mttkrp_c(t, r.a, r.b), r.a.t().mm(r.a) * r.b.t().mm(r.b));
  }
  auto error = [&] { return norm == 0 ? 0.0 : (t - cp_reconstruct(r.a, r.b, r.c)).norm().item<double>() / norm; };
  double previous = error();
  r.relative_error = previous;
  for (int it = 1; it <= o.max_iterations && previous > 0; ++it) {
    // Each factor in turn solves its linear least-squares problem with the other two fixed:
    //   A (BᵀB ∗ CᵀC) = T_(1) (C ⊙ B), and likewise for B and C (∗ Hadamard, ⊙ Khatri–Rao).
    r.a = solve_right(mttkrp_a(t, r.b, r.c), r.b.t().mm(r.b) * r.c.t().mm(r.c));
    r.b = solve_right(mttkrp_b(t, r.a, r.c), r.a.t().mm(r.a) * r.c.t().mm(r.c));
    // Unit columns for A and B, their norms carried by C (the decomposition is unchanged).
    const auto na = r.a.norm(2, 0).clamp_min(1e-300), nb = r.b.norm(2, 0).clamp_min(1e-300);
    r.a = r.a / na;
    r.b = r.b / nb;
    r.c = solve_right(mttkrp_c(t, r.a, r.b), r.a.t().mm(r.a) * r.b.t().mm(r.b));
    const double now = error();
    r.iterations = it;
    r.relative_error = now;
    if (o.on_iteration && !o.on_iteration(it, now)) break;
    if (previous - now < o.tolerance) break;
    previous = now;
  }
  r.a = r.a.to(torch::kCPU);
  r.b = r.b.to(torch::kCPU);
  r.c = r.c.to(torch::kCPU);
  return r;
}

}  // namespace headlab::core
