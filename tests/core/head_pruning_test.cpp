// Head pruning with Hard Concrete gates (Voita et al. 2019 §6; Louizos et al. 2018 §4.1): the
// sampler against the distribution's moments integrated from its CDF, the gates' effect on the
// forward pass against W_O with the head's columns zeroed, and gate training under λ.
#include "test_common.h"

#include "core/model/model.h"
#include "core/train/head_pruning.h"
#include "core/train/trainer.h"
#include "small_models.h"
#include "synthetic_text.h"

#include <cmath>

using namespace headlab;
using namespace headlab::core::train;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// CDF of the (unstretched) binary Concrete s = σ((L + log α) / β), L ~ Logistic(0, 1):
// P(s ≤ x) = σ(β logit(x) − log α).
double concrete_cdf(double x, double log_alpha, const HardConcrete& hc) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  return sigmoid(hc.beta * std::log(x / (1 - x)) - log_alpha);
}

struct Moments {
  double p_zero, p_one, mean;
};

// The stretched, clipped g = min(1, max(0, s (ζ − γ) + γ)): P(g = 0), P(g = 1) and
// E[g] = ∫₀¹ P(g > t) dt by Simpson's rule.
Moments hard_concrete_moments(double log_alpha, const HardConcrete& hc) {
  auto s_of = [&](double g) { return (g - hc.gamma) / (hc.zeta - hc.gamma); };
  Moments m;
  m.p_zero = concrete_cdf(s_of(0), log_alpha, hc);
  m.p_one = 1 - concrete_cdf(s_of(1), log_alpha, hc);
  const int n = 4000;
  double sum = 0;
  for (int i = 0; i <= n; ++i) {
    const double t = double(i) / n;
    const double f = 1 - concrete_cdf(s_of(t), log_alpha, hc);
    sum += f * (i == 0 || i == n ? 1 : i % 2 ? 4 : 2);
  }
  m.mean = sum / (3.0 * n);
  return m;
}

core::ModelConfig encoder_config() {
  auto c = test::small_model(core::StackKind::Encoder, test::attention(4, 4, 4, 4), 2, int(test::kSyntheticVocab));
  c.objective = "mlm";
  return c;
}

Batch first_batch(const Dataset& data, int64_t n) {
  std::vector<const Example*> ex;
  for (int64_t i = 0; i < n; ++i) ex.push_back(&data.train[static_cast<size_t>(i)]);
  return make_batch(ex, Objective::Mlm, test::synthetic_specials(), 5);
}

}  // namespace

TEST_CASE("Hard Concrete samples follow the distribution's moments", "[prune]") {
  const HardConcrete hc;
  torch::manual_seed(11);
  for (double log_alpha : {-2.0, 0.0, 1.5}) {
    INFO("log alpha " << log_alpha);
    const auto expected = hard_concrete_moments(log_alpha, hc);
    const int64_t n = 400000;
    const auto g = hard_concrete_sample(torch::full({n}, log_alpha, torch::kFloat32), hc).to(torch::kFloat64);
    CHECK(g.min().item<double>() >= 0.0);
    CHECK(g.max().item<double>() <= 1.0);
    // Binomial standard errors at n = 400k are below 0.001.
    CHECK(g.eq(0).to(torch::kFloat64).mean().item<double>() == Approx(expected.p_zero).margin(0.004));
    CHECK(g.eq(1).to(torch::kFloat64).mean().item<double>() == Approx(expected.p_one).margin(0.004));
    CHECK(g.mean().item<double>() == Approx(expected.mean).margin(0.004));
    // The L0 penalty's closed form is the probability the sampler leaves the gate open.
    const double open = hard_concrete_open_probability(torch::tensor({log_alpha}), hc).item<double>();
    CHECK(open == Approx(1 - expected.p_zero).margin(1e-6));
  }
  // Test-time gate: σ(log α)(ζ − γ) + γ, clipped.
  const auto t = hard_concrete_test_gate(torch::tensor({-3.0, 0.0, 3.0}), hc);
  CHECK(t[0].item<double>() == 0.0);
  CHECK(t[1].item<double>() == Approx(0.5 * 1.2 - 0.1).margin(1e-7));
  CHECK(t[2].item<double>() == 1.0);
}

