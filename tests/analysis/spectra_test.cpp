// Key-query spectra: forms built to have known singular values, the same spectra by an independent
// route (eigenvalues of BᵀB), the form reproducing the engine's logits for every variant, and the
// low-rank bottleneck of the logits (Bhojanapalli et al. 2020).
#include "test_common.h"

#include "analysis/composition.h"
#include "analysis/spectra.h"
#include "analysis/spectrum_curves.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace core = headlab::core;
namespace analysis = headlab::analysis;
using headlab::test::max_abs_diff;

namespace {

core::AttentionConfig attention(int heads, int kv_heads, int key_size, int value_size = 4) {
  core::AttentionConfig a;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.key_size = key_size;
  a.value_size = value_size;
  a.qkv_bias = false;  // the form is the bilinear part: without biases it is the whole logit
  return a;
}

core::ModelConfig tiny_model(const core::AttentionConfig& a, int hidden = 16, int layers = 2) {
  core::ModelConfig c;
  c.kind = core::StackKind::Encoder;
  c.vocab_size = 23;
  c.hidden_size = hidden;
  c.max_positions = 32;
  c.positions = core::PositionKind::Learned;
  c.ffn.inner_size = 24;
  c.encoder = core::StackConfig{layers, a, std::nullopt, {}, false, std::nullopt};
  return c;
}

// Every attention parameter drawn afresh (HeadLab's initialisation keeps the talking-heads and
// collaborative mixes near identity/ones, which would hide a wrong head index).
void randomize_attention(core::Model& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (const headlab::core::Stack stack : {headlab::core::Stack::Encoder, headlab::core::Stack::Decoder})
    for (int l = 0; l < model.module->layer_count(stack); ++l) {
      auto block = model.module->block(stack, l);
      for (auto& p : block->attn->parameters()) p.copy_(torch::randn(p.sizes()) * 0.5);
      if (block->cross_attn)
        for (auto& p : block->cross_attn->parameters()) p.copy_(torch::randn(p.sizes()) * 0.5);
    }
}

std::vector<std::pair<std::string, core::AttentionConfig>> variants() {
  std::vector<std::pair<std::string, core::AttentionConfig>> out;
  out.emplace_back("MHA", attention(4, 4, 4));
  out.emplace_back("GQA", attention(4, 2, 4));
  out.emplace_back("MQA", attention(4, 1, 4));
  out.emplace_back("decoupled key size", attention(2, 2, 6));  // d_k = 6 != D/h = 8
  auto talking = attention(3, 3, 4);
  talking.talking_heads = core::TalkingHeads{3, 4, 2};
  out.emplace_back("talking heads", talking);
  auto collaborative = attention(4, 4, 4);
  collaborative.collaborative = core::Collaborative{12};
  out.emplace_back("collaborative", collaborative);
  auto wide = attention(4, 4, 4);
  wide.collaborative = core::Collaborative{20};  // D̃_k > D: the form is full-rank in principle
  out.emplace_back("collaborative, D̃_k > D", wide);
  return out;
}

std::vector<int64_t> some_ids(int T) {
  std::vector<int64_t> ids;
  for (int t = 0; t < T; ++t) ids.push_back((7 * t + 3) % 23);
  return ids;
}

// Singular values of a square float64 matrix by another route: sqrt of the eigenvalues of BᵀB.
std::vector<double> singular_values_by_eigh(const torch::Tensor& B) {
  auto eigenvalues = std::get<0>(at::linalg_eigh(torch::matmul(B.t(), B), "L")).contiguous();  // ascending
  std::vector<double> out;
  for (int64_t i = eigenvalues.numel() - 1; i >= 0; --i) out.push_back(std::sqrt(std::max(0.0, eigenvalues[i].item<double>())));
  return out;
}

// Orthonormal columns: Q of a random matrix's QR.
torch::Tensor orthonormal(int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  return std::get<0>(at::linalg_qr(torch::randn({n, n}, torch::kFloat64), "reduced"));
}

void check_values(const std::vector<double>& got, const std::vector<double>& expected, double tol) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("singular value " << i);
    CHECK(got[i] == Approx(expected[i]).margin(tol));
  }
}

}  // namespace

