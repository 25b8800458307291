// Each attention variant against an independent transcription of its paper's equations: plain loops
// over small random tensors (or the paper's own einsums for talking-heads), in float64, never through
// the engine's code paths. Tolerance 1e-5.
#include "test_common.h"
#include "small_models.h"

#include "core/model/attention.h"
#include "core/attention_test_util.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

constexpr double kTol = 1e-5;
constexpr int64_t kHidden = 12;

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;  // [rows][cols]

Vec to_vec(const torch::Tensor& t) {
  auto d = t.to(torch::kFloat64).contiguous();
  return Vec(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

Mat to_mat(const torch::Tensor& t) {
  Mat m(t.size(0));
  for (int64_t i = 0; i < t.size(0); ++i) m[i] = to_vec(t[i]);
  return m;
}

torch::Tensor to_tensor(const std::vector<Mat>& heads) {  // [h][rows][cols] → float64 tensor
  auto out = torch::zeros({int64_t(heads.size()), int64_t(heads[0].size()), int64_t(heads[0][0].size())}, torch::kFloat64);
  auto a = out.accessor<double, 3>();
  for (size_t h = 0; h < heads.size(); ++h)
    for (size_t i = 0; i < heads[h].size(); ++i)
      for (size_t j = 0; j < heads[h][i].size(); ++j) a[h][i][j] = heads[h][i][j];
  return out;
}

// Rows [r0, r0 + n) of x·Wᵀ + b for every position: one head's slice of a projection.
Mat project(const Mat& x, const torch::Tensor& weight, const torch::Tensor& bias, int64_t r0, int64_t n) {
  const Mat W = to_mat(weight);
  const Vec b = bias.defined() ? to_vec(bias) : Vec(W.size(), 0.0);
  Mat out(x.size(), Vec(n, 0.0));
  for (size_t t = 0; t < x.size(); ++t)
    for (int64_t j = 0; j < n; ++j) {
      double sum = b[r0 + j];
      for (size_t d = 0; d < x[t].size(); ++d) sum += W[r0 + j][d] * x[t][d];
      out[t][j] = sum;
    }
  return out;
}

// Softmax over the allowed entries of one row; blocked entries get exactly 0.
Vec masked_softmax(const Vec& e, const std::vector<bool>& allowed) {
  double top = -std::numeric_limits<double>::infinity();
  for (size_t s = 0; s < e.size(); ++s)
    if (allowed[s]) top = std::max(top, e[s]);
  Vec w(e.size(), 0.0);
  double sum = 0;
  for (size_t s = 0; s < e.size(); ++s)
    if (allowed[s]) sum += (w[s] = std::exp(e[s] - top));
  for (double& v : w) v /= sum;
  return w;
}

// Longformer (Beltagy et al. 2020) transcribed: a band of `window` dilated steps on each side
// (0 = unlimited), keys at multiples of `dilation` only, global tokens see and are seen by all;
// a causal decoder additionally never looks ahead.
bool allowed_ref(int64_t t, int64_t s, bool causal, const core::AttentionPattern& p) {
  const int64_t dist = t - s, d = p.dilation;
  bool ok = (p.window == 0 || std::abs(dist) <= int64_t(p.window) * d) && dist % d == 0;
  for (int g : p.global_tokens) ok = ok || g == t || g == s;
  return ok && (!causal || s <= t);
}

void randomize(torch::nn::Module& m, double scale = 0.5) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) p.copy_(torch::randn(p.sizes()) * scale);
}

struct Reference {
  std::vector<Mat> logits;   // [h][T][S], scaled
  std::vector<Mat> weights;  // [h][T][S]
  std::vector<Mat> heads;    // O [h][T][d_v]
  Mat out;                   // [T][D]
};

// W_O applied to the concatenated heads: out_t = b_O + Σ_i W_O^i o_{i,t}.
Mat output_projection(core::AttentionImpl& a, const std::vector<Mat>& heads) {
  const Mat Wo = to_mat(a.o->weight);
  const Vec bo = a.o->bias.defined() ? to_vec(a.o->bias) : Vec(Wo.size(), 0.0);
  const size_t T = heads[0].size(), dv = heads[0][0].size();
  Mat out(T, Vec(Wo.size(), 0.0));
  for (size_t t = 0; t < T; ++t)
    for (size_t o = 0; o < Wo.size(); ++o) {
      double sum = bo[o];
      for (size_t i = 0; i < heads.size(); ++i)
        for (size_t j = 0; j < dv; ++j) sum += Wo[o][i * dv + j] * heads[i][t][j];
      out[t][o] = sum;
    }
  return out;
}

