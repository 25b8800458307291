#include "core/model/run_batch.h"

#include "core/memory_budget.h"
#include "core/model/device.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace headlab::core {
namespace {

// [B, T] int64 ids, right-padded with `fill`, and the padding mask [B, T] (true = padding).
std::pair<torch::Tensor, torch::Tensor> padded(const std::vector<const std::vector<int64_t>*>& rows, int64_t T,
                                               const Model& model) {
  const int64_t B = static_cast<int64_t>(rows.size());
  auto ids = torch::zeros({B, T}, torch::kLong);
  auto pad = torch::ones({B, T}, torch::kBool);
  for (int64_t b = 0; b < B; ++b) {
    const auto& r = *rows[size_t(b)];
    const int64_t n = static_cast<int64_t>(r.size());
    ids[b].narrow(0, 0, n).copy_(torch::tensor(r, torch::kLong));
    pad[b].narrow(0, 0, n).fill_(false);
  }
  const torch::Device device = model_device(model);
  return {ids.to(device), pad.to(device)};
}

// Sentence b's part of a batch's stages: queries [0, T), keys [0, S).
AttentionStages slice(const AttentionStages& s, int64_t b, int64_t T, int64_t S) {
  auto maps = [&](const torch::Tensor& t) {  // [B, h, Tmax, Smax] → [h, T, S]
    return t.defined() ? t[b].narrow(1, 0, T).narrow(2, 0, S) : t;
  };
  auto rows = [&](const torch::Tensor& t) {  // [B, h, Tmax, d] → [h, T, d]
    return t.defined() ? t[b].narrow(1, 0, T) : t;
  };
  AttentionStages out;
  out.logits = maps(s.logits);
  out.mixed_logits = maps(s.mixed_logits);
  out.weights = maps(s.weights);
  out.mixed_weights = s.mixed_weights.defined() && s.weights.defined() &&
                              s.mixed_weights.unsafeGetTensorImpl() == s.weights.unsafeGetTensorImpl()
                          ? out.weights
                          : maps(s.mixed_weights);
  out.sink_share = s.sink_share.defined() ? s.sink_share[b].narrow(1, 0, T) : s.sink_share;
  out.head_outputs = rows(s.head_outputs);
  out.gated_outputs = rows(s.gated_outputs);
  return out;
}

// Runs one stack over the batch, filling each trace's layers (and hidden states when captured).
torch::Tensor run_stack(Model& model, Stack stack, torch::Tensor h, BlockCall call, const RunRequest& first,
                        const std::vector<int64_t>& lengths, const std::vector<int64_t>& key_lengths,
                        std::vector<std::shared_ptr<Trace>>& traces) {
  auto& module = model.module;
  const int layers = module->layer_count(stack);
  call.capture = first.capture & ~unsigned(kCapturePatchSites);
  call.rope = module->rope_tables(h.size(1), stack);
  for (auto& t : traces) {
    StackTrace& st = stack == Stack::Encoder ? t->encoder : t->decoder;
    st.layers.resize(layers);
    if (first.capture & kCaptureResidual) st.hidden.resize(layers + 1);
  }
  auto keep_hidden = [&](int l) {
    if (!(first.capture & kCaptureResidual)) return;
    for (size_t b = 0; b < traces.size(); ++b) {
      StackTrace& st = stack == Stack::Encoder ? traces[b]->encoder : traces[b]->decoder;
      st.hidden[size_t(l)] = h[int64_t(b)].narrow(0, 0, lengths[b]);
    }
  };
  for (int l = 0; l < layers; ++l) {
    keep_hidden(l);
    call.self_controls = &first.controls.get(stack, l);
    call.cross_controls = &first.controls.get(Stack::Cross, l);
    AttentionStages self, cross;
    torch::Tensor experts;
    call.routing_capture = &experts;
    h = module->block(stack, l)->forward(h, call, &self, &cross);
    for (size_t b = 0; b < traces.size(); ++b) {
      LayerTrace& lt = (stack == Stack::Encoder ? traces[b]->encoder : traces[b]->decoder).layers[size_t(l)];
      lt.self = slice(self, int64_t(b), lengths[b], lengths[b]);
      if (cross.weights.defined() || cross.logits.defined()) lt.cross = slice(cross, int64_t(b), lengths[b], key_lengths[b]);
      if (experts.defined()) lt.experts = experts[int64_t(b)].narrow(0, 0, lengths[b]);
    }
    if (first.cancel && first.cancel->load()) throw Cancelled();
    if (first.progress && !first.progress(l + 1, layers)) throw Cancelled();
  }
  keep_hidden(layers);
  return h;
}

bool same_controls(const ModelControls& a, const ModelControls& b) {
  for (const Stack stack : kStacks) {
    const size_t n = std::max(a.layers(stack).size(), b.layers(stack).size());
    for (size_t l = 0; l < n; ++l)
      if (a.get(stack, static_cast<int>(l)) != b.get(stack, static_cast<int>(l))) return false;
  }
  return true;
}

}  // namespace