TEST_CASE("energy ranks of hand-picked singular values", "[spectra]") {
  // 10, 3, 1.5, 0.5 → energies 100, 9, 2.25, 0.25 of 111.5: cumulative .8969, .9776, .9978, 1.
  auto s = analysis::spectrum_from_singular_values({0.5, 10, 3, 1.5});
  check_values(s.singular_values, {10, 3, 1.5, 0.5}, 0);
  check_values(s.cumulative_energy, {100 / 111.5, 109 / 111.5, 111.25 / 111.5, 1.0}, 1e-15);
  CHECK(s.rank90 == 2);
  CHECK(s.rank95 == 2);
  CHECK(s.rank99 == 3);
  CHECK(s.applicable);

  // Exactly on a threshold: 3, 1 → 0.9 after the first value.
  auto edge = analysis::spectrum_from_singular_values({1, 3});
  CHECK(edge.rank90 == 1);
  CHECK(edge.rank95 == 2);
  CHECK(edge.rank99 == 2);

  // One direction holds everything.
  auto one = analysis::spectrum_from_singular_values({0, 7, 0});
  CHECK(one.rank90 == 1);
  CHECK(one.rank99 == 1);
  check_values(one.cumulative_energy, {1, 1, 1}, 0);

  // Nothing to explain: ranks 0.
  auto zero = analysis::spectrum_from_singular_values({0, 0});
  CHECK(zero.rank90 == 0);
  CHECK(zero.rank99 == 0);
  CHECK(analysis::spectrum_from_singular_values({}).singular_values.empty());

  CHECK_THROWS_AS(analysis::spectrum_from_singular_values({1, -1}), std::invalid_argument);
  CHECK_THROWS_AS(analysis::spectrum_from_singular_values({1, std::nan("")}), std::invalid_argument);
}

TEST_CASE("spectrum_of a matrix with known singular values", "[spectra]") {
  // U diag(σ) Vᵀ with orthonormal U [5, 3], V [4, 3]: σ and one zero (min(5, 4) = 4 values).
  auto U = orthonormal(5, 1).narrow(1, 0, 3), V = orthonormal(4, 2).narrow(1, 0, 3);
  auto sigma = torch::tensor({6.0, 2.0, 0.5}, torch::kFloat64);
  auto s = analysis::spectrum_of(torch::matmul(U * sigma, V.t()));
  check_values(s.singular_values, {6, 2, 0.5, 0}, 1e-12);
  // Energies 36, 4, 0.25 of 40.25: cumulative .894, .9938, 1.
  CHECK(s.rank90 == 2);
  CHECK(s.rank95 == 2);
  CHECK(s.rank99 == 2);
  CHECK(analysis::spectrum_of(torch::zeros({3, 2})).rank90 == 0);
  CHECK_THROWS_AS(analysis::spectrum_of(torch::zeros({3})), std::invalid_argument);
}

