// The training forward pass: embed → blocks (causal for decoders, key padding) → head, with
// autograd, in train mode. Logits are computed only where a label is set (for MLM that skips
// ~85% of the vocabulary projection).
#pragma once

#include "core/train/data.h"
#include "core/transformer.h"

namespace headlab::core::train {

struct LossResult {
  torch::Tensor loss;   // scalar: mean cross-entropy over labelled positions
  int64_t targets = 0;  // labelled positions
  int64_t correct = 0;  // top-1 hits among them
};

// Hidden states after the last block of the stack that feeds the LM head: [B, T, D].
torch::Tensor forward_hidden(Transformer& model, const Batch& batch);

// Loss and top-1 accuracy of one batch (grad enabled unless the caller disables it).
LossResult batch_loss(Transformer& model, const Batch& batch);

}  // namespace headlab::core::train
