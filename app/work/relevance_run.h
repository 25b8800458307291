// The Relevance view's numbers for one run (LRP input and head relevance, rollout, flow), computed
// on the worker after the run with the run's controls. Internal to app/work: declared without torch.
#pragma once

#include "app/work/workbench_engine.h"

namespace headlab::core {
struct Model;
struct Trace;
}  // namespace headlab::core

namespace headlab::app {

// Explains `trace` (the run of `input` on `model`); an impossible target (outside the input or the
// vocabulary) comes back as RelevanceResult::error, never as an exception. `cancel` stops the
// rollout's own forward pass of a run that kept thumbnails (core::Cancelled).
std::shared_ptr<const RelevanceResult> explain_run(core::Model& model, const core::Trace& trace, const RunInput& input,
                                                   const std::atomic<bool>* cancel = nullptr);

}  // namespace headlab::app