TEST_CASE("a form built with rank 3 and singular values 8, 3, 1 has exactly those", "[spectra]") {
  // D = 8, two heads of d_k = 4. Head 0: W_Q^0 = [8u0, 3u1, 1u2, 0], W_K^0 = [v0, v1, v2, v3], so
  // B_0 = 8 u0 v0ᵀ + 3 u1 v1ᵀ + u2 v2ᵀ. Head 1: W_Q^1 = [2u3, 2u4, 0, 0], W_K^1 = [v4 … v7], so
  // B_1 = 2 u3 v4ᵀ + 2 u4 v5ᵀ, on directions orthogonal to head 0's.
  auto model = core::make_random_model(tiny_model(attention(2, 2, 4), 8, 1), 1);
  auto U = orthonormal(8, 11), V = orthonormal(8, 12);
  auto WQ = torch::zeros({8, 8}, torch::kFloat64);  // D × h·d_k
  const std::vector<std::pair<int, double>> query_columns = {{0, 8}, {1, 3}, {2, 1}, {4, 2}, {5, 2}};
  const std::vector<int> u_index = {0, 1, 2, 3, 4};
  for (size_t i = 0; i < query_columns.size(); ++i)
    WQ.select(1, query_columns[i].first).copy_(U.select(1, u_index[i]) * query_columns[i].second);
  {
    torch::NoGradGuard no_grad;
    auto attn = model->module->block(headlab::core::Stack::Encoder, 0)->attn;
    attn->q->weight.copy_(WQ.t());  // weights are [out, in]
    attn->k->weight.copy_(V.t());
  }
  const double tol = 1e-5;  // the weights are float32
  auto spectra = analysis::key_query_spectra(*model);
  REQUIRE(spectra.size() == 1);
  const auto& layer = spectra[0];
  CHECK(layer.stack == headlab::core::Stack::Encoder);
  CHECK(layer.layer == 0);
  REQUIRE(layer.heads.size() == 2);
  check_values(layer.heads[0].singular_values, {8, 3, 1, 0, 0, 0, 0, 0}, tol);
  // Energies 64, 9, 1 of 74: cumulative .865, .986, 1.
  CHECK(layer.heads[0].rank90 == 2);
  CHECK(layer.heads[0].rank95 == 2);
  CHECK(layer.heads[0].rank99 == 3);
  check_values(layer.heads[1].singular_values, {2, 2, 0, 0, 0, 0, 0, 0}, tol);
  CHECK(layer.heads[1].rank90 == 2);
  // The layer: W_Q's columns are orthogonal (norms 8, 3, 1, 2, 2), W_K is orthonormal, and the
  // product is B_0 + B_1 on orthogonal directions.
  check_values(layer.query.singular_values, {8, 3, 2, 2, 1, 0, 0, 0}, tol);
  check_values(layer.key.singular_values, std::vector<double>(8, 1.0), tol);
  check_values(layer.product.singular_values, {8, 3, 2, 2, 1, 0, 0, 0}, tol);
  // The form itself, through a full SVD of the [D, D] matrix.
  auto B0 = analysis::key_query_form(*model, headlab::core::Stack::Encoder, 0, 0);
  REQUIRE(B0.scalar_type() == torch::kFloat64);
  REQUIRE(B0.sizes() == torch::IntArrayRef({8, 8}));
  check_values(analysis::spectrum_of(B0).singular_values, {8, 3, 1, 0, 0, 0, 0, 0}, tol);

  CHECK_THROWS_AS(analysis::key_query_form(*model, headlab::core::Stack::Encoder, 0, 2), std::out_of_range);
  CHECK_THROWS_AS(analysis::key_query_form(*model, headlab::core::Stack::Encoder, 1, 0), std::out_of_range);
  CHECK_THROWS(analysis::key_query_form(*model, headlab::core::Stack::Decoder, 0, 0));
  CHECK_THROWS_AS(headlab::core::stack_from_name("sideways"), std::invalid_argument);
}

TEST_CASE("a GQA or MQA layer's product spectrum is that of W_Q times the repeated W_K", "[spectra]") {
  // The layer's product is computed from factors of width kv_heads·d_k (the query heads of each
  // group summed); here it is checked against the SVD of the product written out.
  for (const auto& [name, config] : variants()) {
    if (config.kv_heads == config.heads || config.collaborative || config.talking_heads) continue;
    INFO(name);
    auto model = core::make_random_model(tiny_model(config, 24), 5);
    randomize_attention(*model, 6);
    const auto spectra = analysis::key_query_spectra(*model);
    auto attn = model->module->block(headlab::core::Stack::Encoder, 1)->attn;
    const auto WQ = attn->q->weight.detach().to(torch::kFloat64).t();  // [D, h·d_k]
    const auto WK = attn->k->weight.detach().to(torch::kFloat64).t();  // [D, kv·d_k]
    const auto K = WK.view({24, config.kv_heads, config.key_size})
                       .repeat_interleave(config.heads / config.kv_heads, 1)
                       .reshape({24, int64_t(config.heads) * config.key_size});
    const auto expected = at::linalg_svdvals(torch::matmul(WQ, K.t()));
    const auto& got = spectra[1].product.singular_values;
    REQUIRE(got.size() == size_t(expected.numel()));
    const double top = expected[0].item<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("singular value " << i);
      CHECK(std::abs(got[i] - expected[int64_t(i)].item<double>()) <= 1e-10 * top);
    }
  }
}

