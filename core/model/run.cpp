#include "core/model/run.h"

#include "core/memory_budget.h"
#include "core/model/device.h"
#include "core/model/map_pool.h"

#include <torch/torch.h>

namespace headlab::core {
namespace {

AttentionStages squeeze_batch(const AttentionStages& s) {
  auto squeeze = [](const torch::Tensor& t) { return t.defined() ? t.squeeze(0) : t; };
  AttentionStages out = s;
  for (torch::Tensor* t : {&out.logits, &out.mixed_logits, &out.weights, &out.sink_share, &out.mixed_weights,
                           &out.head_outputs, &out.gated_outputs, &out.queries, &out.keys, &out.values})
    *t = squeeze(*t);
  return out;
}

// The patches of (stack, layer) in `patches`.
LayerPatches patches_of(const std::vector<ActivationPatch>& patches, Stack stack, int layer) {
  LayerPatches out;
  for (const auto& p : patches)
    if (p.stack == stack && p.layer == layer) out.push_back(&p);
  return out;
}

bool same_patches(const LayerPatches& a, const LayerPatches& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_patch(*a[i], *b[i])) return false;
  return true;
}

// First layer of `stack` whose controls or patches differ between a previous trace and a request;
// `layers` if none.
int first_changed_layer(const Trace& a, const RunRequest& b, Stack stack, int layers, bool with_cross) {
  for (int l = 0; l < layers; ++l) {
    if (a.controls.get(stack, l) != b.controls.get(stack, l)) return l;
    if (with_cross && a.controls.get(Stack::Cross, l) != b.controls.get(Stack::Cross, l)) return l;
    if (!same_patches(patches_of(a.patches, stack, l), patches_of(b.patches, stack, l))) return l;
  }
  return layers;
}

struct Progress {
  const RunRequest& request;
  int total;
  int done = 0;
  void step() {
    ++done;
    if (request.cancel && request.cancel->load()) throw Cancelled();
    if (request.progress && !request.progress(done, total)) throw Cancelled();
  }
};

// Runs layers [from, to) of one stack (to < 0: to the last), starting from `input` ([1, T, D]).
torch::Tensor run_stack(Model& model, Stack stack, int from, torch::Tensor input, const RunRequest& request,
                        const torch::Tensor& memory, StackTrace& out, Progress& progress, int to = -1) {
  auto& module = model.module;
  const int layers = module->layer_count(stack);
  const int64_t T = input.size(1);
  BlockCall call;
  call.causal = stack == Stack::Decoder;
  call.memory = memory;
  call.capture = request.capture;
  call.rope = module->rope_tables(T, stack);
  out.layers.resize(layers);
  if (request.capture & kCaptureResidual) out.hidden.resize(layers + 1);
  torch::Tensor h = input;
  const int end = to < 0 ? layers : to;
  for (int l = from; l < end; ++l) {
    // hidden[l] keeps the input before this layer's resid patch, so that a later run with other
    // patches can start here.
    if (request.capture & kCaptureResidual) out.hidden[l] = h.squeeze(0);
    const LayerPatches patches = patches_of(request.patches, stack, l);
    if (!patches.empty()) h = apply_patches(h, Site::Resid, patches);
    call.patches = &patches;
    call.self_controls = &request.controls.get(stack, l);
    call.cross_controls = &request.controls.get(Stack::Cross, l);
    AttentionStages self, cross;
    torch::Tensor mlp_out, experts;
    call.mlp_capture = request.capture & kCapturePatchSites ? &mlp_out : nullptr;
    call.routing_capture = &experts;  // a mixture-of-experts block's routing: [1, T, k] int64, small
    h = module->block(stack, l)->forward(h, call, &self, &cross);
    out.layers[l].experts = experts.defined() ? experts.squeeze(0) : experts;
    out.layers[l].self = squeeze_batch(self);
    out.layers[l].cross = squeeze_batch(cross);
    if (request.on_layer) {
      request.on_layer(stack, l, out.layers[l].self);
      if (cross.weights.defined()) request.on_layer(Stack::Cross, l, out.layers[l].cross);
    }
    if (request.maps.pools(stack, l)) pool_stages(out.layers[l].self, request.maps.thumbnail_side);
    if (request.maps.pools(Stack::Cross, l)) pool_stages(out.layers[l].cross, request.maps.thumbnail_side);
    out.layers[l].mlp_out = mlp_out.defined() ? mlp_out.squeeze(0) : mlp_out;
    progress.step();
  }
  if ((request.capture & kCaptureResidual) && end == layers) out.hidden[layers] = h.squeeze(0);
  return h;
}

// The LM head at `positions` of h ([1, T, D]) → [P, V]; every position when empty.
torch::Tensor head_at(Model& model, const torch::Tensor& h, Stack stack, const std::vector<int64_t>& positions) {
  if (positions.empty()) return model.module->head(h, stack).squeeze(0);
  const auto index = torch::tensor(positions, torch::kLong).to(h.device());
  return model.module->head(h.index_select(1, index), stack).squeeze(0);
}

bool reusable(const Trace& previous, const RunRequest& request) {
  return previous.ids == request.ids && previous.decoder_ids == request.decoder_ids &&
         previous.token_types == request.token_types && previous.capture == request.capture &&
         previous.maps.thumbnail_side == request.maps.thumbnail_side && (request.capture & kCaptureResidual);
}

// The encoder's output as the decoder's cross-attention reads it (after its final norm), from a trace.
torch::Tensor cross_memory(Model& model, const Trace& trace) {
  if (trace.encoder.empty()) return {};
  torch::Tensor memory = trace.encoder.hidden.back().unsqueeze(0);
  if (model.module->encoder_final_norm) memory = model.module->encoder_final_norm(memory);
  return memory;
}

// `trace` (a copy of `previous`) keeps its layers below `enc_from` / `dec_from`; where the request
// keeps another layer at full size than `previous` did, the old one is pooled and the new one's
// block runs again from its kept input, capturing in full. Returns the layers run.
int adjust_full_layer(Model& model, Trace& trace, const Trace& previous, const RunRequest& request, int enc_from,
                      int dec_from) {
  const MapDetail& was = previous.maps;
  const MapDetail& now = request.maps;
  if (!now.pooled() || was == now) return 0;
  auto below_recomputed = [&](Stack stack, int layer) {
    return layer >= 0 && layer < (layers_of(stack) == Stack::Encoder ? enc_from : dec_from);
  };
  auto stages = [&](Stack stack, int layer) -> AttentionStages& {
    LayerTrace& l = (layers_of(stack) == Stack::Encoder ? trace.encoder : trace.decoder).layers.at(static_cast<size_t>(layer));
    return stack == Stack::Cross ? l.cross : l.self;
  };
  if (below_recomputed(was.full_stack, was.full_layer) && now.pools(was.full_stack, was.full_layer))
    pool_stages(stages(was.full_stack, was.full_layer), now.thumbnail_side);
  if (!below_recomputed(now.full_stack, now.full_layer) || !was.pools(now.full_stack, now.full_layer)) return 0;
  const Stack stack = layers_of(now.full_stack);
  StackTrace& st = stack == Stack::Encoder ? trace.encoder : trace.decoder;
  const int l = now.full_layer;
  RunRequest one = request;
  one.on_layer = nullptr;
  one.progress = nullptr;
  Progress progress{one, 1};
  const torch::Tensor memory = stack == Stack::Decoder ? cross_memory(model, trace) : torch::Tensor();
  // The block reads the input its layer had: hidden[l] (before the layer's resid patch, which
  // run_stack applies again). Its output equals hidden[l + 1], so only the captures change.
  const torch::Tensor kept_next = st.hidden.at(static_cast<size_t>(l) + 1);
  run_stack(model, stack, l, st.hidden.at(static_cast<size_t>(l)).unsqueeze(0), one, memory, st, progress, l + 1);
  st.hidden[static_cast<size_t>(l) + 1] = kept_next;
  return 1;
}

}  // namespace