// O_i = Σ_s w_{i,ts} v_{i,s}, then W_O.
void finish(core::AttentionImpl& a, const std::vector<Mat>& values, Reference& r) {
  for (size_t i = 0; i < r.weights.size(); ++i) {
    Mat o(r.weights[i].size(), Vec(values[i][0].size(), 0.0));
    for (size_t t = 0; t < o.size(); ++t)
      for (size_t s = 0; s < values[i].size(); ++s)
        for (size_t j = 0; j < o[t].size(); ++j) o[t][j] += r.weights[i][t][s] * values[i][s][j];
    r.heads.push_back(o);
  }
  r.out = output_projection(a, r.heads);
}

// Vaswani et al. 2017 per head, with decoupled d_k/d_v (Bhojanapalli et al. 2020), shared kv heads
// (MQA, Shazeer 2019; GQA, Ainslie et al. 2023: query head i reads kv head i/(heads/kv_heads)),
// dot-product or additive (Bahdanau et al. 2015: e_ts = vᵢᵀ tanh(q_{i,t} + k_{i,s})) scores.
Reference standard_reference(core::AttentionImpl& a, const Mat& x, const Mat& y, bool causal, bool masked,
                             const std::vector<bool>& key_padding = {}) {
  const auto& c = a.config();
  const int64_t T = x.size(), S = y.size(), dk = c.key_size, dv = c.value_size;
  const double scale = c.scale ? *c.scale : c.scoring == core::Scoring::Additive ? 1.0 : 1.0 / std::sqrt(double(dk));
  const int group = c.heads / c.kv_heads;
  Reference r;
  std::vector<Mat> values;
  for (int i = 0; i < c.heads; ++i) {
    const int g = i / group;
    const Mat Q = project(x, a.q->weight, a.q->bias, i * dk, dk);
    const Mat K = project(y, a.k->weight, a.k->bias, g * dk, dk);
    values.push_back(project(y, a.v->weight, a.v->bias, g * dv, dv));
    const Vec v_score = c.scoring == core::Scoring::Additive ? to_vec(a.score_v[i]) : Vec();
    Mat e(T, Vec(S)), w(T);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<bool> allowed(S);
      for (int64_t s = 0; s < S; ++s) {
        double score = 0;
        for (int64_t j = 0; j < dk; ++j)
          score += c.scoring == core::Scoring::Dot ? Q[t][j] * K[s][j] : v_score[j] * std::tanh(Q[t][j] + K[s][j]);
        e[t][s] = score * scale;
        allowed[s] = (!masked || allowed_ref(t, s, causal, c.pattern)) && (key_padding.empty() || !key_padding[s]);
      }
      w[t] = masked_softmax(e[t], allowed);
    }
    r.logits.push_back(e);
    r.weights.push_back(w);
  }
  finish(a, values, r);
  return r;
}

// DeBERTa's row of the position table for query i and key j, from He et al. 2021 (§3.1: δ = i − j kept
// within [−k, k)) and DeBERTa-v3's logarithmic buckets (beyond buckets/2, ⌈log(|δ|/mid) /
// log((max_distance − 1)/mid) · (mid − 1)⌉ + mid with δ's sign), in float64.
int64_t deberta_row(int64_t i, int64_t j, const core::Disentangled& d) {
  double delta = double(i - j);
  if (d.buckets > 0) {
    const double mid = d.buckets / 2;
    if (std::abs(delta) > mid) {
      const double bucket = std::ceil(std::log(std::abs(delta) / mid) / std::log((d.max_distance - 1) / mid) * (mid - 1)) + mid;
      delta = delta > 0 ? bucket : -bucket;
    }
  }
  const int64_t k = d.span();
  return std::clamp<int64_t>(int64_t(delta) + k, 0, 2 * k - 1);
}

