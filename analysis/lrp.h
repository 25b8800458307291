// Layer-wise relevance propagation for heads and input tokens, by the rules in analysis/LRP.md
// (Ali et al. 2022, conservative propagation; Achtibat et al. 2024, AttnLRP): one backward pass of
// gradient × input through a forward pass whose attention weights, normalisation denominators and
// activation ratios are constants. Also head importance (Michel et al. 2019), which is the same
// gradient × head-output product taken on the ordinary forward pass and the model's loss.
#pragma once

#include "core/controls.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

// What f is: a logit at one position. position < 0: the default (analysis/LRP.md): the first masked position
// of a masked LM (the last position when the input has no mask token), the last position of a causal
// model or of an encoder-decoder's decoder. token < 0: the top-1 token at that position.
struct LrpTarget {
  int64_t position = -1;
  int64_t token = -1;
};

// Per-head numbers of one model, by stack (an encoder-decoder's cross-attention included); each
// [layers][output heads].
using HeadValues = std::map<core::Stack, std::vector<std::vector<double>>>;

struct LrpResult {
  int64_t position = 0;  // resolved target position (decoder position for an encoder-decoder)
  int64_t token = 0;     // resolved target token id
  double target = 0;     // f, the logit explained
  HeadValues heads;      // raw R_i = Σ_{t,d} O_i[t,d] · ∂f/∂O_i[t,d] (analysis/LRP.md "Head relevance")
  std::vector<double> input;          // [T] relevance of each input position (encoder input for enc-dec)
  std::vector<double> decoder_input;  // [T_dec] encoder-decoder only
  double bias = 0;                    // Σ over every additive bias b of ⟨b, ∂f/∂b⟩
  double residual = 0;                // |Σ input + Σ decoder_input + bias − f|
  double relative_residual() const;   // residual / |f| (|f| = 0: residual)
};

// Runs the LRP forward and backward pass for one input. `ids` are the (encoder) input ids;
// `decoder_ids` only for an encoder-decoder. "Input" relevance is taken at the token embedding rows
// E[id_t] (summed over features); positions, token types, the sinusoid table, every *bias parameter
// and the constant (1 − g_i)·mean_i of a head ablated towards a dataset mean are the additive
// constants in `bias`. Thread-safe for distinct models. Throws
// std::invalid_argument for a target outside the input or the vocabulary.
LrpResult lrp_relevance(core::Model& model, const std::vector<int64_t>& ids, const LrpTarget& target = {},
                        const core::ModelControls& controls = {}, const std::vector<int64_t>& decoder_ids = {});

// The same pass and bookkeeping on the unmodified forward: plain gradient × input, no LRP rules.
// Its conservation residual is generally far from 0 (the softmax, norms and activations are not
// linear); it exists to show what the rules fix.
LrpResult gradient_x_input(core::Model& model, const std::vector<int64_t>& ids, const LrpTarget& target = {},
                           const core::ModelControls& controls = {}, const std::vector<int64_t>& decoder_ids = {});

// Voita et al. 2019 §4: R_i / Σ_j |R_j| within each layer (a layer whose relevances are all 0 stays 0).
HeadValues normalize_per_layer(const HeadValues& raw);

struct ImportanceResult {
  HeadValues heads;     // |∂loss/∂g_i| at g = 1 for this input (Michel et al. 2019, eq. for I_h)
  double loss = 0;      // the loss differentiated
  int64_t targets = 0;  // how many positions the loss averages over
};

// Michel et al. 2019: the sensitivity of the loss to each head's gate, |∂L/∂g_i|, at the model's
// controls (gates 1 unless `controls` set them). The loss is the model's own objective on this input:
// causal models and decoders the mean next-token cross-entropy; masked LMs the mean cross-entropy of
// the original tokens at the positions in `mask_positions` after replacing them with the mask token
// (every 7th non-special position starting at the 3rd when `mask_positions` is empty).
ImportanceResult head_importance(core::Model& model, const std::vector<int64_t>& ids,
                                 const core::ModelControls& controls = {},
                                 const std::vector<int64_t>& mask_positions = {},
                                 const std::vector<int64_t>& decoder_ids = {});

}  // namespace headlab::analysis