TEST_CASE("a large matrix's spectrum, taken through its Gram matrix, keeps its values and energy ranks", "[spectra]") {
  // 600 × 600 (past the Gram route's threshold, 512) with known singular values: 40 spread from 10
  // down to 1e-3, the rest 0.
  const int64_t n = 600;
  std::vector<double> s(n, 0.0);
  for (int i = 0; i < 40; ++i) s[i] = 10.0 * std::pow(1e-4, i / 39.0);
  const auto U = orthonormal(n, 7), V = orthonormal(n, 8);
  const auto M = torch::matmul(U * torch::tensor(s, torch::kFloat64).unsqueeze(0), V.t());
  const auto got = analysis::spectrum_of(M);
  const auto want = analysis::spectrum_from_singular_values(s);
  REQUIRE(got.singular_values.size() == size_t(n));
  for (int i = 0; i < n; ++i) {
    INFO("singular value " << i);
    if (i < 40)
      CHECK(std::abs(got.singular_values[i] - s[i]) <= 1e-9 * s[0]);
    else  // a zero comes out as the square root of the eigensolver's rounding: ~√(n·ε) of the largest
      CHECK(got.singular_values[i] <= 1e-6 * s[0]);
  }
  CHECK(got.rank90 == want.rank90);
  CHECK(got.rank95 == want.rank95);
  CHECK(got.rank99 == want.rank99);
  for (int i = 0; i < n; ++i) CHECK(std::abs(got.cumulative_energy[i] - want.cumulative_energy[i]) <= 1e-12);
}

TEST_CASE("head spectra agree with the eigenvalues of BᵀB for every variant", "[spectra]") {
  for (const auto& [name, config] : variants()) {
    INFO(name);
    auto model = core::make_random_model(tiny_model(config), 3);
    randomize_attention(*model, 4);
    auto spectra = analysis::key_query_spectra(*model);
    REQUIRE(spectra.size() == 2);
    for (int l = 0; l < 2; ++l) {
      REQUIRE(int(spectra[l].heads.size()) == config.softmax_heads());
      for (int h = 0; h < config.softmax_heads(); ++h) {
        INFO("layer " << l << " head " << h);
        auto B = analysis::key_query_form(*model, headlab::core::Stack::Encoder, l, h);
        const auto expected = singular_values_by_eigh(B);
        const auto& got = spectra[l].heads[h].singular_values;
        REQUIRE(got.size() == expected.size());
        // The form's rank: d_k, h_k·d_k (talking heads) or D̃_k (collaborative), at most D.
        const int64_t width = config.collaborative   ? config.collaborative->shared_key_size
                              : config.talking_heads ? int64_t(config.talking_heads->key_heads) * config.key_size
                                                     : config.key_size;
        const size_t rank = std::min<int64_t>(width, B.size(0));
        const double top = expected[0];
        for (size_t i = 0; i < got.size(); ++i) {
          INFO("singular value " << i);
          if (i < rank) {
            CHECK(std::abs(got[i] - expected[i]) <= 1e-8 * expected[i]);
          } else {  // beyond the rank: zero (the eigenvalue route leaves ~sqrt(ε)·σ_max)
            CHECK(got[i] <= 1e-12 * top);
            CHECK(expected[i] <= 1e-6 * top);
          }
        }
      }
    }
  }
}