// LayerNorm of each row in float64 (biased variance).
Mat layer_norm_rows(const Mat& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  const Vec w = to_vec(weight), b = to_vec(bias);
  Mat out = x;
  for (auto& row : out) {
    double mean = 0, var = 0;
    for (double v : row) mean += v / row.size();
    for (double v : row) var += (v - mean) * (v - mean) / row.size();
    for (size_t i = 0; i < row.size(); ++i) row[i] = (row[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }
  return out;
}

using headlab::test::EngineResult;

EngineResult run_engine(core::Attention& a, const torch::Tensor& x, const torch::Tensor& y, bool causal,
                        bool apply_pattern = true, const torch::Tensor& key_padding = {}) {
  core::AttentionCall call;
  call.query_input = x;
  call.key_input = y;
  call.causal = causal;
  call.apply_pattern = apply_pattern;
  call.key_padding = key_padding;
  return headlab::test::run_attention(a, call);
}

// Engine result (batch b) vs a reference, every stage the reference has.
void check_against(const EngineResult& e, int64_t b, const Reference& r) {
  CHECK(max_abs_diff(e.stages.logits[b], to_tensor(r.logits)) < kTol);
  CHECK(max_abs_diff(e.stages.weights[b], to_tensor(r.weights)) < kTol);
  CHECK(max_abs_diff(e.stages.mixed_weights[b], to_tensor(r.weights)) < kTol);  // U == W without mixing
  CHECK(max_abs_diff(e.stages.head_outputs[b], to_tensor(r.heads)) < kTol);
  CHECK(max_abs_diff(e.out[b], to_tensor({r.out})[0]) < kTol);
}

// One attention config of the given head counts and sizes (tests/small_models.h).
core::AttentionConfig make_config(int heads, int kv_heads, int key_size, int value_size) {
  return headlab::test::attention(heads, kv_heads, key_size, value_size);
}

}  // namespace

TEST_CASE("MHA, MQA, GQA and decoupled key/value sizes match a loop transcription", "[attention][variants]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  std::vector<core::AttentionConfig> configs = {
      make_config(4, 4, 3, 3),  // MHA, d_k = D/h
      make_config(4, 1, 3, 3),  // MQA
      make_config(6, 2, 2, 5),  // GQA: 3 query heads per kv head, d_v != d_k
      make_config(3, 3, 5, 7),  // decoupled: d_k = 5 != D/h = 4, d_v = 7 different again
  };
  auto no_bias = make_config(4, 2, 4, 2);
  no_bias.qkv_bias = no_bias.out_bias = false;
  no_bias.scale = 0.3f;
  configs.push_back(no_bias);
  for (const auto& config : configs) {
    core::Attention attn(config, kHidden);
    randomize(*attn);
    CHECK(attn->k->weight.size(0) == int64_t(config.kv_heads) * config.key_size);
    CHECK(attn->v->weight.size(0) == int64_t(config.kv_heads) * config.value_size);
    auto x = torch::randn({2, 5, kHidden});
    auto memory = torch::randn({2, 7, kHidden});
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << (causal ? " causal" : ""));
      auto e = run_engine(attn, x, x, causal);
      for (int64_t b = 0; b < 2; ++b) check_against(e, b, standard_reference(*attn, to_mat(x[b]), to_mat(x[b]), causal, true));
    }
    INFO(config.variant_name() << " cross-attention, S != T");
    auto e = run_engine(attn, x, memory, false, /*apply_pattern=*/false);
    for (int64_t b = 0; b < 2; ++b) check_against(e, b, standard_reference(*attn, to_mat(x[b]), to_mat(memory[b]), false, false));
  }
}

TEST_CASE("key padding blocks keys exactly and matches the loop", "[attention][variants]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(2);
  core::Attention attn(make_config(4, 2, 3, 3), kHidden);
  randomize(*attn);
  auto x = torch::randn({2, 6, kHidden});
  auto padding = torch::zeros({2, 6}, torch::kBool);
  padding[1].narrow(0, 4, 2).fill_(true);  // the second sequence is 4 tokens + 2 padding
  auto e = run_engine(attn, x, x, false, true, padding);
  check_against(e, 0, standard_reference(*attn, to_mat(x[0]), to_mat(x[0]), false, true));
  check_against(e, 1, standard_reference(*attn, to_mat(x[1]), to_mat(x[1]), false, true, {false, false, false, false, true, true}));
  CHECK(e.stages.weights[1].narrow(-1, 4, 2).abs().max().item<float>() == 0.0f);
}

