#include "core/train/forward.h"

#include <torch/torch.h>

namespace headlab::core::train {

namespace {

// Layer `layer`'s gates on the hidden states' device (gate_tensors builds them on the CPU; a
// trained gate already lives with the model, and `to` is then the tensor itself).
torch::Tensor layer_gate(const std::vector<torch::Tensor>* gates, int layer, const torch::Device& device) {
  if (!gates || layer >= static_cast<int>(gates->size()) || !(*gates)[layer].defined()) return torch::Tensor();
  return (*gates)[layer].to(device);
}

torch::Tensor run_stack(Transformer& model, Stack stack, torch::Tensor h, BlockCall call,
                        const HeadGateTensors* gates) {
  call.rope = model->rope_tables(h.size(1), stack);
  const int layers = model->layer_count(stack);
  for (int l = 0; l < layers; ++l) {
    if (gates) {
      call.self_gates = layer_gate(stack == Stack::Encoder ? &gates->encoder : &gates->decoder, l, h.device());
      call.cross_gates = layer_gate(&gates->cross, l, h.device());
    }
    h = model->block(stack, l)->forward(h, call, nullptr, nullptr);
  }
  return h;
}

}  // namespace

namespace {

// The batch on the model's device (a batch is built on the CPU; evaluation of a model on a card
// moves one batch at a time).
Batch on_model_device(Transformer& model, const Batch& batch) {
  const torch::Device device = model->tokens->weight.device();
  if (!batch.ids.defined() || batch.ids.device() == device) return batch;
  Batch out = batch;
  for (torch::Tensor* t : {&out.ids, &out.padding, &out.decoder_ids, &out.decoder_padding, &out.labels})
    if (t->defined()) *t = t->to(device);
  return out;
}

}  // namespace

torch::Tensor forward_hidden(Transformer& model, const Batch& batch_anywhere, const HeadGateTensors* gates) {
  const Batch batch = on_model_device(model, batch_anywhere);
  const auto& config = model->config();
  if (config.kind == StackKind::Encoder) {
    BlockCall call;
    call.padding = batch.padding;
    return run_stack(model, Stack::Encoder, model->embed(batch.ids), call, gates);
  }
  if (config.kind == StackKind::Decoder) {
    BlockCall call;
    call.causal = true;
    call.padding = batch.padding;
    return run_stack(model, Stack::Decoder, model->embed(batch.ids, {}, false, 0, Stack::Decoder), call, gates);
  }
  // Encoder-decoder: as core/model/run.cpp, the encoder's final norm applies to the memory.
  BlockCall enc;
  enc.padding = batch.padding;
  auto memory = run_stack(model, Stack::Encoder, model->embed(batch.ids), enc, gates);
  if (model->encoder_final_norm) memory = model->encoder_final_norm(memory);
  BlockCall dec;
  dec.causal = true;
  dec.padding = batch.decoder_padding;
  dec.memory = memory;
  dec.memory_padding = batch.padding;
  return run_stack(model, Stack::Decoder, model->embed(batch.decoder_ids, {}, false, 0, Stack::Decoder), dec, gates);
}

LossResult batch_loss(Transformer& model, const Batch& batch, const HeadGateTensors* gates) {
  const Stack stack = model->config().kind == StackKind::Encoder ? Stack::Encoder : Stack::Decoder;
  auto hidden = forward_hidden(model, batch, gates);              // [B, T, D]
  auto labels = batch.labels.to(hidden.device()).reshape({-1});  // [B*T]
  auto where = labels.ne(-100).nonzero().squeeze(1);        // [M]
  auto selected = hidden.reshape({-1, hidden.size(-1)}).index_select(0, where).unsqueeze(0);  // [1, M, D]
  auto logits = model->head(selected, stack).squeeze(0);    // [M, V]
  auto targets = labels.index_select(0, where);
  LossResult r;
  r.loss = torch::nn::functional::cross_entropy(logits, targets);
  r.targets = targets.size(0);
  r.correct = logits.detach().argmax(-1).eq(targets).sum().item<int64_t>();
  return r;
}

}  // namespace headlab::core::train
