#include "app/work/relevance_run.h"

#include "analysis/lrp.h"
#include "analysis/rollout.h"
#include "core/model/model.h"
#include "core/model/run.h"

#include <torch/torch.h>

#include <chrono>

namespace headlab::app {

std::shared_ptr<const RelevanceResult> explain_run(core::Model& model, const core::Trace& trace, const RunInput& input) {
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
    out->token_text = model.tokenizer ? model.tokenizer->id_to_token(lrp.token) : "";
    if (out->token_text.empty()) out->token_text = "#" + std::to_string(lrp.token);
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
  std::vector<torch::Tensor> maps;
  for (const auto& layer : stack.layers) maps.push_back(core::value_weights(layer.self));
  if (!maps.empty() && maps.front().defined()) {
    const auto rollout = analysis::attention_rollout(maps).to(torch::kFloat64).contiguous();  // [T, T]
    const auto row = rollout[out->position];
    out->rollout.assign(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
    // Flow solves a max-flow problem per input token (~0.3 s at 128 tokens): only when asked for.
    if (input.relevance.flow) out->flow = analysis::attention_flow(maps, out->position);
  }
  out->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace headlab::app
