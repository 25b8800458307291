#include "analysis/spectra.h"

#include "analysis/latent_reading.h"

#include "core/model/attention.h"
#include "core/model/model.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace headlab::analysis {
namespace {

torch::Tensor f64(const torch::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat64); }

// From this size on both sides, spectrum_of takes the singular values as the square roots of the
// eigenvalues of the smaller Gram matrix instead of an SVD: one 4096² float64 matrix (an 8B model's
// W_Q) took 15 s against the SVD's 149 s on 2 busy cores. The eigenvalues carry ~n·ε·σ_max² of
// rounding, so values below ~√(n·ε)·σ_max (~1e-6 of the largest at n = 4096) are not resolved: they
// come out near that floor instead of 0. The large values agree with the SVD's to ~1e-13 of the
// largest on N(0, 0.02) weights, and every cumulative energy to ~1e-15: no energy rank moves.
constexpr int64_t kGramFrom = 512;

// The layer's attention module: the encoder's or decoder's self-attention, or the decoder's cross-attention.
core::Attention attention_of(core::Model& model, core::Stack stack, int layer) {
  const bool cross = stack == core::Stack::Cross;
  auto block = model.module->block(cross ? core::Stack::Decoder : stack, layer);
  auto attention = cross ? block->cross_attn : block->attn;
  if (!attention) throw std::invalid_argument("decoder layer " + std::to_string(layer) + " has no cross-attention");
  return attention;
}

// A projection's weight [out, in] as the paper's W [in, out] (D × width), float64.
torch::Tensor as_columns(const core::Linear& projection) { return f64(projection->weight).t(); }

// The two factors of head h's form B_h = A Cᵀ (each [D, r]); undefined for additive scoring. `latent`:
// the module's latent_reading, where it has one, read once for all its heads.
std::pair<torch::Tensor, torch::Tensor> head_factors(core::AttentionImpl& a, int head, const LatentReading& latent = {}) {
  const auto& c = a.config();
  if (head < 0 || head >= c.softmax_heads())
    throw std::out_of_range("head " + std::to_string(head) + " does not exist (" + std::to_string(c.softmax_heads()) +
                            " softmax heads)");
  if (c.scoring == core::Scoring::Additive) return {};  // no bilinear form
  if (c.latent) {  // the non-rotated parts through the latent (analysis/latent_reading.h)
    const auto r = latent.query.defined() ? latent : latent_reading(a);
    const int64_t dN = c.key_size - c.latent->rope_size;
    return {r.query.narrow(1, head * dN, dN), r.key.narrow(1, head * dN, dN)};
  }
  const auto WQ = as_columns(a.q), WK = as_columns(a.k);  // [D, width]
  if (c.collaborative) {
    // Cordonnier et al. 2020: B_h = W̃_Q diag(m_h) W̃_Kᵀ.
    return {WQ * f64(a.mix[head]).unsqueeze(0), WK};
  }
  const int64_t dk = c.key_size;
  // qk_norm: q̂ᵀk̂ = qᵀ diag(w_q ⊙ w_k) k / (rms(q) rms(k)); up to that positive per-pair factor the
  // form is W_Q diag(w_q ⊙ w_k) W_Kᵀ, with each norm's scale offset + w (Gemma 3 stores offsets from 1).
  // A logit soft-cap (a monotone function of the logit) does not enter the form.
  torch::Tensor WQ_scaled = WQ;
  if (c.qk_norm) {
    const double offset = c.qk_norm_weight_offset;
    const auto wq = f64(a.q_norm) + offset, wk = f64(a.k_norm) + offset;
    // Per head: the same [d_k] weights in every head; whole projections (OLMo 2): each query head's
    // slice times its key head's slice.
    const auto per_query = c.qk_norm_whole ? wq * wk.view({c.kv_heads, dk}).repeat_interleave(c.heads / c.kv_heads, 0).reshape({-1})
                                           : (wq * wk).repeat({c.heads});
    WQ_scaled = WQ * per_query.unsqueeze(0);
  }
  if (c.talking_heads) {
    // Shazeer et al. 2020: L_h = Σ_k P_l[k, h] J_k, so B_h = Σ_k P_l[k, h] W_Q^k W_K^kᵀ = (W_Q · diag(P_l[:, h] ⊗ 1_{d_k})) W_Kᵀ.
    auto weights = f64(a.pre_mix).select(1, head).repeat_interleave(dk);  // [h_k·d_k]
    return {WQ_scaled * weights.unsqueeze(0), WK};
  }
  const int group = c.heads / c.kv_heads;  // GQA/MQA: query head h reads kv head h / group
  return {WQ_scaled.narrow(1, head * dk, dk), WK.narrow(1, (head / group) * dk, dk)};
}

