// The training forward pass: embed → blocks (causal for decoders, key padding) → head, with
// autograd, in train mode. Logits are computed only where a label is set (for MLM that skips
// ~85% of the vocabulary projection).
#pragma once

#include "core/train/data.h"
#include "core/model/transformer.h"

#include <vector>

namespace headlab::core::train {

struct LossResult {
  torch::Tensor loss;   // scalar: mean cross-entropy over labelled positions
  int64_t targets = 0;  // labelled positions
  int64_t correct = 0;  // top-1 hits among them
};

// Differentiable head gates per attention layer (AttentionCall::head_gates): layer l of a stack
// reads encoder[l] / decoder[l] / cross[l] ([B or 1, h_v]) when present; missing or undefined = no gate.
struct HeadGateTensors {
  std::vector<torch::Tensor> encoder, decoder, cross;
};

// Hidden states after the last block of the stack that feeds the LM head: [B, T, D].
torch::Tensor forward_hidden(Transformer& model, const Batch& batch, const HeadGateTensors* gates = nullptr);

// Loss and top-1 accuracy of one batch (grad enabled unless the caller disables it).
LossResult batch_loss(Transformer& model, const Batch& batch, const HeadGateTensors* gates = nullptr);

}  // namespace headlab::core::train
