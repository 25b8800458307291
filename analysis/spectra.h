// Eigen-spectra of attention's key-query forms (Cordonnier et al. 2020, Fig. 1; Bhojanapalli et
// al. 2020, the low-rank bottleneck): head i's scores are x_tᵀ B_i x_s with B_i = W_Q^i W_K^iᵀ
// ([D, D], the effective bilinear form), whose singular values say how many directions the head
// really uses. No data needed: the spectra come from the weights.
//
// Per variant, the form of softmax head h:
//   MHA/MQA/GQA:    W_Q^h W_K^{g(h)}ᵀ with g(h) the kv head it reads (h / (heads / kv_heads));
//   decoupled key size: the same, with d_k columns;
//   talking heads:  Σ_k P_l[k, h] W_Q^k W_K^kᵀ over the h_k key heads (the pre-softmax mix);
//   collaborative:  W̃_Q diag(m_h) W̃_Kᵀ;
//   additive scoring has no bilinear form: its heads get no spectrum (`applicable` false);
//   qk_norm (per-head RMSNorm of q and k, Qwen3): W_Q diag(w_q ⊙ w_k) W_Kᵀ, the form up to the
//   positive factor 1 / (rms(q) rms(k)) of each query-key pair.
// RoPE models: the rotation depends on the offset t − s; the form computed is the one at offset 0
// (no rotation), which is what the spectrum means there. The logit scale is left out (it scales
// every singular value alike), and so are the biases (query/key biases, the collaborative content
// bias r_i): they add terms linear in x_t or x_s, not part of the bilinear form.
// Every form is a product A Cᵀ of two [D, r] factors (r = d_k, h_k·d_k or D̃_k); when r < D the
// singular values come from the r×r core R_A R_Cᵀ of their QR factorisations (the other D − r are
// exactly 0), which is far cheaper than an SVD of the [D, D] form.
#pragma once

#include "core/controls.h"

#include <string>
#include <functional>
#include <vector>

namespace at {
class Tensor;
}

namespace headlab::core {
struct Model;
struct AttentionStages;
}  // namespace headlab::core

namespace headlab::analysis {

struct Spectrum {
  std::vector<double> singular_values;    // descending
  std::vector<double> cumulative_energy;  // Σ_{j≤k} σ_j² / Σ σ², same length
  int rank90 = 0, rank95 = 0, rank99 = 0;  // smallest k with cumulative energy ≥ 0.90 / 0.95 / 0.99
  bool applicable = true;                  // false where the form does not exist (additive scoring)
  // A head's form that is zero or negligible beside its layer's others (analysis/spectrum_curves.h):
  // its ranks describe rounding noise, so reports leave them out. Set by the head report.
  bool negligible = false;
};

// Singular values of a 2-D tensor (float64; a large one through its Gram matrix) and their energy ranks.
Spectrum spectrum_of(const at::Tensor& matrix);

// The energy ranks of given singular values (any order; sorted descending in the result). Values
// must be finite and ≥ 0 (std::invalid_argument otherwise). All zero (or none): every cumulative
// energy is 1 and every rank 0 — nothing to explain.
Spectrum spectrum_from_singular_values(std::vector<double> singular_values);

struct LayerSpectra {
  core::Stack stack = core::Stack::Encoder;           // "encoder", "decoder" or "cross"
  int layer = 0;
  std::vector<Spectrum> heads;  // one per softmax head
  // The layer as a whole, as the paper's figure: the concatenated W_Q [D, h·d_k], W_K [D, h_kv·d_k]
  // and their product W_Q W_Kᵀ = Σ_i W_Q^i W_K^{g(i)}ᵀ over the heads (kv heads repeated as the
  // queries read them). Talking heads: the h_k key heads, unmixed. Collaborative: the shared
  // W̃_Q, W̃_K [D, D̃_k] and W̃_Q W̃_Kᵀ. Additive scoring: `product` is not applicable.
  Spectrum query, key, product;
  std::string note;  // what the forms leave out, where they are not the whole logit (latent, disentangled attention)
};

// The sentence the analyses show beside a disentangled (DeBERTa) layer's forms.
inline constexpr const char* kDisentangledNote =
    "disentangled attention: the key-query forms are the content-to-content term W_Q^h W_K^hᵀ; the "
    "content-to-position and position-to-content terms (each query and key against the relative-position "
    "table) depend on the distance and are not in them";

// Every attention layer of the model: the encoder's self-attention layers, then the decoder's, then
// the decoder's cross-attention layers (stack "cross").
// `progress(done, total)` after each layer (an 8B model's 4096² projections take seconds a layer);
// returning false stops, with the layers done so far.
std::vector<LayerSpectra> key_query_spectra(core::Model& model,
                                            const std::function<bool(int done, int total)>& progress = {});

// The effective key-query form B of one softmax head: [D, D] (float64), undefined for additive scoring.
// `stack` is "encoder", "decoder" or "cross" (the decoder's cross-attention). Throws
// std::out_of_range for a layer or head that does not exist, std::invalid_argument for a stack.
at::Tensor key_query_form(core::Model& model, core::Stack stack, int layer, int head);

// For one input: the singular values of each softmax head's T×S logit matrix (the mixed logits L
// when captured, else J; mask not applied). With key size d_k < T the rank is at most d_k.
// Takes core::run's stages ([heads, T, S]; a leading batch of 1 is accepted too); throws
// std::invalid_argument when neither L nor J was captured.
std::vector<Spectrum> logit_spectra(const core::AttentionStages& stages);

}  // namespace headlab::analysis