TEST_CASE("talking-heads matches the paper's einsums at every stage", "[attention][variants][talking-heads]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  // h_k != h != h_v in the first; h == h_v in the second, so the blog's O = einsum(W, V) is defined.
  for (core::TalkingHeads th : {core::TalkingHeads{3, 4, 2}, core::TalkingHeads{3, 4, 4}, core::TalkingHeads{4, 2, 3}}) {
    auto config = make_config(th.key_heads, th.key_heads, 4, 3);
    config.talking_heads = th;
    core::Attention attn(config, kHidden);
    randomize(*attn);
    const int64_t B = 2, n = 5, hk = th.key_heads, h = th.softmax_heads, hv = th.value_heads, dk = 4, dv = 3;
    REQUIRE(attn->pre_mix.sizes() == torch::IntArrayRef({hk, h}));
    REQUIRE(attn->post_mix.sizes() == torch::IntArrayRef({h, hv}));
    auto x = torch::randn({B, n, kHidden});
    auto d = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
    auto X = d(x);
    // Shazeer et al. 2020, § 4 (einsum notation), with the paper's index names.
    auto Q = torch::einsum("bnd,hkd->bnhk", {X, d(attn->q->weight).view({hk, dk, kHidden})}) + d(attn->q->bias).view({hk, dk});
    auto K = torch::einsum("bmd,hkd->bmhk", {X, d(attn->k->weight).view({hk, dk, kHidden})}) + d(attn->k->bias).view({hk, dk});
    auto V = torch::einsum("bmd,hvd->bmhv", {X, d(attn->v->weight).view({hv, dv, kHidden})}) + d(attn->v->bias).view({hv, dv});
    auto J = torch::einsum("bnhk,bmhk->bnmh", {Q, K}) / std::sqrt(double(dk));
    auto L = torch::einsum("bnmh,hi->bnmi", {J, d(attn->pre_mix)});
    auto Wo = d(attn->o->weight).view({kHidden, hv, dv});
    auto bo = d(attn->o->bias);
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << (causal ? " causal" : ""));
      // The mask applies to L, after P_l (masking J instead would mix -inf into allowed logits).
      auto Lm = L;
      if (causal) Lm = L.masked_fill(torch::ones({n, n}, torch::kBool).triu(1).view({1, n, n, 1}), -INFINITY);
      auto W = torch::softmax(Lm, 2);  // over the keys m
      auto U = torch::einsum("bnmh,hi->bnmi", {W, d(attn->post_mix)});
      auto O = torch::einsum("bnmh,bmhv->bnhv", {U, V});  // the paper's O uses U
      auto Y = torch::einsum("bnhv,dhv->bnd", {O, Wo}) + bo;

      auto e = run_engine(attn, x, x, causal);
      const auto& s = e.stages;
      CHECK(max_abs_diff(s.logits, J.permute({0, 3, 1, 2})) < kTol);         // J [B, h_k, T, S]
      CHECK(max_abs_diff(s.mixed_logits, L.permute({0, 3, 1, 2})) < kTol);   // L, before the mask
      CHECK(max_abs_diff(s.weights, W.permute({0, 3, 1, 2})) < kTol);        // W [B, h, T, S]
      CHECK(max_abs_diff(s.mixed_weights, U.permute({0, 3, 1, 2})) < kTol);  // U [B, h_v, T, S]
      CHECK(max_abs_diff(s.head_outputs, O.permute({0, 2, 1, 3})) < kTol);   // O [B, h_v, T, d_v]
      CHECK(max_abs_diff(e.out, Y) < kTol);
      if (h == hv) {
        // A widely read blog computes O = einsum(W, V), skipping P_w: that must not pass.
        auto O_blog = torch::einsum("bnmh,bmhv->bnhv", {W, V});
        auto Y_blog = torch::einsum("bnhv,dhv->bnd", {O_blog, Wo}) + bo;
        CHECK(max_abs_diff(Y_blog, Y) > 0.05);
        REQUIRE(max_abs_diff(e.out, Y_blog) > 0.05);
        REQUIRE(max_abs_diff(s.head_outputs, O_blog.permute({0, 2, 1, 3})) > 0.05);
      }
    }
  }
}

