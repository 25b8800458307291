// Equivalences between attention variants and controls: a variant written with another's weights
// must compute the same function (talking-heads with identity mixing, GQA/MQA with duplicated kv
// heads, collaborative with block-indicator m_i are all MHA), and each user control must equal its
// hand-made counterpart on the weights (a closed gate = W_O columns zeroed, a mix = a permutation).
#include "test_common.h"
#include "small_models.h"

#include "core/model/attention.h"
#include "core/attention_test_util.h"

#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

constexpr double kTol = 1e-5;
constexpr int64_t kHidden = 12;

// One attention config of the given head counts and sizes (tests/small_models.h).
core::AttentionConfig make_config(int heads, int kv_heads, int key_size, int value_size) {
  return headlab::test::attention(heads, kv_heads, key_size, value_size);
}

void randomize(torch::nn::Module& m, double scale = 0.5) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) p.copy_(torch::randn(p.sizes()) * scale);
}

void copy_linear(core::Linear& to, const core::Linear& from) {
  torch::NoGradGuard no_grad;
  to->weight.copy_(from->weight);
  if (from->bias.defined()) to->bias.copy_(from->bias);
}

void copy_all(core::Attention& to, const core::Attention& from) {
  torch::NoGradGuard no_grad;
  auto params = to->named_parameters();
  for (const auto& item : from->named_parameters()) params[item.key()].copy_(item.value());
}

using headlab::test::EngineResult;

EngineResult run_engine(core::Attention& a, const torch::Tensor& x, bool causal,
                        const core::HeadControls* controls = nullptr) {
  core::AttentionCall call;
  call.query_input = x;
  call.key_input = x;
  call.causal = causal;
  call.controls = controls;
  return headlab::test::run_attention(a, call);
}

