// Several inputs in one forward pass: each weight matrix is read once for the whole batch instead
// of once per input. On a model whose weights are streamed from memory for every pass (an 8B
// folder mapped as stored: 16 GB a pass), that is what a dataset analysis spends its time on.
#pragma once

#include "core/model/run.h"

#include <memory>
#include <vector>

namespace headlab::core {

// Runs every request in one padded batch (right padding; the padded keys masked, the padded
// queries dropped) and returns one trace per request, each as core::run would return it up to
// floating-point summation order (a batch multiplies larger matrices). The requests must share
// their controls and capture; no patches, `previous`, on_layer, token types, differentiable runs or
// mean ablations over the input's own positions; logits only at each request's `logit_positions`
// (which must be given). A batch of one is core::run itself. Memory is checked for the whole batch
// before it starts (core/memory_budget.h). Maps are captured whole (MapDetail is not applied).
std::vector<std::shared_ptr<const Trace>> run_batch(Model& model, const std::vector<RunRequest>& requests);

}  // namespace headlab::core
