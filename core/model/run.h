// One forward pass: RunRequest → Trace. Captures what the request asks for, re-uses a previous
// trace's residual stream to recompute only the layers whose controls changed, reports progress
// per layer and can be cancelled between layers.
#pragma once

#include "core/model/attention.h"
#include "core/cancelled.h"
#include "core/controls.h"
#include "core/map_detail.h"
#include "core/model/model.h"
#include "core/model/patch.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace headlab::core {

// run() throws Cancelled (core/cancelled.h) when the request's cancel flag is set or its progress
// callback returns false.

// One layer's captured attention (batch dimension removed).
struct LayerTrace {
  AttentionStages self;   // [heads, T, S] / O [h_v, T, d_v]
  AttentionStages cross;  // decoder of an encoder-decoder only
  torch::Tensor mlp_out;  // kCapturePatchSites: the FFN's output as it joins the residual [T, D]
  torch::Tensor experts;  // a mixture-of-experts block: each token's experts [T, top_k] (int64, best first)
};

struct StackTrace {
  std::vector<torch::Tensor> hidden;  // [layers + 1] × [T, D]: hidden[l] is layer l's input (before a resid patch)
  std::vector<LayerTrace> layers;
  bool empty() const { return layers.empty(); }
};

struct Trace {
  std::vector<int64_t> ids;          // encoder ids (or the decoder-only model's ids)
  std::vector<int64_t> decoder_ids;  // encoder-decoder only
  std::vector<int64_t> token_types;
  ModelControls controls;
  std::vector<ActivationPatch> patches;
  unsigned capture = kCaptureNone;
  MapDetail maps;  // what the captured maps were kept at
  torch::Tensor logits;  // [P, V]: one row per logit position (decoder positions for an encoder-decoder)
  std::vector<int64_t> logit_positions;  // the P positions of `logits`; empty = every position (P = T)
  StackTrace encoder, decoder;
  // Where this trace was recomputed from (stack, layer); empty = nothing recomputed.
  std::optional<Stack> recomputed_stack;
  int recomputed_from = 0;
  int layers_computed = 0;

  // The stack that holds a decoder-only or encoder-only model's layers.
  const StackTrace& main_stack() const { return decoder.empty() ? encoder : decoder; }
};

// Called after each layer with (layers done, layers total); returning false cancels.
using ProgressFn = std::function<bool(int done, int total)>;
// Called after each computed layer with its captured stages at full size (batch removed), before
// they are pooled (RunRequest::maps): for a measure that reads every layer's whole map once
// (rollout) in a run that keeps only thumbnails. (stack, layer, stages); cross-attention comes as
// Stack::Cross.
using LayerFn = std::function<void(Stack stack, int layer, const AttentionStages& stages)>;

struct RunRequest {
  std::vector<int64_t> ids;
  std::vector<int64_t> decoder_ids;  // encoder-decoder: the decoder's input ids
  std::vector<int64_t> token_types;  // optional, BERT-style segments
  ModelControls controls;
  // Activations taken from another run of the same length (core/model/patch.h). With `previous`,
  // a layer whose patches differ counts as changed, like one whose controls differ.
  std::vector<ActivationPatch> patches;
  // Keep the autograd graph (no inference mode): the logits and captured stages can be
  // differentiated, e.g. with respect to a patch's weight (attribution patching).
  bool differentiable = false;
  unsigned capture = kCaptureWeights | kCaptureMixedWeights | kCaptureResidual;
  // Thumbnails instead of full maps, but for one layer (core/map_detail.h). With `previous`, a
  // change of the full layer alone re-runs just that layer's block from its kept input (and pools
  // the one kept before): a view opening another layer costs one layer, not a forward.
  MapDetail maps;
  // Positions whose logits to compute (the LM head is per position); empty = every position. A
  // live view that shows one position skips the rest of the [T, V] head.
  std::vector<int64_t> logit_positions;
  // When set and compatible (same ids, capture, thumbnail side; residuals kept), only layers from
  // the first one whose controls differ are recomputed (equal to a full run); no layer changed but
  // the logit positions did: only the head runs again; only maps.full_layer: that one layer.
  std::shared_ptr<const Trace> previous;
  ProgressFn progress;
  LayerFn on_layer;
  const std::atomic<bool>* cancel = nullptr;
};

// Runs the model in inference mode on the calling thread.
std::shared_ptr<const Trace> run(Model& model, const RunRequest& request);

// The weights that multiply the values: U (== W unless something mixes after the softmax).
inline const torch::Tensor& value_weights(const AttentionStages& s) {
  return s.mixed_weights.defined() ? s.mixed_weights : s.weights;
}

}  // namespace headlab::core