TEST_CASE("collaborative attention matches its equations, and its content bias is the full-bias form",
          "[attention][variants][collaborative]") {
  // Cordonnier et al. 2020: head i's logits are X W̃_Q diag(m_i) W̃_Kᵀ Xᵀ + 1 r_iᵀ Xᵀ, scaled by
  // 1/sqrt(D̃_k / h); with r_i = W̃_K (b̃_Q ⊙ m_i) the softmax equals that of the full-bias form
  // (X W̃_Q + b̃_Q) diag(m_i) (X W̃_K + b̃_K)ᵀ for any b̃_K.
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  auto config = make_config(3, 3, 4, 2);
  config.collaborative = core::Collaborative{5};  // D̃_k = 5
  core::Attention attn(config, kHidden);
  randomize(*attn);
  REQUIRE(attn->mix.sizes() == torch::IntArrayRef({3, 5}));
  REQUIRE(attn->content_bias.sizes() == torch::IntArrayRef({3, kHidden}));
  REQUIRE_FALSE(attn->k->bias.defined());
  REQUIRE_FALSE(attn->q->bias.defined());
  auto x = torch::randn({2, 6, kHidden});
  auto query_bias = torch::randn({5}), key_bias = torch::randn({5});  // b̃_Q, b̃_K of the full form
  const double scale = 1.0 / std::sqrt(5.0 / 3.0);
  CHECK(config.logit_scale() == Approx(scale));
  for (int step = 0; step < 2; ++step) {
    if (step == 1) {  // r_i = W̃_Kᵀ (b̃_Q ⊙ m_i), as a [D] vector acting on x_s
      for (int i = 0; i < 3; ++i) attn->content_bias[i].copy_(attn->k->weight.t().matmul(query_bias * attn->mix[i]));
    }
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << (causal ? " causal" : "") << " step " << step);
      auto e = run_engine(attn, x, x, causal);
      for (int64_t b = 0; b < 2; ++b) {
        const Mat X = to_mat(x[b]);
        const Mat Qs = project(X, attn->q->weight, {}, 0, 5);  // X W̃_Q
        const Mat Ks = project(X, attn->k->weight, {}, 0, 5);  // X W̃_K
        const Vec bq = to_vec(query_bias), bk = to_vec(key_bias);
        Reference r;
        std::vector<Mat> values, full_weights;
        for (int i = 0; i < 3; ++i) {
          const Vec m = to_vec(attn->mix[i]);
          const Vec ri = to_vec(attn->content_bias[i]);
          values.push_back(project(X, attn->v->weight, attn->v->bias, i * 2, 2));
          Mat e_i(6, Vec(6)), f_i(6, Vec(6)), w_i(6), fw_i(6);
          for (int t = 0; t < 6; ++t) {
            std::vector<bool> allowed(6);
            for (int s = 0; s < 6; ++s) {
              double plain = 0, full = 0, content = 0;
              for (int j = 0; j < 5; ++j) {
                plain += Qs[t][j] * m[j] * Ks[s][j];
                full += (Qs[t][j] + bq[j]) * m[j] * (Ks[s][j] + bk[j]);
              }
              for (int d = 0; d < kHidden; ++d) content += ri[d] * X[s][d];
              e_i[t][s] = (plain + content) * scale;
              f_i[t][s] = full * scale;
              allowed[s] = !causal || s <= t;
            }
            w_i[t] = masked_softmax(e_i[t], allowed);
            fw_i[t] = masked_softmax(f_i[t], allowed);
          }
          r.logits.push_back(e_i);
          r.weights.push_back(w_i);
          full_weights.push_back(fw_i);
        }
        finish(*attn, values, r);
        check_against(e, b, r);
        if (step == 1) {  // the re-parametrisation: the same weights as the full-bias form
          CHECK(max_abs_diff(e.stages.weights[b], to_tensor(full_weights)) < kTol);
        } else {          // a random content bias is not that form
          CHECK(max_abs_diff(e.stages.weights[b], to_tensor(full_weights)) > 1e-3);
        }
      }
    }
  }
}