// Singular values of A Cᵀ ([D, D]) from its factors. With r < D: A = Q_A R_A, C = Q_C R_C, so
// A Cᵀ = Q_A (R_A R_Cᵀ) Q_Cᵀ has the singular values of the r×r core, plus D − r zeros.
Spectrum factored_spectrum(const torch::Tensor& A, const torch::Tensor& C) {
  const int64_t D = A.size(0), r = A.size(1);
  if (r >= D) return spectrum_of(torch::matmul(A, C.t()));
  auto RA = std::get<1>(at::linalg_qr(A, "reduced"));  // [r, r]
  auto RC = std::get<1>(at::linalg_qr(C, "reduced"));
  auto core_values = at::linalg_svdvals(torch::matmul(RA, RC.t())).contiguous();
  std::vector<double> values(core_values.data_ptr<double>(), core_values.data_ptr<double>() + r);
  values.resize(D, 0.0);
  return spectrum_from_singular_values(std::move(values));
}

Spectrum not_applicable() {
  Spectrum s;
  s.applicable = false;
  return s;
}

LayerSpectra layer_spectra(core::AttentionImpl& a, core::Stack stack, int layer) {
  const auto& c = a.config();
  LayerSpectra out;
  out.stack = stack;
  out.layer = layer;
  const LatentReading r = latent_reading(a);  // undefined without a latent
  for (int h = 0; h < c.softmax_heads(); ++h) {
    auto [A, C] = head_factors(a, h, r);
    out.heads.push_back(A.defined() ? factored_spectrum(A, C) : not_applicable());
  }
  if (c.latent) {
    out.note = kLatentNote;
    out.query = spectrum_of(r.query);
    out.key = spectrum_of(r.key);
    out.product = factored_spectrum(r.query, r.key);
    return out;
  }
  if (c.disentangled) out.note = kDisentangledNote;
  const auto WQ = as_columns(a.q), WK = as_columns(a.k);
  out.query = spectrum_of(WQ);
  out.key = spectrum_of(WK);
  if (c.scoring == core::Scoring::Additive) {
    out.product = not_applicable();
  } else {
    // GQA/MQA: W_Q K_repᵀ, with each kv head's key columns repeated for its group of query heads,
    // equals (W_Q summed over each group's query heads) W_Kᵀ — a factorisation of width
    // kv_heads·d_k instead of heads·d_k, with the same singular values (an 8B layer: 1,024 wide
    // factors of a 4096² product instead of the product's SVD). Otherwise the widths already match.
    const bool shared_kv = !c.collaborative && !c.talking_heads && c.kv_heads != c.heads;
    const int64_t D = WQ.size(0);
    out.product = shared_kv ? factored_spectrum(WQ.view({D, c.kv_heads, c.heads / c.kv_heads, c.key_size})
                                                    .sum(2)
                                                    .reshape({D, int64_t(c.kv_heads) * c.key_size}),
                                                WK)
                            : factored_spectrum(WQ, WK);
  }
  return out;
}

}  // namespace