TEST_CASE("x_tᵀ B_h x_s times the scale reproduces the engine's logits for every variant", "[spectra]") {
  const int T = 7;
  for (const auto& [name, config] : variants()) {
    INFO(name);
    auto model = core::make_random_model(tiny_model(config), 5);
    randomize_attention(*model, 6);
    core::RunRequest request;
    request.ids = some_ids(T);
    request.capture = core::kCaptureLogits | core::kCaptureMixedLogits | core::kCaptureResidual;
    auto trace = core::run(*model, request);
    for (int l = 0; l < 2; ++l) {
      INFO("layer " << l);
      // Pre-LN: attention reads the normalised residual stream.
      torch::Tensor x;
      {
        torch::NoGradGuard no_grad;
        x = model->module->block(headlab::core::Stack::Encoder, l)->attn_norm->forward(trace->encoder.hidden[l]).to(torch::kFloat64);
      }
      const auto& stages = trace->encoder.layers[l].self;
      const auto& logits = config.talking_heads ? stages.mixed_logits : stages.logits;  // L, or J (== L)
      REQUIRE(logits.size(0) == config.softmax_heads());
      for (int h = 0; h < config.softmax_heads(); ++h) {
        INFO("head " << h);
        auto B = analysis::key_query_form(*model, headlab::core::Stack::Encoder, l, h);
        auto predicted = torch::matmul(torch::matmul(x, B), x.t()) * double(config.logit_scale());
        auto expected = logits[h].to(torch::kFloat64);
        const double size = std::max(1.0, expected.abs().max().item<double>());
        CHECK(max_abs_diff(predicted, expected) < 1e-5 * size);
      }
    }
  }
}

TEST_CASE("cross-attention forms reproduce the cross logits, RoPE forms hold at offset 0", "[spectra]") {
  SECTION("cross-attention: queries from the decoder, keys from the encoder's memory") {
    auto config = tiny_model(attention(4, 4, 4));
    config.kind = core::StackKind::EncoderDecoder;
    config.decoder = core::StackConfig{2, attention(4, 4, 4), attention(4, 2, 3), {}, false, std::nullopt};
    config.objective = "seq2seq";
    auto model = core::make_random_model(config, 7);
    randomize_attention(*model, 8);
    auto spectra = analysis::key_query_spectra(*model);
    REQUIRE(spectra.size() == 6);  // encoder 0, 1; decoder 0, 1; cross 0, 1
    CHECK(spectra[0].stack == headlab::core::Stack::Encoder);
    CHECK(spectra[2].stack == headlab::core::Stack::Decoder);
    CHECK(spectra[4].stack == headlab::core::Stack::Cross);
    CHECK(spectra[5].layer == 1);
    torch::NoGradGuard no_grad;
    torch::manual_seed(9);
    auto x = torch::randn({1, 5, 16}), y = torch::randn({1, 6, 16});
    core::AttentionCall call;
    call.query_input = x;
    call.key_input = y;
    call.apply_pattern = false;
    call.capture = core::kCaptureLogits;
    core::AttentionStages stages;
    auto cross = model->module->block(headlab::core::Stack::Decoder, 1)->cross_attn;
    cross->forward(call, &stages);
    auto x64 = x[0].to(torch::kFloat64), y64 = y[0].to(torch::kFloat64);
    for (int h = 0; h < 4; ++h) {
      auto B = analysis::key_query_form(*model, headlab::core::Stack::Cross, 1, h);
      auto predicted = torch::matmul(torch::matmul(x64, B), y64.t()) * double(cross->config().logit_scale());
      auto expected = stages.logits[0][h].to(torch::kFloat64);
      CHECK(max_abs_diff(predicted, expected) < 1e-5 * std::max(1.0, expected.abs().max().item<double>()));
    }
  }
  SECTION("RoPE: the rotation cancels on the diagonal (t = s), where the form is exact") {
    auto config = tiny_model(attention(4, 2, 4));
    config.positions = core::PositionKind::Rope;
    auto model = core::make_random_model(config, 10);
    randomize_attention(*model, 11);
    core::RunRequest request;
    request.ids = some_ids(9);
    request.capture = core::kCaptureLogits | core::kCaptureResidual;
    auto trace = core::run(*model, request);
    torch::Tensor x;
    {
      torch::NoGradGuard no_grad;
      x = model->module->block(headlab::core::Stack::Encoder, 1)->attn_norm->forward(trace->encoder.hidden[1]).to(torch::kFloat64);
    }
    const double scale = config.encoder->attention.logit_scale();
    for (int h = 0; h < 4; ++h) {
      auto B = analysis::key_query_form(*model, headlab::core::Stack::Encoder, 1, h);
      auto full = torch::matmul(torch::matmul(x, B), x.t()) * scale;
      auto expected = trace->encoder.layers[1].self.logits[h].to(torch::kFloat64);
      const double size = std::max(1.0, expected.abs().max().item<double>());
      CHECK(max_abs_diff(full.diagonal(), expected.diagonal()) < 1e-5 * size);
      CHECK(max_abs_diff(full, expected) > 1e-3 * size);  // off the diagonal the rotation matters
    }
  }
}

