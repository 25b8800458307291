// Direct logit attribution and the logit lens (nostalgebraist 2020; Elhage et al. 2021), at one
// position of a run:
//   DLA: the final residual stream is the sum of the embedding, every head's output and every FFN's
//   output (and the output biases); each term, taken through the final norm with the norm's scale
//   from this run as TransformerLens's apply_ln_to_stack does (centred for a LayerNorm, divided by
//   the run's scale, times the norm's weight γ, its bias left out), dotted with
//   W_U[answer] − W_U[wrong], is that component's direct share of the logit difference.
//   Logit lens: the residual stream after each layer through the final norm and the LM head.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace headlab::core {
struct Model;
struct Trace;
}  // namespace headlab::core

namespace headlab::analysis {

struct LensRow {
  int layer = 0;                 // the stream after `layer` layers (0: the embeddings)
  double value = 0;              // its logit difference (or the answer's logit without a wrong token)
  std::vector<std::pair<int64_t, double>> top;  // its most likely next tokens (id, probability)
};

struct LogitAttribution {
  int64_t position = 0;
  int64_t answer = 0, wrong = -1;  // wrong = −1: the answer's logit alone
  double value = 0;   // the run's logit difference (or logit) at the position
  double scale = 1;   // the final norm's scale at the position (1 without a final norm)
  double embed = 0;   // the embeddings' share
  std::vector<std::vector<double>> heads;  // [layer][head] each head's share
  std::vector<double> mlps;                // [layer] each FFN's share (empty for an attention-only model)
  double biases = 0;  // the attention output biases and FFN biases, folded into the residual
  double rest = 0;    // value − the shares above: the final norm's bias and the LM head's bias
  std::vector<LensRow> lens;  // layers 0 … L
  std::vector<std::string> notes;
};

// `trace` must be a run of `model` capturing kCaptureHeadOutputs | kCaptureResidual |
// kCapturePatchSites (core/controls.h) with the logits of every position. Throws
// std::invalid_argument for a model whose residual stream is not a sum of its components at the
// head (post-LN, sandwich norms, an LM-head transform, an encoder-decoder), and for a position or
// token outside the run or the vocabulary.
LogitAttribution logit_attribution(core::Model& model, const core::Trace& trace, int64_t position, int64_t answer,
                                   int64_t wrong, int top = 5);

}  // namespace headlab::analysis