Spectrum spectrum_from_singular_values(std::vector<double> singular_values) {
  for (double v : singular_values)
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("singular values must be finite and >= 0");
  std::sort(singular_values.begin(), singular_values.end(), std::greater<double>());
  Spectrum s;
  s.singular_values = std::move(singular_values);
  const size_t n = s.singular_values.size();
  double total = 0;
  for (double v : s.singular_values) total += v * v;
  s.cumulative_energy.assign(n, 1.0);
  if (total <= 0) return s;  // zero matrix: every rank 0
  double running = 0;
  for (size_t k = 0; k < n; ++k) {
    running += s.singular_values[k] * s.singular_values[k];
    s.cumulative_energy[k] = running / total;
  }
  // Smallest k (1-based) whose cumulative energy reaches p; a hair of slack for rounding.
  auto rank_at = [&](double p) {
    for (size_t k = 0; k < n; ++k)
      if (s.cumulative_energy[k] >= p - 1e-12) return static_cast<int>(k + 1);
    return static_cast<int>(n);
  };
  s.rank90 = rank_at(0.90);
  s.rank95 = rank_at(0.95);
  s.rank99 = rank_at(0.99);
  return s;
}

Spectrum spectrum_of(const at::Tensor& matrix) {
  if (!matrix.defined() || matrix.dim() != 2) throw std::invalid_argument("spectrum_of: expected a 2-D tensor");
  if (matrix.numel() == 0) return spectrum_from_singular_values({});
  const auto M = f64(matrix);
  if (std::min(M.size(0), M.size(1)) >= kGramFrom) {
    // σ_i = √λ_i of the smaller Gram matrix (MᵀM or MMᵀ), eigenvalues ascending.
    const auto G = M.size(0) >= M.size(1) ? torch::matmul(M.t(), M) : torch::matmul(M, M.t());
    const auto values = at::linalg_eigvalsh(G, "L").clamp_min(0).sqrt().contiguous();
    return spectrum_from_singular_values(
        std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel()));
  }
  auto values = at::linalg_svdvals(M).contiguous();
  return spectrum_from_singular_values(
      std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + values.numel()));
}

at::Tensor key_query_form(core::Model& model, core::Stack stack, int layer, int head) {
  torch::NoGradGuard no_grad;
  auto attention = attention_of(model, stack, layer);
  auto [A, C] = head_factors(*attention, head);
  if (!A.defined()) return {};
  return torch::matmul(A, C.t());
}

std::vector<LayerSpectra> key_query_spectra(core::Model& model, const std::function<bool(int done, int total)>& progress) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<core::AttentionImpl*, std::pair<core::Stack, int>>> todo;
  for (const core::Stack stack : {core::Stack::Encoder, core::Stack::Decoder})
    for (int l = 0; l < model.module->layer_count(stack); ++l)
      todo.push_back({model.module->block(stack, l)->attn.get(), {stack, l}});
  for (int l = 0; l < model.module->layer_count(core::Stack::Decoder); ++l)
    if (auto cross = model.module->block(core::Stack::Decoder, l)->cross_attn) todo.push_back({cross.get(), {core::Stack::Cross, l}});
  std::vector<LayerSpectra> out;
  for (const auto& [attention, where] : todo) {
    out.push_back(layer_spectra(*attention, where.first, where.second));
    if (progress && !progress(static_cast<int>(out.size()), static_cast<int>(todo.size()))) break;
  }
  return out;
}

std::vector<Spectrum> logit_spectra(const core::AttentionStages& stages) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits = stages.mixed_logits.defined() ? stages.mixed_logits : stages.logits;
  if (!logits.defined())
    throw std::invalid_argument("logit_spectra: neither mixed logits nor logits were captured "
                                "(capture kCaptureLogits or kCaptureMixedLogits)");
  if (logits.dim() == 4 && logits.size(0) == 1) logits = logits.squeeze(0);
  if (logits.dim() != 3) throw std::invalid_argument("logit_spectra: expected logits [heads, T, S]");
  auto values = at::linalg_svdvals(f64(logits)).contiguous();  // [heads, min(T, S)]
  std::vector<Spectrum> out;
  const int64_t n = values.size(1);
  for (int64_t h = 0; h < values.size(0); ++h) {
    const double* row = values.data_ptr<double>() + h * n;
    out.push_back(spectrum_from_singular_values(std::vector<double>(row, row + n)));
  }
  return out;
}

}  // namespace headlab::analysis