TEST_CASE("additive scoring has no key-query form", "[spectra]") {
  auto config = attention(2, 2, 4);
  config.scoring = core::Scoring::Additive;
  auto model = core::make_random_model(tiny_model(config), 12);
  CHECK_FALSE(analysis::key_query_form(*model, headlab::core::Stack::Encoder, 0, 1).defined());
  auto spectra = analysis::key_query_spectra(*model);
  REQUIRE(spectra.size() == 2);
  REQUIRE(spectra[0].heads.size() == 2);
  CHECK_FALSE(spectra[0].heads[0].applicable);
  CHECK(spectra[0].heads[0].singular_values.empty());
  CHECK_FALSE(spectra[0].product.applicable);
  CHECK(spectra[0].query.applicable);  // the projections themselves still have spectra
  CHECK(spectra[0].query.singular_values.size() == 8);
}

TEST_CASE("logit spectra: rank at most d_k when d_k < T (the low-rank bottleneck)", "[spectra]") {
  const int T = 16;
  auto numerical_rank = [](const analysis::Spectrum& s) {
    int rank = 0;
    for (double v : s.singular_values) rank += v > 1e-4 * s.singular_values[0];
    return rank;
  };
  auto run = [&](int key_size) {
    auto model = core::make_random_model(tiny_model(attention(2, 2, key_size), 32), 13);
    randomize_attention(*model, 14);
    core::RunRequest request;
    request.ids = some_ids(T);
    request.capture = core::kCaptureLogits;
    auto trace = core::run(*model, request);
    auto spectra = analysis::logit_spectra(trace->encoder.layers[0].self);
    REQUIRE(spectra.size() == 2);
    // The same values as one SVD per head.
    for (int h = 0; h < 2; ++h) {
      auto direct = analysis::spectrum_of(trace->encoder.layers[0].self.logits[h]);
      check_values(spectra[h].singular_values, direct.singular_values, 1e-9 * direct.singular_values[0]);
    }
    return spectra;
  };
  for (const auto& s : run(4)) {
    CHECK(s.singular_values.size() == size_t(T));
    CHECK(numerical_rank(s) <= 4);
    CHECK(s.rank99 <= 4);
  }
  // The control: with d_k = 16 = T the same model's logits use more than 4 directions.
  for (const auto& s : run(16)) CHECK(numerical_rank(s) > 4);

  core::AttentionStages empty;
  CHECK_THROWS_AS(analysis::logit_spectra(empty), std::invalid_argument);
}

