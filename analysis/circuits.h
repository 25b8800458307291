// Weight circuits of a model, no data needed (Elhage et al. 2021, "A mathematical framework for
// transformer circuits"): each head's OV matrix W_V^h W_O^h in the row-vector convention (the
// residual x reads x W_V), folded as TransformerLens's fold_layer_norm folds it, and the eigenvalues
// of its full circuit W_E W_V^h W_O^h W_U with the copying score they give.
//
// Folding (analysis/circuit_weights.h): the weight γ of the norm before attention scales the rows of
// W_V (after a LayerNorm, not an RMSNorm, W_V is then centred along the model dimension); W_U likewise
// with the final norm's γ. Nothing else is centred; biases and RoPE are left out. W_E is the token embedding as stored
// (through the projection of factorised embeddings); W_U the LM head's decoder matrix (tied: W_Eᵀ),
// an LM-head transform (BERT's dense, activation and norm) left out as TransformerLens leaves it.
#pragma once

#include "core/controls.h"

#include <complex>
#include <optional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

struct OvCircuit {
  core::Stack stack = core::Stack::Encoder;
  int layer = 0, head = 0;  // an output head (talking heads: a value head)
  // The nonzero eigenvalues of W_E W_V W_O W_U, as the d_v eigenvalues of the cyclic product
  // W_O W_U W_E W_V [d_v, d_v], largest |λ| first.
  std::vector<std::complex<double>> eigenvalues;
  // Re(Σλ) / Σ|λ|: 1 for a head that copies its token to the output, −1 for one that suppresses it.
  std::optional<double> copying;
};

struct OvCircuits {
  std::vector<OvCircuit> heads;    // the heads whose output reaches the LM head directly
  std::vector<std::string> notes;  // what was left out, and why
};

// Every head of the stack whose output reaches the LM head (a decoder-only or encoder-only model's
// stack; an encoder-decoder's decoder self-attention). An encoder-decoder's encoder and
// cross-attention heads write into a stream the LM head reads only through other heads: they are
// left out, and the notes say so; so is every head of a model whose W_U cannot follow its heads
// (a transform into a narrower embedding space).
OvCircuits ov_circuits(core::Model& model);
// The same from weights already read (composition_scores reads them once for both).
struct CircuitWeights;
OvCircuits ov_circuits(const CircuitWeights& weights);

}  // namespace headlab::analysis