// Row-major flattening of a square tensor, the layout HeadControls' matrices use.
std::vector<float> row_major(const torch::Tensor& m) {
  auto c = m.to(torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

torch::Tensor swap_01(int64_t n) {  // permutation matrix exchanging heads 0 and 1
  auto p = torch::eye(n);
  p.index_put_({0, 0}, 0);
  p.index_put_({1, 1}, 0);
  p.index_put_({0, 1}, 1);
  p.index_put_({1, 0}, 1);
  return p;
}

}  // namespace

TEST_CASE("talking-heads with identity P_l and P_w is MHA", "[attention][equivalence][talking-heads]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(11);
  auto mha_config = make_config(4, 4, 3, 2);
  core::Attention mha(mha_config, kHidden);
  randomize(*mha);
  auto th_config = mha_config;
  th_config.talking_heads = core::TalkingHeads{4, 4, 4};
  core::Attention th(th_config, kHidden);
  copy_linear(th->q, mha->q);
  copy_linear(th->k, mha->k);
  copy_linear(th->v, mha->v);
  copy_linear(th->o, mha->o);
  th->pre_mix.copy_(torch::eye(4));
  th->post_mix.copy_(torch::eye(4));
  auto x = torch::randn({2, 6, kHidden});
  for (bool causal : {false, true}) {
    INFO((causal ? "causal" : "bidirectional"));
    auto a = run_engine(mha, x, causal), b = run_engine(th, x, causal);
    CHECK(max_abs_diff(a.out, b.out) < kTol);
    CHECK(max_abs_diff(a.stages.weights, b.stages.weights) < kTol);
    CHECK(max_abs_diff(a.stages.mixed_weights, b.stages.mixed_weights) < kTol);
    CHECK(max_abs_diff(a.stages.head_outputs, b.stages.head_outputs) < kTol);
  }
  th->post_mix.copy_(torch::eye(4) + 0.3 * torch::randn({4, 4}));  // non-identity: no longer MHA
  CHECK(max_abs_diff(run_engine(mha, x, false).out, run_engine(th, x, false).out) > 1e-3);
}

TEST_CASE("GQA is MHA with kv heads repeated per group, kv_heads = heads is MHA, kv_heads = 1 is MQA",
          "[attention][equivalence][gqa]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(12);
  const int heads = 6, dk = 2, dv = 3;
  auto x = torch::randn({2, 5, kHidden});
  for (int kv_heads : {6, 3, 2, 1}) {
    core::Attention grouped(make_config(heads, kv_heads, dk, dv), kHidden);
    randomize(*grouped);
    // Ainslie et al. 2023 / Shazeer 2019: query head i reads kv head i / (heads / kv_heads).
    core::Attention mha(make_config(heads, heads, dk, dv), kHidden);
    copy_linear(mha->q, grouped->q);
    copy_linear(mha->o, grouped->o);
    const int group = heads / kv_heads;
    for (int i = 0; i < heads; ++i) {
      const int g = i / group;
      mha->k->weight.narrow(0, i * dk, dk).copy_(grouped->k->weight.narrow(0, g * dk, dk));
      mha->k->bias.narrow(0, i * dk, dk).copy_(grouped->k->bias.narrow(0, g * dk, dk));
      mha->v->weight.narrow(0, i * dv, dv).copy_(grouped->v->weight.narrow(0, g * dv, dv));
      mha->v->bias.narrow(0, i * dv, dv).copy_(grouped->v->bias.narrow(0, g * dv, dv));
    }
    for (bool causal : {false, true}) {
      INFO(grouped->config().variant_name() << (causal ? " causal" : ""));
      auto a = run_engine(mha, x, causal), b = run_engine(grouped, x, causal);
      CHECK(max_abs_diff(a.out, b.out) < kTol);
      CHECK(max_abs_diff(a.stages.logits, b.stages.logits) < kTol);
      CHECK(max_abs_diff(a.stages.weights, b.stages.weights) < kTol);
      CHECK(max_abs_diff(a.stages.head_outputs, b.stages.head_outputs) < kTol);
    }
  }
}

TEST_CASE("collaborative with D̃_k = h·d_k and block-indicator m_i is the MHA it was built from",
          "[attention][equivalence][collaborative]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(13);
  const int heads = 4, dk = 3, dv = 2;
  core::Attention mha(make_config(heads, heads, dk, dv), kHidden);
  randomize(*mha);  // with query and key biases: the key bias only shifts logits along the keys
  REQUIRE(mha->k->bias.abs().max().item<float>() > 0.1f);
  REQUIRE(mha->q->bias.abs().max().item<float>() > 0.1f);
  auto config = make_config(heads, heads, dk, dv);
  config.collaborative = core::Collaborative{heads * dk};
  core::Attention collab(config, kHidden);
  REQUIRE_FALSE(collab->q->bias.defined());       // re-parametrised into the content biases
  collab->q->weight.copy_(mha->q->weight);        // W̃_Q = [W_Q^1 … W_Q^h]
  collab->k->weight.copy_(mha->k->weight);        // W̃_K = [W_K^1 … W_K^h]
  // Content bias r_i = W_K^iᵀ b_Q^i: the only part of the query bias that varies along the keys.
  for (int i = 0; i < heads; ++i)
    collab->content_bias[i].copy_(mha->k->weight.narrow(0, i * dk, dk).t().matmul(mha->q->bias.narrow(0, i * dk, dk)));
  copy_linear(collab->v, mha->v);
  copy_linear(collab->o, mha->o);
  collab->mix.zero_();
  for (int i = 0; i < heads; ++i) collab->mix[i].narrow(0, i * dk, dk).fill_(1.0);  // m_i = block indicator
  auto x = torch::randn({2, 6, kHidden});
  for (bool causal : {false, true}) {
    INFO((causal ? "causal" : "bidirectional"));
    auto a = run_engine(mha, x, causal), b = run_engine(collab, x, causal);
    CHECK(max_abs_diff(a.out, b.out) < kTol);
    CHECK(max_abs_diff(a.stages.weights, b.stages.weights) < kTol);
    CHECK(max_abs_diff(a.stages.head_outputs, b.stages.head_outputs) < kTol);
    CHECK(max_abs_diff(a.stages.logits, b.stages.logits) > 1e-3);  // logits differ by key-constant terms
  }
}

TEST_CASE("a gate of 0 removes the head: W_O's columns for that head zeroed", "[attention][equivalence][gates]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(14);
  auto th = make_config(3, 3, 4, 2);
  th.talking_heads = core::TalkingHeads{3, 4, 5};  // gates act on the h_v output heads
  auto alibi = make_config(4, 4, 3, 3);
  alibi.alibi = true;
  auto sinks = make_config(6, 2, 2, 3);
  sinks.sinks = true;
  for (const auto& config : {make_config(4, 4, 3, 3), make_config(6, 2, 2, 3), th, alibi, sinks}) {
    core::Attention attn(config, kHidden);
    randomize(*attn);
    auto x = torch::randn({2, 5, kHidden});
    const int hv = config.output_heads(), dv = config.value_size;
    auto plain = run_engine(attn, x, true);
    for (int head = 0; head < hv; ++head) {
      for (float gate : {0.0f, 0.3f}) {
        INFO(config.variant_name() << (config.alibi ? " ALiBi" : "") << (config.sinks ? " sinks" : "") << " head " << head << " gate " << gate);
        core::HeadControls controls;
        controls.gates.assign(hv, 1.0f);
        controls.gates[head] = gate;
        auto gated = run_engine(attn, x, true, &controls);
        core::Attention by_hand(config, kHidden);
        copy_all(by_hand, attn);
        by_hand->o->weight.narrow(1, head * dv, dv).mul_(gate);  // Concat_i(g_i·head_i) W_O
        CHECK(max_abs_diff(gated.out, run_engine(by_hand, x, true).out) < kTol);
        CHECK(max_abs_diff(gated.out, plain.out) > 1e-4);
        // Gates act after O: the captured stages are those of the ungated run.
        CHECK(max_abs_diff(gated.stages.weights, plain.stages.weights) == 0.0);
        CHECK(max_abs_diff(gated.stages.head_outputs, plain.stages.head_outputs) == 0.0);
      }
    }
  }
}

TEST_CASE("mean ablation replaces a closing head by its mean output", "[attention][equivalence][gates]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(15);
  const int heads = 4, dv = 3;
  core::Attention attn(make_config(heads, heads, 3, dv), kHidden);
  randomize(*attn);
  auto x = torch::randn({2, 5, kHidden});
  auto plain = run_engine(attn, x, true);
  auto O = plain.stages.head_outputs.to(torch::kFloat64);  // [B, h, T, d_v]
  auto Wo = attn->o->weight.to(torch::kFloat64);          // [D, h·d_v]
  auto dataset_mean = torch::randn({heads, dv});
  for (int head : {0, 2}) {
    for (float gate : {0.0f, 0.4f}) {
      for (bool dataset : {false, true}) {
        INFO("head " << head << " gate " << gate << (dataset ? " dataset mean" : " input mean"));
        core::HeadControls controls;
        controls.gates.assign(heads, 1.0f);
        controls.gates[head] = gate;
        controls.ablation = core::Ablation::Mean;
        if (dataset) controls.mean_outputs = row_major(dataset_mean);
        // head ← g·head + (1−g)·mean; mean over this input's positions unless a dataset mean is given
        auto O_i = O.select(1, head);                                                         // [B, T, d_v]
        auto mean = dataset ? dataset_mean[head].to(torch::kFloat64).view({1, 1, dv}).expand_as(O_i)
                            : O_i.mean(1, true).expand_as(O_i);
        auto W_i = Wo.narrow(1, head * dv, dv);                                               // [D, d_v]
        auto expected = plain.out.to(torch::kFloat64) + torch::matmul((1.0 - gate) * (mean - O_i), W_i.t());
        auto gated = run_engine(attn, x, true, &controls);
        CHECK(max_abs_diff(gated.out, expected) < kTol);
        CHECK(max_abs_diff(gated.out, plain.out) > 1e-4);
      }
    }
  }
  // A gate of 1 with mean ablation changes nothing.
  core::HeadControls open;
  open.gates.assign(heads, 1.0f);
  open.ablation = core::Ablation::Mean;
  CHECK(max_abs_diff(run_engine(attn, x, true, &open).out, plain.out) == 0.0);
}

TEST_CASE("user mixing: identity is no mix, a swap exchanges the heads' weights", "[attention][equivalence][mix]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(16);
  const int heads = 4, dv = 3;
  auto alibi = make_config(heads, heads, 3, dv);
  alibi.alibi = true;  // the slopes belong to the logit heads: a pre-softmax swap moves them with the logits
  auto sinks = make_config(heads, heads, 3, dv);
  sinks.sinks = true;  // each softmax head keeps its own sink
  const auto swapped_order = torch::tensor({1, 0, 2, 3}, torch::kLong);
  for (const auto& config : {make_config(heads, heads, 3, dv), alibi, sinks}) {
    INFO((config.alibi ? "ALiBi" : config.sinks ? "sinks" : "MHA"));
    core::Attention attn(config, kHidden);
    randomize(*attn);
    // After a pre-softmax swap head 0 normalises head 1's logits against its own sink s_0: what the
    // same module with s_0 and s_1 exchanged gives as its head 1 (without sinks, the module itself).
    core::Attention sinks_swapped(config, kHidden);
    copy_all(sinks_swapped, attn);
    if (config.sinks) sinks_swapped->sinks.copy_(attn->sinks.index_select(0, swapped_order));
    auto x = torch::randn({2, 6, kHidden});
    // V_i = X W_V^iᵀ + b_V^i, computed apart from the engine.
    auto V = (torch::matmul(x.to(torch::kFloat64), attn->v->weight.to(torch::kFloat64).t()) +
              attn->v->bias.to(torch::kFloat64))
                 .view({2, 6, heads, dv})
                 .permute({0, 2, 1, 3});  // [B, h, S, d_v]
    for (bool causal : {false, true}) {
      INFO((causal ? "causal" : "bidirectional"));
      auto plain = run_engine(attn, x, causal);
      core::HeadControls identity;
      identity.pre_mix = identity.post_mix = row_major(torch::eye(heads));
      auto same = run_engine(attn, x, causal, &identity);
      CHECK(max_abs_diff(same.out, plain.out) < kTol);
      CHECK(max_abs_diff(same.stages.weights, plain.stages.weights) < kTol);

      const auto& W = plain.stages.weights;  // [B, h, T, S]
      const auto reference = run_engine(sinks_swapped, x, causal).stages;
      const auto W_pre = reference.weights.index_select(1, swapped_order);
      core::HeadControls pre;
      pre.pre_mix = row_major(swap_01(heads));  // L ← L·P: heads 0 and 1 exchange their logits
      auto p = run_engine(attn, x, causal, &pre);
      CHECK(max_abs_diff(p.stages.mixed_logits, plain.stages.logits.index_select(1, swapped_order)) < kTol);
      CHECK(max_abs_diff(p.stages.weights, W_pre) < kTol);
      if (config.sinks) {
        CHECK(max_abs_diff(p.stages.sink_share, reference.sink_share.index_select(1, swapped_order)) < kTol);  // [B, h, T]
        CHECK(max_abs_diff(p.stages.weights, W.index_select(1, swapped_order)) > 1e-3);  // the sinks stay put
      }
      // Each head keeps its own values: O'_0 = W'_0 V_0.
      CHECK(max_abs_diff(p.stages.head_outputs, torch::matmul(W_pre.to(torch::kFloat64), V)) < kTol);
      CHECK(max_abs_diff(p.out, plain.out) > 1e-3);

      core::HeadControls post;
      post.post_mix = row_major(swap_01(heads));  // U ← W·P
      auto q = run_engine(attn, x, causal, &post);
      CHECK(max_abs_diff(q.stages.weights, W) < kTol);
      if (config.sinks) CHECK(max_abs_diff(q.stages.sink_share, plain.stages.sink_share) < kTol);
      CHECK(max_abs_diff(q.stages.mixed_weights, W.index_select(1, swapped_order)) < kTol);
      CHECK(max_abs_diff(q.stages.head_outputs, torch::matmul(W.index_select(1, swapped_order).to(torch::kFloat64), V)) < kTol);
      // Swapping before or after the softmax is the same, unless each head's sink makes them differ.
      if (config.sinks) {
        CHECK(max_abs_diff(q.out, p.out) > 1e-3);
      } else {
        CHECK(max_abs_diff(q.out, p.out) < kTol);
      }
    }
    core::HeadControls wrong;
    wrong.pre_mix = {1, 0, 0, 1};
    CHECK_THROWS_AS(run_engine(attn, x, false, &wrong), std::invalid_argument);
  }
}

TEST_CASE("user mixing turns MHA into talking-heads, on talking-heads it composes with P_l and P_w",
          "[attention][equivalence][mix][talking-heads]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(17);
  const int heads = 3;
  core::Attention mha(make_config(heads, heads, 4, 2), kHidden);
  randomize(*mha);
  auto th_config = make_config(heads, heads, 4, 2);
  th_config.talking_heads = core::TalkingHeads{heads, heads, heads};
  core::Attention th(th_config, kHidden);
  copy_all(th, mha);  // q, k, v, o
  auto P_l = torch::randn({heads, heads}), P_w = torch::randn({heads, heads});
  th->pre_mix.copy_(P_l);
  th->post_mix.copy_(P_w);
  core::HeadControls controls;
  controls.pre_mix = row_major(P_l);
  controls.post_mix = row_major(P_w);
  auto x = torch::randn({2, 5, kHidden});
  for (bool causal : {false, true}) {
    INFO((causal ? "causal" : "bidirectional"));
    auto a = run_engine(mha, x, causal, &controls), b = run_engine(th, x, causal);
    CHECK(max_abs_diff(a.out, b.out) < kTol);
    CHECK(max_abs_diff(a.stages.mixed_logits, b.stages.mixed_logits) < kTol);
    CHECK(max_abs_diff(a.stages.mixed_weights, b.stages.mixed_weights) < kTol);
  }
  // On a talking-heads layer (h_k=3, h=4, h_v=2), the user's M follows the model's mix:
  // L·M = J·(P_l·M) and U·M' = W·(P_w·M').
  auto config = make_config(3, 3, 4, 2);
  config.talking_heads = core::TalkingHeads{3, 4, 2};
  core::Attention layer(config, kHidden);
  randomize(*layer);
  core::Attention folded(config, kHidden);
  copy_all(folded, layer);
  auto M = torch::randn({4, 4}), M2 = torch::randn({2, 2});
  folded->pre_mix.copy_(torch::matmul(layer->pre_mix, M));
  folded->post_mix.copy_(torch::matmul(layer->post_mix, M2));
  core::HeadControls user;
  user.pre_mix = row_major(M);
  user.post_mix = row_major(M2);
  for (bool causal : {false, true}) {
    INFO((causal ? "causal, folded" : "bidirectional, folded"));
    auto a = run_engine(layer, x, causal, &user), b = run_engine(folded, x, causal);
    CHECK(max_abs_diff(a.out, b.out) < kTol);
    CHECK(max_abs_diff(a.stages.weights, b.stages.weights) < kTol);
    CHECK(max_abs_diff(a.stages.mixed_weights, b.stages.mixed_weights) < kTol);
  }
}