std::shared_ptr<const Trace> run(Model& model, const RunRequest& request) {
  // Thread-local: set here, in whatever thread runs the model (not for a differentiable run).
  c10::InferenceMode inference(!request.differentiable);
  auto& module = model.module;
  const auto& config = model.config;
  if (request.ids.empty()) throw std::invalid_argument("run: no input ids");
  const bool enc_dec = config.kind == StackKind::EncoderDecoder;
  if (enc_dec && request.decoder_ids.empty()) throw std::invalid_argument("run: an encoder-decoder needs decoder ids");
  if (!request.token_types.empty() && request.token_types.size() != request.ids.size())
    throw std::invalid_argument("run: token_types must have one entry per id");
  const size_t out_len = enc_dec ? request.decoder_ids.size() : request.ids.size();
  for (int64_t p : request.logit_positions)
    if (p < 0 || static_cast<size_t>(p) >= out_len)
      throw std::invalid_argument("run: logit position " + std::to_string(p) + " is outside 0.." + std::to_string(out_len - 1));

  // Refuse before allocating what the machine cannot hold (core/memory_budget.h).
  check_run_memory(estimate_run_memory(config, static_cast<int64_t>(request.ids.size()),
                                       static_cast<int64_t>(request.decoder_ids.size()), request.capture,
                                       static_cast<int64_t>(request.logit_positions.size()), false, request.maps),
                   model, "this run", static_cast<int64_t>(std::max(request.ids.size(), request.decoder_ids.size())));

  const int enc_layers = module->layer_count(Stack::Encoder);
  const int dec_layers = module->layer_count(Stack::Decoder);
  int enc_from = 0, dec_from = 0;
  const Trace* previous = request.previous.get();
  if (previous && !reusable(*previous, request)) previous = nullptr;
  auto trace = std::make_shared<Trace>();
  if (previous) {
    enc_from = first_changed_layer(*previous, request, Stack::Encoder, enc_layers, false);
    dec_from = first_changed_layer(*previous, request, Stack::Decoder, dec_layers, enc_dec);
    if (enc_dec && enc_from < enc_layers) dec_from = 0;  // a new encoder output changes every decoder layer
    if (!enc_dec && config.kind == StackKind::Encoder) dec_from = 0;
    if (enc_from == enc_layers && dec_from == dec_layers) {
      if (previous->logit_positions == request.logit_positions && previous->maps == request.maps)
        return request.previous;
      // The same layers: at most the one layer now kept at full size runs again, alone, and the head
      // on the kept final hidden state when the positions differ.
      auto same = std::make_shared<Trace>(*previous);
      same->maps = request.maps;
      same->recomputed_stack.reset();
      same->recomputed_from = 0;
      same->layers_computed = adjust_full_layer(model, *same, *previous, request, enc_from, dec_from);
      if (same->layers_computed > 0) {  // the one layer that ran
        same->recomputed_stack = layers_of(request.maps.full_stack);
        same->recomputed_from = request.maps.full_layer;
      }
      if (previous->logit_positions != request.logit_positions) {
        same->logit_positions = request.logit_positions;
        const Stack stack = previous->decoder.empty() ? Stack::Encoder : Stack::Decoder;
        same->logits = head_at(model, previous->main_stack().hidden.back().unsqueeze(0), stack, request.logit_positions);
      }
      return same;
    }
    *trace = *previous;  // shares the unchanged layers' tensors (they are never modified)
    trace->recomputed_stack.reset();
    trace->recomputed_from = 0;
    trace->layers_computed = adjust_full_layer(model, *trace, *previous, request, enc_from, dec_from);
  }
  trace->ids = request.ids;
  trace->decoder_ids = request.decoder_ids;
  trace->token_types = request.token_types;
  trace->controls = request.controls;
  trace->patches = request.patches;
  trace->capture = request.capture;
  trace->maps = request.maps;
  trace->logit_positions = request.logit_positions;

  Progress progress{request, (enc_layers - enc_from) + (dec_layers - dec_from)};
  torch::Tensor types = request.token_types.empty() ? torch::Tensor() : ids_on_device(request.token_types, model);
  torch::Tensor memory;
  if (enc_layers > 0) {
    torch::Tensor input = previous ? trace->encoder.hidden[enc_from].unsqueeze(0) : module->embed(ids_on_device(request.ids, model), types);
    if (enc_from < enc_layers) {
      trace->recomputed_stack = Stack::Encoder;
      trace->recomputed_from = enc_from;
      memory = run_stack(model, Stack::Encoder, enc_from, input, request, {}, trace->encoder, progress);
      trace->layers_computed += enc_layers - enc_from;
    } else {
      memory = trace->encoder.hidden[enc_layers].unsqueeze(0);
    }
    if (!enc_dec) trace->logits = head_at(model, memory, Stack::Encoder, request.logit_positions);
  }
  if (dec_layers > 0) {
    if (enc_dec && module->encoder_final_norm) memory = module->encoder_final_norm(memory);
    const auto& dec_ids = enc_dec ? request.decoder_ids : request.ids;
    torch::Tensor input = previous && dec_from > 0 ? trace->decoder.hidden[dec_from].unsqueeze(0)
                                                   : module->embed(ids_on_device(dec_ids, model), enc_dec ? torch::Tensor() : types, false, 0, Stack::Decoder);
    if (!trace->recomputed_stack) {
      trace->recomputed_stack = Stack::Decoder;
      trace->recomputed_from = dec_from;
    }
    auto h = run_stack(model, Stack::Decoder, dec_from, input, request, memory, trace->decoder, progress);
    trace->layers_computed += dec_layers - dec_from;
    trace->logits = head_at(model, h, Stack::Decoder, request.logit_positions);
  }
  return trace;
}

}  // namespace headlab::core
