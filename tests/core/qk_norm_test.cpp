// Per-head query/key RMSNorm (the qk_norm option, as Qwen3's q_norm/k_norm): the engine's logits
// against the formula computed with plain loops in float64; the config round trip; LRP conservation
// and the key-query form with the norm.
#include "test_common.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "analysis/spectra.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "core/model/run.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

namespace core = headlab::core;
namespace analysis = headlab::analysis;

TEST_CASE("qk_norm: logits are the scaled dot products of RMS-normalised per-head queries and keys", "[attention][qk_norm]") {
  auto config = headlab::test::attention(3, 3, 4, 4);
  config.qk_norm = true;
  config.qk_norm_eps = 1e-5f;
  const int64_t D = 10, T = 5, dk = 4;
  core::Attention a(config, D);
  torch::manual_seed(3);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : a->parameters()) p.copy_(torch::randn(p.sizes()) * 0.7 + (p.dim() == 1 ? 0.5 : 0.0));
  }
  auto x = torch::randn({1, T, D});
  core::AttentionCall call;
  call.query_input = call.key_input = x;
  call.capture = core::kCaptureLogits;
  core::AttentionStages stages;
  a->forward(call, &stages);

  auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kFloat64).contiguous(); };
  auto X = f64(x[0]), Wq = f64(a->q->weight), bq = f64(a->q->bias), Wk = f64(a->k->weight), bk = f64(a->k->bias);
  auto wq = f64(a->q_norm), wk = f64(a->k_norm);
  auto xa = X.accessor<double, 2>();
  auto project = [&](const torch::Tensor& W, const torch::Tensor& b, int64_t t, int64_t h, const torch::Tensor& w) {
    auto Wa = W.accessor<double, 2>();
    auto ba = b.accessor<double, 1>();
    auto wa = w.accessor<double, 1>();
    std::vector<double> v(dk);
    double ms = 0;
    for (int64_t d = 0; d < dk; ++d) {
      double acc = ba[h * dk + d];
      for (int64_t i = 0; i < D; ++i) acc += Wa[h * dk + d][i] * xa[t][i];
      v[d] = acc;
      ms += acc * acc / dk;
    }
    for (int64_t d = 0; d < dk; ++d) v[d] = v[d] / std::sqrt(ms + 1e-5) * wa[d];
    return v;
  };
  double worst = 0;
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < T; ++s) {
        const auto q = project(Wq, bq, t, h, wq), k = project(Wk, bk, s, h, wk);
        double dot = 0;
        for (int64_t d = 0; d < dk; ++d) dot += q[d] * k[d];
        worst = std::max(worst, std::abs(dot / std::sqrt(double(dk)) - stages.logits[0][h][t][s].item<double>()));
      }
  CHECK(worst < 1e-5);
  // Without the norm the logits differ: the test can fail.
  config.qk_norm = false;
  core::Attention plain(config, D);
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : plain->named_parameters()) item.value().copy_(a->named_parameters()[item.key()]);
  }
  core::AttentionStages plain_stages;
  plain->forward(call, &plain_stages);
  CHECK(headlab::test::max_abs_diff(plain_stages.logits, stages.logits) > 1e-2);
}

TEST_CASE("qk_norm: config round trip, validation, LRP conservation and the key-query form", "[attention][qk_norm]") {
  auto config = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 2, 4, 4), 2, 31);
  config.positions = core::PositionKind::Rope;
  config.decoder->attention.qk_norm = true;
  config.decoder->attention.qk_norm_eps = 1e-5f;
  const auto json = core::to_json(config);
  CHECK(json["decoder"]["attention"]["qk_norm"] == true);
  const auto back = core::model_config_from_json(json);
  CHECK(back.decoder->attention.qk_norm);
  CHECK(back.decoder->attention.qk_norm_eps == Approx(1e-5));
  auto collaborative = config;
  collaborative.decoder->attention.collaborative = core::Collaborative{8};
  CHECK_THROWS_WITH(collaborative.validate(), Catch::Contains("qk_norm cannot be combined with collaborative"));

  auto model = core::make_random_model(config, 11);
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    for (auto& item : model->module->named_parameters())
      if (item.key().find("norm") != std::string::npos) item.value().copy_(1 + 0.5 * torch::randn(item.value().sizes()));
      else item.value().copy_(0.4 * torch::randn(item.value().sizes()));
  }
  CHECK(model->config.parameter_count() == [&] {
    int64_t n = 0;
    for (const auto& p : model->module->parameters()) n += p.numel();
    return n;
  }());
  const std::vector<int64_t> ids = {3, 7, 1, 30, 12, 5, 9};
  const auto lrp = analysis::lrp_relevance(*model, ids);
  CHECK(std::abs(lrp.target) > 0.1);
  CHECK(lrp.relative_residual() < 1e-5);  // float32; measured ≤ 1e-6

  // With the RoPE rotation at offset 0 (t = s), J_tt · rms(q_t) · rms(k_t) / scale = x_tᵀ W_Q diag(w_q ⊙ w_k) W_Kᵀ x_t
  // (this model has q/k biases; they are added to both sides by hand).
  core::RunRequest request;
  request.ids = ids;
  request.capture = core::kCaptureLogits | core::kCaptureResidual;
  auto trace = core::run(*model, request);
  auto block = model->module->block(headlab::core::Stack::Decoder, 1);
  torch::NoGradGuard no_grad;
  auto x = block->attn_norm(trace->decoder.hidden[1].unsqueeze(0)).squeeze(0).to(torch::kFloat64);  // [T, D]
  auto& at = *block->attn;
  const int64_t dk = 4;
  const int head = 3, kv = head / 2;
  auto q = (torch::matmul(x, at.q->weight.to(torch::kFloat64).t()) + at.q->bias.to(torch::kFloat64)).narrow(1, head * dk, dk);
  auto k = (torch::matmul(x, at.k->weight.to(torch::kFloat64).t()) + at.k->bias.to(torch::kFloat64)).narrow(1, kv * dk, dk);
  auto rms = [](const torch::Tensor& v) { return (v.pow(2).mean(-1) + 1e-5).sqrt(); };
  auto scaled = trace->decoder.layers[1].self.logits[head].diagonal().to(torch::kFloat64) * rms(q) * rms(k) * std::sqrt(4.0);
  auto wqk = at.q_norm.to(torch::kFloat64) * at.k_norm.to(torch::kFloat64);
  auto expected = (q * wqk * k).sum(-1);
  CHECK(headlab::test::max_abs_diff(scaled, expected) < 1e-4);
  // key_query_form carries diag(w_q ⊙ w_k): with the biases out of the way, x_tᵀ B x_t is the bias-free part.
  auto B = analysis::key_query_form(*model, headlab::core::Stack::Decoder, 1, head);
  auto qx = torch::matmul(x, at.q->weight.to(torch::kFloat64).t()).narrow(1, head * dk, dk);
  auto kx = torch::matmul(x, at.k->weight.to(torch::kFloat64).t()).narrow(1, kv * dk, dk);
  CHECK(headlab::test::max_abs_diff((torch::matmul(x, B) * x).sum(-1), (qx * wqk * kx).sum(-1)) < 1e-8);
}