TEST_CASE("Head gates multiply head outputs: all 1 is the model, 0 equals zeroing the head's W_O columns", "[prune]") {
  auto model = core::make_random_model(encoder_config(), 4);
  const auto data = make_lm_dataset(test::synthetic_documents(2, 400, 3), 16, Objective::Mlm, test::synthetic_specials(), 0);
  const auto batch = first_batch(data, 4);
  torch::NoGradGuard no_grad;
  model->module->eval();
  const auto plain = forward_hidden(model->module, batch);  // [B, T, D]

  HeadGateTensors ones;
  ones.encoder = {torch::ones({1, 4}), torch::ones({4, 4})};  // shared and per example
  CHECK(torch::equal(forward_hidden(model->module, batch, &ones), plain));

  // Layer 1, head 2 closed, and layer 0 head 0 at one half for example 1 only.
  HeadGateTensors some;
  some.encoder = {torch::ones({4, 4}), torch::tensor({1.0f, 1.0f, 0.0f, 1.0f}).view({1, 4})};
  some.encoder[0][1][0] = 0.5f;
  const auto gated = forward_hidden(model->module, batch, &some);
  CHECK_FALSE(torch::allclose(gated, plain, 1e-4, 1e-5));

  // The same by editing weights: W_O columns of head 2 (value size 4) zeroed in layer 1; for the
  // half gate, example 1 is run alone with layer 0's head-0 columns halved.
  auto edited = core::make_random_model(encoder_config(), 4);
  edited->module->eval();
  auto w1 = edited->module->named_parameters()["encoder.1.attn.o.weight"];  // [D, h·d_v]
  w1.slice(1, 8, 12).zero_();
  const auto expected = forward_hidden(edited->module, batch);
  for (int64_t b : {0, 2, 3}) CHECK(torch::allclose(gated[b], expected[b], 1e-5, 1e-6));
  auto w0 = edited->module->named_parameters()["encoder.0.attn.o.weight"];
  w0.slice(1, 0, 4).mul_(0.5);
  const auto halved = forward_hidden(edited->module, batch);
  CHECK(torch::allclose(gated[1], halved[1], 1e-5, 1e-6));

  HeadGateTensors wrong;
  wrong.encoder = {torch::ones({1, 3})};
  CHECK_THROWS_WITH(forward_hidden(model->module, batch, &wrong), Catch::Contains("4 heads"));
}

TEST_CASE("Gate training: a larger λ closes more heads, frozen weights stay, fine-tuned ones move", "[prune]") {
  auto model = core::make_random_model(encoder_config(), 8);
  const auto specials = test::synthetic_specials();
  const auto data = make_lm_dataset(test::synthetic_documents(3, 1500, 9), 16, Objective::Mlm, specials, 0);
  const auto before = model->module->named_parameters()["encoder.0.attn.q.weight"].clone();

  PruneOptions o;
  o.steps = 120;
  o.lr = 0.1;
  o.batch_size = 8;
  int64_t calls = 0;
  double last_expected = 0;
  o.progress = [&](int64_t step, int64_t steps, double loss, double expected) {
    ++calls;
    CHECK(step <= steps);
    CHECK(std::isfinite(loss));
    last_expected = expected;
    return true;
  };
  o.lambda = 0;
  const auto none = train_head_gates(model->module, data.train, Objective::Mlm, specials, o);
  CHECK(calls == 120);
  CHECK(none.heads() == 8);
  CHECK(none.layers.size() == 2);
  o.lambda = 2.0;  // far above any one head's worth in loss: every gate is driven shut
  const auto strong = train_head_gates(model->module, data.train, Objective::Mlm, specials, o);
  CHECK(strong.kept() < none.kept());
  CHECK(strong.kept() <= 2);
  CHECK(last_expected < 4.0);
  for (const auto& l : strong.layers)
    for (size_t i = 0; i < l.gate.size(); ++i) {
      CHECK(l.open_probability[i] == Approx(sigmoid(l.log_alpha[i] - (2.0 / 3) * std::log(0.1 / 1.1))).margin(1e-6));
      CHECK((l.gate[i] > 0) == (sigmoid(l.log_alpha[i]) * 1.2 - 0.1 > 0));
    }
  CHECK(torch::equal(model->module->named_parameters()["encoder.0.attn.q.weight"], before));
  for (auto& p : model->module->parameters()) CHECK(p.requires_grad());

  // Quality with the test-time gates is the quality of the model whose W_O columns are scaled by them.
  const auto gates = gate_tensors(strong);
  const auto gated = evaluate_examples(model->module, data.train, Objective::Mlm, specials, {}, 1, 8, &gates);
  auto scaled = core::make_random_model(encoder_config(), 8);
  {
    torch::NoGradGuard no_grad;
    for (const auto& l : strong.layers) {
      auto w = scaled->module->named_parameters()["encoder." + std::to_string(l.layer) + ".attn.o.weight"];
      for (size_t h = 0; h < l.gate.size(); ++h) w.slice(1, int64_t(h) * 4, int64_t(h + 1) * 4).mul_(l.gate[h]);
    }
  }
  const auto expected = evaluate_examples(scaled->module, data.train, Objective::Mlm, specials, {}, 1, 8);
  CHECK(gated.targets == expected.targets);
  CHECK(gated.loss == Approx(expected.loss).epsilon(1e-5));
  CHECK(gated.accuracy == Approx(expected.accuracy).margin(1e-9));

  o.lambda = 0.01;
  o.fine_tune = true;
  o.fine_tune_lr = 1e-2;
  o.steps = 10;
  train_head_gates(model->module, data.train, Objective::Mlm, specials, o);
  CHECK_FALSE(torch::equal(model->module->named_parameters()["encoder.0.attn.q.weight"], before));

  o.batch_size = 0;
  CHECK_THROWS_AS(train_head_gates(model->module, data.train, Objective::Mlm, specials, o), std::invalid_argument);
  CHECK_THROWS_AS(train_head_gates(model->module, {}, Objective::Mlm, specials, PruneOptions{}), std::invalid_argument);
}