TEST_CASE("spectrum curves: a zero or negligible form draws nothing, a working one its ranks above 1e-9 σ_1", "[spectra]") {
  const auto working = analysis::spectrum_from_singular_values({8, 2, 1e-3, 1e-12, 0});
  CHECK(analysis::drawn_ranks(working) == 3);  // 1e-12 < 1e-9 · 8
  const auto relative = analysis::relative_singular_values(working);
  REQUIRE(relative.size() == 3);
  CHECK(relative[0] == 1.0);
  CHECK(relative[1] == 0.25);
  CHECK(analysis::drawn_energy(working).size() == 3);

  const auto zero = analysis::spectrum_from_singular_values({0, 0, 0});
  CHECK(analysis::drawn_ranks(zero) == 0);
  CHECK(analysis::relative_singular_values(zero).empty());
  CHECK(analysis::drawn_energy(zero).empty());
  CHECK(analysis::drawn_ranks(analysis::Spectrum{}) == 0);

  // A decayed head's form beside its layer's: 4e-10 against 8.6 is nothing, 0.034 is small but real.
  const auto decayed = analysis::spectrum_from_singular_values({4e-10, 1e-11});
  const auto small = analysis::spectrum_from_singular_values({0.034, 1e-3});
  const std::vector<analysis::Spectrum> layer = {working, zero, decayed, small, analysis::spectrum_from_singular_values({8.6})};
  const double top = analysis::largest_singular_value(layer);
  CHECK(top == 8.6);
  CHECK(analysis::negligible_form(zero, top));
  CHECK(analysis::negligible_form(decayed, top));
  CHECK(!analysis::negligible_form(small, top));
  CHECK(!analysis::negligible_form(working, top));
  // A layer whose heads are all zero (the default's layer 3): each is, and the layer's top is 0.
  CHECK(analysis::largest_singular_value(std::vector<analysis::Spectrum>{zero, zero}) == 0);
  CHECK(analysis::negligible_form(zero, 0));
}

TEST_CASE("the shipped default model: 5 layers × 8 heads, each form of rank at most d_k = 32", "[spectra]") {
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  auto spectra = analysis::key_query_spectra(*model);
  REQUIRE(spectra.size() == 5);
  for (const auto& layer : spectra) {
    INFO("layer " << layer.layer);
    REQUIRE(layer.heads.size() == 8);
    CHECK(layer.query.singular_values.size() == 256);
    CHECK(layer.product.singular_values.size() == 256);
    for (int h = 0; h < 8; ++h) {
      INFO("head " << h);
      const auto& head = layer.heads[h];
      REQUIRE(head.singular_values.size() == 256);
      if (layer.layer == 3) {
        // Layer 3's query weights are zero by design (assets/README.md, "How the default gets its
        // roles"): each query is its bias, so the bilinear form is the zero matrix, rank 0.
        CHECK(head.singular_values[0] == 0);
        CHECK(head.rank99 == 0);
        continue;
      }
      if (layer.layer == 4 && (h == 1 || h == 4 || h == 5)) {
        // The positional heads' query/key weights were decayed (train --decay-only) until only
        // their biases steer them: σ_1 below 1/100 of the other layer-4 heads' (5.7 to 8.6).
        CHECK(head.singular_values[0] < 0.05);
        continue;
      }
      CHECK(head.singular_values[31] > 0);
      CHECK(head.singular_values[32] == 0);
      CHECK(head.rank99 <= 32);
    }
  }
  // One head through the full [256, 256] SVD agrees with the factored route.
  auto full = analysis::spectrum_of(analysis::key_query_form(*model, headlab::core::Stack::Encoder, 4, 6));
  const auto& factored = spectra[4].heads[6].singular_values;
  for (int i = 0; i < 32; ++i) CHECK(std::abs(full.singular_values[i] - factored[i]) <= 1e-10 * factored[0]);
  CHECK(full.singular_values[32] < 1e-10 * factored[0]);
}

