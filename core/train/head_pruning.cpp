#include "core/train/head_pruning.h"

#include "core/precision.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace headlab::core::train {

torch::Tensor hard_concrete_sample(const torch::Tensor& log_alpha, const HardConcrete& hc) {
  // u away from 0 and 1 so that log u and log(1 − u) stay finite.
  auto u = torch::rand_like(log_alpha).clamp(1e-6, 1 - 1e-6);
  auto s = torch::sigmoid((torch::log(u) - torch::log1p(-u) + log_alpha) / hc.beta);
  return (s * (hc.zeta - hc.gamma) + hc.gamma).clamp(0.0, 1.0);
}

torch::Tensor hard_concrete_open_probability(const torch::Tensor& log_alpha, const HardConcrete& hc) {
  return torch::sigmoid(log_alpha - hc.beta * std::log(-hc.gamma / hc.zeta));
}

torch::Tensor hard_concrete_test_gate(const torch::Tensor& log_alpha, const HardConcrete& hc) {
  return (torch::sigmoid(log_alpha) * (hc.zeta - hc.gamma) + hc.gamma).clamp(0.0, 1.0);
}

int LayerGates::kept() const {
  int n = 0;
  for (double g : gate) n += g > 0;
  return n;
}

int PruneResult::heads() const {
  int n = 0;
  for (const auto& l : layers) n += static_cast<int>(l.gate.size());
  return n;
}

int PruneResult::kept() const {
  int n = 0;
  for (const auto& l : layers) n += l.kept();
  return n;
}

namespace {

struct GatedLayer {
  Stack stack;
  int layer;
  torch::Tensor log_alpha;  // [h_v], trained
};

std::vector<GatedLayer> gated_layers(Transformer& model, double init) {
  std::vector<GatedLayer> out;
  const auto& c = model->config();
  // On the model's device: the gates train beside its weights.
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(model->parameters().front().device());
  auto add = [&](Stack stack, int layers, const AttentionConfig& a) {
    for (int l = 0; l < layers; ++l)
      out.push_back({stack, l, torch::full({a.output_heads()}, init, options).set_requires_grad(true)});
  };
  if (c.encoder) add(Stack::Encoder, c.encoder->layers, c.encoder->attention);
  if (c.decoder) {
    add(Stack::Decoder, c.decoder->layers, c.decoder->attention);
    if (c.decoder->cross_attention) add(Stack::Cross, c.decoder->layers, *c.decoder->cross_attention);
  }
  return out;
}

// The gate list of a stack; layers arrive in order, so index = layer.
std::vector<torch::Tensor>& gates_of(HeadGateTensors& t, Stack stack) {
  return stack == Stack::Encoder ? t.encoder : stack == Stack::Decoder ? t.decoder : t.cross;
}

}  // namespace

PruneResult train_head_gates(Transformer& model, const std::vector<Example>& train, Objective objective,
                             const SpecialTokens& specials, const PruneOptions& o) {
  const PrecisionScope exact(Precision::exact);  // gates train exactly, whatever the process's choice
  if (train.empty()) throw std::invalid_argument("head pruning: no training examples");
  if (o.steps < 0 || o.batch_size <= 0 || !(o.lr > 0) || !(o.lambda >= 0))
    throw std::invalid_argument("head pruning: steps ≥ 0, batch size > 0, learning rate > 0 and λ ≥ 0 are needed");
  torch::manual_seed(o.seed);
  const HardConcrete hc;
  auto layers = gated_layers(model, o.init_log_alpha);

  // Frozen weights: no gradient reaches them (and no memory is spent on theirs). Restored after.
  std::vector<bool> was_trainable;
  for (auto& p : model->parameters()) {
    was_trainable.push_back(p.requires_grad());
    if (!o.fine_tune) p.set_requires_grad(false);
  }
  std::vector<torch::Tensor> alphas;
  for (auto& l : layers) alphas.push_back(l.log_alpha);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(alphas, std::make_unique<torch::optim::AdamOptions>(o.lr));
  if (o.fine_tune) {
    std::vector<torch::Tensor> weights;
    for (auto& p : model->parameters())
      if (p.requires_grad()) weights.push_back(p);
    groups.emplace_back(weights, std::make_unique<torch::optim::AdamOptions>(o.fine_tune_lr));
  }
  torch::optim::Adam optimizer(groups, torch::optim::AdamOptions(o.lr));

  model->train();
  BatchOrder order(train.size(), o.batch_size, o.seed);
  PruneResult result;
  for (int64_t step = 0; step < o.steps; ++step) {
    std::vector<const Example*> ex;
    for (size_t i : order.batch(step)) ex.push_back(&train[i]);
    const auto batch = make_batch(ex, objective, specials, mix_seed(o.seed ^ 0x9A7Eu, static_cast<uint64_t>(step)),
                                  o.masking);
    const int64_t B = batch.ids.size(0);
    // One gate sample per example and head: g [B, h_v].
    HeadGateTensors gates;
    for (const auto& l : layers)
      gates_of(gates, l.stack).push_back(hard_concrete_sample(l.log_alpha.unsqueeze(0).expand({B, l.log_alpha.size(0)}), hc));
    auto task = batch_loss(model, batch, &gates).loss;
    auto expected_open = torch::zeros({}, alphas.front().options().requires_grad(false));
    for (auto& l : layers) expected_open = expected_open + hard_concrete_open_probability(l.log_alpha, hc).sum();
    auto loss = task + o.lambda * expected_open;
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    result.steps_done = step + 1;
    if (o.progress && !o.progress(step + 1, o.steps, task.item<double>(), expected_open.item<double>())) break;
  }

  size_t i = 0;
  for (auto& p : model->parameters()) p.set_requires_grad(was_trainable[i++]);
  torch::NoGradGuard no_grad;
  for (const auto& l : layers) {
    LayerGates g;
    g.stack = l.stack;
    g.layer = l.layer;
    auto to_vector = [](const torch::Tensor& t) {
      auto d = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
      return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
    };
    g.log_alpha = to_vector(l.log_alpha);
    g.open_probability = to_vector(hard_concrete_open_probability(l.log_alpha, hc));
    g.gate = to_vector(hard_concrete_test_gate(l.log_alpha, hc));
    result.layers.push_back(std::move(g));
  }
  return result;
}

HeadGateTensors gate_tensors(const PruneResult& result) {
  HeadGateTensors t;
  for (const auto& l : result.layers) {
    std::vector<float> g(l.gate.begin(), l.gate.end());
    gates_of(t, l.stack).push_back(torch::tensor(g, torch::kFloat32).view({1, static_cast<int64_t>(g.size())}));
  }
  return t;
}

}  // namespace headlab::core::train