std::vector<std::shared_ptr<const Trace>> run_batch(Model& model, const std::vector<RunRequest>& requests) {
  if (requests.empty()) return {};
  const RunRequest& first = requests.front();
  const auto& config = model.config;
  const bool enc_dec = config.kind == StackKind::EncoderDecoder;
  int64_t T = 0, T_dec = 0;
  for (const auto& r : requests) {
    if (r.ids.empty()) throw std::invalid_argument("run_batch: a request has no ids");
    if (enc_dec && r.decoder_ids.empty()) throw std::invalid_argument("run_batch: an encoder-decoder needs decoder ids");
    if (!r.patches.empty() || r.previous || r.on_layer || r.differentiable || !r.token_types.empty())
      throw std::invalid_argument("run_batch: patches, previous traces, layer callbacks, token types and differentiable "
                                  "runs take core::run, one input at a time");
    if (r.capture != first.capture || !same_controls(r.controls, first.controls))
      throw std::invalid_argument("run_batch: the requests of a batch share their capture and controls");
    if (r.logit_positions.empty()) throw std::invalid_argument("run_batch: give each request its logit positions");
    const size_t out_len = enc_dec ? r.decoder_ids.size() : r.ids.size();
    for (int64_t p : r.logit_positions)
      if (p < 0 || static_cast<size_t>(p) >= out_len)
        throw std::invalid_argument("run_batch: logit position " + std::to_string(p) + " is outside 0.." +
                                    std::to_string(out_len - 1));
    T = std::max<int64_t>(T, static_cast<int64_t>(r.ids.size()));
    T_dec = std::max<int64_t>(T_dec, static_cast<int64_t>(r.decoder_ids.size()));
  }
  // A mean ablation without dataset means averages each head's output over the input's positions:
  // in a batch the padded positions would join that mean.
  for (const Stack stack : kStacks)
    for (const auto& c : first.controls.layers(stack))
      if (c.ablation == Ablation::Mean && c.mean_outputs.empty() && !c.is_default())
        throw std::invalid_argument("run_batch: a mean ablation over the input's own positions takes core::run, one "
                                    "input at a time");
  if (requests.size() == 1) return {run(model, first)};  // the same checks passed: the plain run
  c10::InferenceMode inference;
  const int64_t B = static_cast<int64_t>(requests.size());
  // Refuse before allocating: one input's estimate at the longest length, times the batch.
  MemoryEstimate one = estimate_run_memory(config, T, T_dec, first.capture, 1);
  MemoryEstimate all;
  all.captured = one.captured * B;
  all.working = one.working * B;
  all.maps = one.maps * B;
  check_run_memory(all, model, "this batch of " + std::to_string(B) + " inputs", std::max(T, T_dec));

  std::vector<std::shared_ptr<Trace>> traces;
  std::vector<const std::vector<int64_t>*> enc_rows, dec_rows;
  std::vector<int64_t> enc_len, dec_len;
  for (const auto& r : requests) {
    auto t = std::make_shared<Trace>();
    t->ids = r.ids;
    t->decoder_ids = r.decoder_ids;
    t->controls = r.controls;
    t->capture = r.capture;
    t->logit_positions = r.logit_positions;
    traces.push_back(t);
    enc_rows.push_back(&r.ids);
    enc_len.push_back(static_cast<int64_t>(r.ids.size()));
    dec_rows.push_back(enc_dec ? &r.decoder_ids : &r.ids);
    dec_len.push_back(static_cast<int64_t>(dec_rows.back()->size()));
  }
  auto& module = model.module;
  const auto [ids, padding] = padded(enc_rows, T, model);
  torch::Tensor memory, h;
  Stack head_stack = Stack::Encoder;
  if (module->layer_count(Stack::Encoder) > 0) {
    BlockCall call;
    call.padding = padding;
    memory = run_stack(model, Stack::Encoder, module->embed(ids), call, first, enc_len, enc_len, traces);
    h = memory;
  }
  if (module->layer_count(Stack::Decoder) > 0) {
    BlockCall call;
    call.causal = true;
    torch::Tensor dec_ids = ids;
    call.padding = padding;
    if (enc_dec) {
      auto [d_ids, d_pad] = padded(dec_rows, T_dec, model);
      dec_ids = d_ids;
      call.padding = d_pad;
      if (module->encoder_final_norm) memory = module->encoder_final_norm(memory);
      call.memory = memory;
      call.memory_padding = padding;
    }
    h = run_stack(model, Stack::Decoder, module->embed(dec_ids, {}, false, 0, Stack::Decoder), call, first, dec_len,
                  enc_len, traces);
    head_stack = Stack::Decoder;
  }
  std::vector<std::shared_ptr<const Trace>> out;
  for (size_t b = 0; b < traces.size(); ++b) {
    const auto index = torch::tensor(requests[b].logit_positions, torch::kLong).to(h.device());
    traces[b]->logits = module->head(h[int64_t(b)].index_select(0, index).unsqueeze(0), head_stack).squeeze(0);
    out.push_back(traces[b]);
  }
  return out;
}

}  // namespace headlab::core