TEST_CASE("latent attention: each head's key-query form is its non-rotated logit through the latents", "[spectra][latent]") {
  using Catch::Matchers::Contains;
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/latent.json");
  auto model = core::make_random_model(config, 5);
  torch::NoGradGuard no_grad;
  auto& attn = *model->module->block(core::Stack::Decoder, 0)->attn;
  const auto& a = attn.config();
  const int64_t r = a.latent->kv_rank, dR = a.latent->rope_size, dN = a.key_size - dR, T = 6;
  // The shared rotated key zeroed: the logits are the non-rotated part alone, which the form must give
  // once the latents' RMS denominators (input-dependent, left out of the form) are put back.
  attn.kv_down->weight.narrow(0, r, dR).zero_();
  const auto x = torch::randn({1, T, int64_t(config.hidden_size)});
  core::AttentionCall call;
  call.query_input = x;
  call.key_input = x;
  call.capture = core::kCaptureLogits;
  core::AttentionStages stages;
  attn.forward(call, &stages);
  auto rms = [&](const torch::Tensor& c) { return (c.pow(2).mean(-1) + double(a.latent->norm_eps)).sqrt()[0]; };  // [T]
  const auto rq = rms(attn.q_down(x)), rk = rms(attn.kv_down(x).narrow(-1, 0, r));
  for (int h = 0; h < a.heads; ++h) {
    INFO("head " << h);
    const auto B = analysis::key_query_form(*model, core::Stack::Decoder, 0, h).to(torch::kFloat32);  // [D, D]
    const auto bilinear = torch::matmul(torch::matmul(x[0], B), x[0].t());                            // [T, T]
    const auto logits = stages.logits[0][h] / a.logit_scale() * rq.unsqueeze(1) * rk.unsqueeze(0);
    CHECK(max_abs_diff(bilinear, logits) < 1e-4 * bilinear.abs().max().item<double>());
  }
  const auto spectra = analysis::key_query_spectra(*model);
  REQUIRE(spectra.size() == 2);
  CHECK_THAT(spectra[0].note, Contains("multi-head latent attention") && Contains("RoPE part"));
  for (const auto& s : spectra[0].heads) {  // rank at most the non-rotated width
    const double top = s.singular_values.front();
    CHECK(std::count_if(s.singular_values.begin(), s.singular_values.end(), [&](double v) { return v > 1e-9 * top; }) <= dN);
  }
  const auto composition = analysis::composition_scores(*model);
  CHECK(std::any_of(composition.notes.begin(), composition.notes.end(),
                    [](const std::string& n) { return n.find("multi-head latent attention") != std::string::npos; }));
  REQUIRE(composition.v.size() == 2);
  CHECK(composition.v[0][0][1][0] > 0);  // the values read through the latent compose
}

TEST_CASE("disentangled attention: the forms are the content term, and the analyses say so", "[spectra][disentangled]") {
  using Catch::Matchers::Contains;
  auto config = core::load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/disentangled.json");
  auto model = core::make_random_model(config, 5);
  const auto spectra = analysis::key_query_spectra(*model);
  REQUIRE(spectra.size() == 2);
  CHECK_THAT(spectra[0].note, Contains("disentangled attention") && Contains("content-to-position"));
  // The content term alone: head h's form is W_Q^hᵀ W_K^h over its rows of the projections, nothing of
  // the position table.
  auto& attn = *model->module->block(core::Stack::Encoder, 1)->attn;
  for (int h = 0; h < 4; ++h) {
    const auto rows = [&](const torch::Tensor& w) { return w.narrow(0, int64_t(h) * 16, 16).to(torch::kFloat64); };
    const auto expected = torch::matmul(rows(attn.q->weight).t(), rows(attn.k->weight));  // [D, D]
    const auto form = analysis::key_query_form(*model, core::Stack::Encoder, 1, h);
    CHECK(max_abs_diff(form, expected) < 1e-9 * expected.abs().max().item<double>());
  }
  const auto composition = analysis::composition_scores(*model);
  CHECK(std::any_of(composition.notes.begin(), composition.notes.end(),
                    [](const std::string& n) { return n.find("disentangled attention") != std::string::npos; }));
}