TEST_CASE("additive scoring matches Bahdanau's e = vᵀ tanh(q + k)", "[attention][variants][additive]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  auto mha = make_config(2, 2, 3, 4);
  mha.scoring = core::Scoring::Additive;
  CHECK(mha.logit_scale() == 1.0f);  // additive logits are not scaled by default
  auto gqa = make_config(4, 2, 3, 2);
  gqa.scoring = core::Scoring::Additive;
  gqa.scale = 0.7f;
  auto windowed = mha;
  windowed.pattern.window = 1;
  for (const auto& config : {mha, gqa, windowed}) {
    core::Attention attn(config, kHidden);
    randomize(*attn);
    REQUIRE(attn->score_v.sizes() == torch::IntArrayRef({config.heads, config.key_size}));
    auto x = torch::randn({2, 5, kHidden});
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << " scale " << config.logit_scale() << (causal ? " causal" : ""));
      auto e = run_engine(attn, x, x, causal);
      for (int64_t b = 0; b < 2; ++b) check_against(e, b, standard_reference(*attn, to_mat(x[b]), to_mat(x[b]), causal, true));
    }
  }
}

TEST_CASE("attention_allowed follows Longformer's window, dilation and global rules", "[attention][variants][pattern]") {
  int cases = 0;
  for (int64_t T : {1, 4, 9}) {
    for (int window : {0, 1, 2, 4}) {
      for (int dilation : {1, 2, 3}) {
        for (const auto& globals : std::vector<std::vector<int>>{{}, {0}, {3}, {0, 6}, {12}}) {
          for (bool causal : {false, true}) {
            core::AttentionPattern p{window, dilation, globals};
            auto allowed = core::attention_allowed(T, T, causal, p);
            REQUIRE(allowed.sizes() == torch::IntArrayRef({T, T}));
            REQUIRE(allowed.scalar_type() == torch::kBool);
            auto a = allowed.accessor<bool, 2>();
            bool same = true;
            for (int64_t t = 0; t < T; ++t)
              for (int64_t s = 0; s < T; ++s) same = same && a[t][s] == allowed_ref(t, s, causal, p);
            INFO("T " << T << " window " << window << " dilation " << dilation << " globals " << globals.size()
                      << " causal " << causal);
            CHECK(same);
            ++cases;
          }
        }
      }
    }
  }
  CHECK(cases == 360);
  // Spot checks written out by hand: w = 2, d = 2 at t = 4 sees 0, 2, 4, 6, 8.
  auto row = core::attention_allowed(9, 9, false, {2, 2, {}})[4];
  CHECK(row.equal(torch::tensor({1, 0, 1, 0, 1, 0, 1, 0, 1}, torch::kBool)));
  auto global = core::attention_allowed(5, 5, false, {1, 1, {3}});
  CHECK(global[3].all().item<bool>());                                   // a global token sees all
  CHECK(global.select(1, 3).all().item<bool>());                         // and is seen by all
  CHECK_FALSE(global[0][2].item<bool>());
}

TEST_CASE("patterned attention matches the loop, masked weights are exactly 0", "[attention][variants][pattern]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  std::vector<core::AttentionPattern> patterns = {{1, 1, {}}, {2, 2, {}}, {1, 3, {0}}, {1, 1, {0, 5}}, {0, 2, {}}};
  for (const auto& pattern : patterns) {
    auto config = make_config(4, 2, 3, 3);
    config.pattern = pattern;
    core::Attention attn(config, kHidden);
    randomize(*attn);
    auto x = torch::randn({2, 8, kHidden});
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << " dilation " << pattern.dilation << (causal ? " causal" : ""));
      auto e = run_engine(attn, x, x, causal);
      for (int64_t b = 0; b < 2; ++b) check_against(e, b, standard_reference(*attn, to_mat(x[b]), to_mat(x[b]), causal, true));
      auto blocked = core::attention_allowed(8, 8, causal, pattern).logical_not().expand({2, 4, 8, 8});
      CHECK(blocked.any().item<bool>());
      CHECK(e.stages.weights.masked_select(blocked).abs().max().item<float>() == 0.0f);
      CHECK(e.stages.weights.masked_select(blocked.logical_not()).min().item<float>() > 0.0f);
    }
  }
}

