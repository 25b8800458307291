#include "app/work/relevance_run.h"

#include "analysis/lrp.h"
#include "analysis/rollout.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/tokenizer/token_lookup.h"

#include <torch/torch.h>

#include <chrono>

namespace headlab::app {

std::shared_ptr<const RelevanceResult> explain_run(core::Model& model, const core::Trace& trace, const RunInput& input,
                                                   const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  auto out = std::make_shared<RelevanceResult>();
  const bool enc_dec = !trace.decoder_ids.empty();
  analysis::LrpTarget target;
  target.position = input.relevance.position;
  target.token = input.relevance.token;
  try {
    torch::NoGradGuard no_grad_outside;  // lrp_relevance enables gradients where it needs them
    const auto lrp = analysis::lrp_relevance(model, trace.ids, target, input.controls, trace.decoder_ids);
    out->position = static_cast<int>(lrp.position);
    out->token = lrp.token;
    out->token_text = core::token_name(model.tokenizer.get(), lrp.token);
    out->target = lrp.target;
    out->bias = lrp.bias;
    out->residual = lrp.residual;
    out->relative_residual = lrp.relative_residual();
    out->input = lrp.input;
    out->decoder_input = lrp.decoder_input;
    out->heads = lrp.heads;
  } catch (const std::exception& e) {
    out->error = e.what();
    out->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return out;
  }
  // Rollout and flow over the self-attention of the stack the target is in, from the run's
  // weights W·(gates): the maps that multiply the values (Abnar & Zuidema 2020).
  const core::StackTrace& stack = enc_dec ? trace.decoder : trace.main_stack();
  out->flow_stack = enc_dec ? core::Stack::Decoder : (trace.decoder.empty() ? core::Stack::Encoder : core::Stack::Decoder);
  torch::Tensor rollout;  // [T, T] float64
  if (trace.maps.pooled()) {
    // The trace keeps thumbnails: the rollout comes from a run that hands each layer's whole maps
    // over once and keeps none of them (flow, which needs them all at once, keeps the maps whole:
    // RunInput::full_maps_budget).
    core::RunRequest again;
    again.ids = trace.ids;
    again.decoder_ids = trace.decoder_ids;
    again.token_types = trace.token_types;
    again.controls = input.controls;
    again.patches = trace.patches;
    again.capture = core::kCaptureWeights | core::kCaptureMixedWeights;
    again.maps.thumbnail_side = 1;
    again.logit_positions = {0};
    again.cancel = cancel;
    again.on_layer = [&](core::Stack s, int, const core::AttentionStages& stages) {
      if (s == out->flow_stack) rollout = analysis::rollout_step(rollout, core::value_weights(stages));
    };
    core::run(model, again);
  } else {
    std::vector<torch::Tensor> maps;
    for (const auto& layer : stack.layers) maps.push_back(core::value_weights(layer.self));
    if (!maps.empty() && maps.front().defined()) {
      rollout = analysis::attention_rollout(maps);
      // Flow solves a max-flow problem per input token (~0.3 s at 128 tokens): only when asked for.
      if (input.relevance.flow) out->flow = analysis::attention_flow(maps, out->position);
    }
  }
  if (rollout.defined()) {
    const auto row = rollout[out->position].to(torch::kFloat64).contiguous();
    out->rollout.assign(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
  }
  out->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace headlab::app
