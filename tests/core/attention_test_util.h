// Shared by the attention tests: one attention module run with every stage captured.
#pragma once

#include "core/model/attention.h"

#include <torch/torch.h>

namespace headlab::test {

struct EngineResult {
  torch::Tensor out;             // [B, T, D]
  core::AttentionStages stages;  // every stage (kCaptureAll)
};

// `call` names the inputs, mask and controls; the capture is set to every stage.
inline EngineResult run_attention(core::Attention& a, core::AttentionCall call) {
  call.capture = core::kCaptureAll;
  EngineResult r;
  r.out = a->forward(call, &r.stages);
  return r;
}

}  // namespace headlab::test
