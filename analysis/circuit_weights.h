// A model's heads as weight circuits (Elhage et al. 2021, "A mathematical framework for transformer
// circuits"), in the row-vector convention (the residual x reads x W_Q), folded as TransformerLens's
// fold_layer_norm folds them: the weight γ of the norm before attention scales the rows of W_Q, W_K
// and W_V, and after a LayerNorm (not an RMSNorm) those reading matrices are centred along the model
// dimension; W_U likewise with the final norm. Nothing else is centred; biases and RoPE are left out.
// The one copy of that folding: ov_circuits (analysis/circuits.h) and composition_scores
// (analysis/composition.h) read it from here.
//
// Each circuit is kept factored, P · M · Sᵀ with P [D, a], M [a, b], S [D, b] (M undefined = the
// identity), so that norms and products of D × D circuits cost d_head-sized work.
#pragma once

#include "core/controls.h"

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

// P · M · Sᵀ, batched over heads: P [H, D, a], M [H, a, b] or undefined (identity, a = b), S [H, D, b].
struct Factored {
  torch::Tensor P, M, S;
  int64_t heads() const { return P.size(0); }
  // ‖P M Sᵀ‖_F per head [H], as sqrt(tr(PᵀP · M · SᵀS · Mᵀ)).
  torch::Tensor frobenius() const;
  // The dense matrices [H, D, D] (for tests and small models).
  torch::Tensor dense() const;
};

// One layer's heads.
struct LayerCircuits {
  // QK circuit W_Q^h M^h W_K^hᵀ of each softmax head (talking heads: Σ_i P_l[i, h] W_Q^i W_K^iᵀ;
  // collaborative: W̃_Q diag(m_h) W̃_Kᵀ; GQA/MQA: the query head's shared key head). Undefined where
  // the scores are not bilinear in the residual (additive scoring).
  std::optional<Factored> qk;
  // OV circuit W_V^h W_O^h of each output head (GQA/MQA: the head's shared value head):
  // P = W_V^h [D, d_v], M identity, S = W_O^hᵀ [D, d_v].
  Factored ov;
};

struct CircuitWeights {
  core::Stack stack = core::Stack::Encoder;  // the stack whose heads reach the LM head
  std::vector<LayerCircuits> layers;
  // [D, D] float64: W_U W_E, the LM head's decoder matrix [D, V] (folded with the final norm) times the
  // token embeddings [V, D] (through a factorised embedding's projection), summed over blocks of the
  // vocabulary so neither [V, D] matrix exists in float64 (an 8B model's would be 4.2 GB each).
  // Undefined when the LM head reads a space narrower than the stream (a transform into factorised
  // embeddings).
  torch::Tensor unembed_embed;
  // What was folded or left out, and why (without a prefix: each user names its circuits); notes
  // about the QK circuits alone in qk_notes.
  std::vector<std::string> notes, qk_notes;
};

// Reads and folds the weights of `model`'s main stack (a decoder-only or encoder-only model's one
// stack; an encoder-decoder's decoder self-attention, with a note), in float64 on the CPU.
CircuitWeights circuit_weights(core::Model& model);

}  // namespace headlab::analysis