TEST_CASE("a sliding window of w >= T is full attention", "[attention][variants][pattern]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(7);
  auto full_config = make_config(4, 4, 3, 3);
  core::Attention full(full_config, kHidden);
  randomize(*full);
  auto x = torch::randn({2, 6, kHidden});
  for (int window : {5, 6, 10}) {
    auto config = full_config;
    config.pattern.window = window;
    core::Attention windowed(config, kHidden);
    for (auto& item : full->named_parameters()) windowed->named_parameters()[item.key()].copy_(item.value());
    for (bool causal : {false, true}) {
      INFO("window " << window << (causal ? " causal" : ""));
      auto a = run_engine(full, x, x, causal), b = run_engine(windowed, x, x, causal);
      CHECK(max_abs_diff(a.out, b.out) < 1e-6);
      CHECK(max_abs_diff(a.stages.weights, b.stages.weights) < 1e-6);
    }
  }
  // …and a window smaller than T is not (so the comparison above can fail).
  auto config = full_config;
  config.pattern.window = 2;
  core::Attention narrow(config, kHidden);
  for (auto& item : full->named_parameters()) narrow->named_parameters()[item.key()].copy_(item.value());
  CHECK(max_abs_diff(run_engine(full, x, x, false).out, run_engine(narrow, x, x, false).out) > 1e-3);
}

TEST_CASE("every attention row sums to 1, causal rows are exactly 0 above the diagonal", "[attention][variants]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(8);
  std::vector<core::AttentionConfig> configs = {make_config(4, 4, 3, 3), make_config(4, 1, 3, 3), make_config(6, 3, 2, 5),
                                                make_config(3, 3, 5, 7)};
  auto th = make_config(3, 3, 4, 3);
  th.talking_heads = core::TalkingHeads{3, 4, 2};
  auto collab = make_config(3, 3, 4, 3);
  collab.collaborative = core::Collaborative{6};
  auto additive = make_config(2, 1, 3, 3);
  additive.scoring = core::Scoring::Additive;
  auto patterned = make_config(4, 2, 3, 3);
  patterned.pattern = {2, 2, {1}};
  configs.insert(configs.end(), {th, collab, additive, patterned});
  for (const auto& config : configs) {
    core::Attention attn(config, kHidden);
    randomize(*attn, 1.0);  // large logits: sharp rows
    auto x = torch::randn({2, 7, kHidden});
    for (bool causal : {false, true}) {
      INFO(config.variant_name() << (causal ? " causal" : ""));
      auto e = run_engine(attn, x, x, causal);
      const auto& W = e.stages.weights;  // [B, h, T, S]
      CHECK(W.size(1) == config.softmax_heads());
      CHECK((W.sum(-1) - 1).abs().max().item<float>() < kTol);
      CHECK(W.min().item<float>() >= 0.0f);
      if (!config.talking_heads) CHECK((e.stages.mixed_weights.sum(-1) - 1).abs().max().item<float>() < kTol);
      if (causal) {
        auto above = torch::ones({7, 7}, torch::kBool).triu(1);
        CHECK(W.masked_select(above.expand_as(W)).abs().max().item<float>() == 0.0f);
        const auto& U = e.stages.mixed_weights;
        CHECK(U.masked_select(above.expand_as(U)).abs().max().item<float>() == 0.0f);
      }
    }
  }
}

TEST_CASE("disentangled attention's position rows follow DeBERTa's clamp and log buckets", "[attention][variants][disentangled]") {
  // DeBERTa-v3's own shape (256 buckets to 512), a small one that buckets within a sentence, and v2's clamp.
  for (const auto& d : {core::Disentangled{256, 512}, core::Disentangled{8, 64}, core::Disentangled{0, 6}}) {
    INFO("buckets " << d.buckets << ", max_distance " << d.max_distance);
    const int64_t n = 700;
    const auto rows = core::disentangled_position_rows(torch::arange(n), torch::arange(n), d);
    REQUIRE(rows.sizes() == torch::IntArrayRef({n, n}));
    auto a = rows.accessor<int64_t, 2>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) wrong += a[i][j] != deberta_row(i, j, d);
    CHECK(wrong == 0);
  }
  // Queries at later positions (a cached step) read the rows of their absolute offsets.
  const core::Disentangled d{8, 64};
  const auto step = core::disentangled_position_rows(torch::arange(20, 21), torch::arange(21), d);
  for (int64_t j = 0; j < 21; ++j) CHECK(step[0][j].item<int64_t>() == deberta_row(20, j, d));
}

TEST_CASE("disentangled attention matches DeBERTa's content-to-position and position-to-content terms",
          "[attention][variants][disentangled]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(23);
  struct Terms { bool c2p, p2c; };
  for (const bool shared : {true, false})
    for (const Terms terms : {Terms{true, true}, Terms{true, false}, Terms{false, true}})
      for (const int buckets : {0, 4}) {
        auto config = make_config(2, 2, 3, 4);
        config.disentangled = core::Disentangled{buckets, buckets > 0 ? 9 : 3, terms.c2p, terms.p2c, shared, true, 1e-7f};
        const auto& d = *config.disentangled;
        CHECK(config.logit_scale() == Approx(1.0 / std::sqrt(3.0 * (1 + terms.c2p + terms.p2c))));
        core::Attention attn(config, kHidden);
        randomize(*attn);
        REQUIRE(attn->pos_k.is_empty() == (shared || !terms.c2p));
        REQUIRE(attn->pos_q.is_empty() == (shared || !terms.p2c));
        // The stack hands every layer its table (core/model/transformer.cpp); here the test does.
        attn->rel_embeddings = torch::randn({2 * int64_t(d.span()), kHidden});
        attn->rel_norm = torch::nn::LayerNorm(torch::nn::LayerNormOptions({kHidden}).eps(d.table_norm_eps));
        attn->rel_norm->weight.copy_(1 + 0.2 * torch::randn({kHidden}));
        attn->rel_norm->bias.copy_(0.2 * torch::randn({kHidden}));
        const Mat table = layer_norm_rows(to_mat(attn->rel_embeddings), attn->rel_norm->weight, attn->rel_norm->bias, d.table_norm_eps);
        auto x = torch::randn({2, 7, kHidden});
        for (bool causal : {false, true}) {
          INFO((shared ? "shared" : "own") << " position projections, c2p " << terms.c2p << ", p2c " << terms.p2c
                                            << ", buckets " << buckets << (causal ? ", causal" : ""));
          const auto e = run_engine(attn, x, x, causal);
          for (int64_t b = 0; b < 2; ++b) {
            const Mat xb = to_mat(x[b]);
            const int64_t T = xb.size(), dk = config.key_size, dv = config.value_size;
            const double scale = 1.0 / std::sqrt(double(dk) * d.terms());
            Reference r;
            std::vector<Mat> values;
            for (int i = 0; i < config.heads; ++i) {
              const Mat Q = project(xb, attn->q->weight, attn->q->bias, i * dk, dk);
              const Mat K = project(xb, attn->k->weight, attn->k->bias, i * dk, dk);
              const auto& pk_lin = shared ? attn->k : attn->pos_k;
              const auto& pq_lin = shared ? attn->q : attn->pos_q;
              const Mat PK = terms.c2p ? project(table, pk_lin->weight, pk_lin->bias, i * dk, dk) : Mat();
              const Mat PQ = terms.p2c ? project(table, pq_lin->weight, pq_lin->bias, i * dk, dk) : Mat();
              values.push_back(project(xb, attn->v->weight, attn->v->bias, i * dv, dv));
              Mat logits(T, Vec(T)), w(T);
              for (int64_t t = 0; t < T; ++t) {
                std::vector<bool> allowed(T);
                for (int64_t s = 0; s < T; ++s) {
                  const int64_t row = deberta_row(t, s, d);
                  double score = 0;
                  for (int64_t j = 0; j < dk; ++j) {
                    score += Q[t][j] * K[s][j];
                    if (terms.c2p) score += Q[t][j] * PK[row][j];
                    if (terms.p2c) score += K[s][j] * PQ[row][j];
                  }
                  logits[t][s] = score * scale;
                  allowed[s] = !causal || s <= t;
                }
                w[t] = masked_softmax(logits[t], allowed);
              }
              r.logits.push_back(logits);
              r.weights.push_back(w);
            }
            finish(*attn, values, r);
            check_against(e, b, r);
          }
        }
      }
}
