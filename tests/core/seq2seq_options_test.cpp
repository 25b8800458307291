// The engine options the Hugging Face encoder-decoders need, each usable by any native model and
// each checked against its formula: T5's relative position bias (buckets, one table per stack,
// causal and bidirectional, through the generation cache), the sinusoidal table in halves
// (Marian), a position table and embedding norm per stack (BART), the LM head's input scale (T5)
// and the decoder's start token. Plus their config round trip and validation.
#include "test_common.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "core/model/attention.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/tokenizer/framing.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

// A T5-shaped encoder-decoder: RMSNorm pre-norm, no positions, no biases, unit logit scale and a
// relative bias of `buckets` up to `max_distance` in both stacks' self-attention.
core::ModelConfig t5_like(int buckets, int max_distance) {
  auto c = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(4, 4, 4, 4), 2, 40);
  c.positions = core::PositionKind::None;
  c.norm = core::NormKind::RMSNorm;
  c.ffn.bias = false;
  for (auto* stack : {&c.encoder, &c.decoder}) {
    auto& a = (*stack)->attention;
    a.qkv_bias = a.out_bias = false;
    a.scale = 1.0f;
    a.relative_bias = core::RelativeBias{buckets, max_distance};
  }
  return c;
}

std::shared_ptr<const core::Trace> run_pair(core::Model& model, const std::vector<int64_t>& ids,
                                            const std::vector<int64_t>& decoder_ids) {
  core::RunRequest request;
  request.ids = ids;
  request.decoder_ids = decoder_ids;
  request.capture = core::kCaptureWeights | core::kCaptureLogits;
  return core::run(model, request);
}

int64_t bucket_at(const torch::Tensor& buckets, int64_t t, int64_t s) { return buckets[t][s].item<int64_t>(); }

}  // namespace

TEST_CASE("relative position buckets: T5's exact and logarithmic buckets, computed by hand", "[attention][t5]") {
  // Key offset k − q of one query at position 1000 against keys around it.
  auto bucket = [](int64_t offset, bool bidirectional, int buckets = 32, int max_distance = 128) {
    auto q = torch::tensor(std::vector<int64_t>{1000});
    auto k = torch::tensor(std::vector<int64_t>{1000 + offset});
    return bucket_at(core::relative_position_buckets(q, k, buckets, max_distance, bidirectional), 0, 0);
  };
  // Bidirectional, 32 buckets: 16 per direction, 8 exact offsets, then ⌊8 + ln(r/8)/ln(16)·8⌋.
  CHECK(bucket(0, true) == 0);
  CHECK(bucket(-1, true) == 1);
  CHECK(bucket(-7, true) == 7);
  CHECK(bucket(-8, true) == 8);     // ln(1) = 0
  CHECK(bucket(-20, true) == 10);   // 8 + 0.9163/2.7726·8 = 10.64
  CHECK(bucket(-127, true) == 15);  // 8 + 7.97
  CHECK(bucket(-500, true) == 15);  // clamped to the last bucket
  CHECK(bucket(1, true) == 17);     // keys after the query: the upper half
  CHECK(bucket(20, true) == 26);
  CHECK(bucket(500, true) == 31);
  // Causal, 32 buckets: 16 exact offsets into the past, then ⌊16 + ln(r/16)/ln(8)·16⌋; the future is 0.
  CHECK(bucket(3, false) == 0);
  CHECK(bucket(-1, false) == 1);
  CHECK(bucket(-15, false) == 15);
  CHECK(bucket(-16, false) == 16);
  CHECK(bucket(-100, false) == 30);  // 16 + 1.8326/2.0794·16 = 30.10
  CHECK(bucket(-1000, false) == 31);
  // A small table: 8 buckets to distance 10, bidirectional: 2 exact, ⌊2 + ln(r/2)/ln(5)·2⌋.
  CHECK(bucket(-4, true, 8, 10) == 2);  // 2 + 0.861
  CHECK(bucket(-5, true, 8, 10) == 3);  // 2 + 1.139
  CHECK(bucket(-9, true, 8, 10) == 3);  // 2 + 1.869, the last of 4
}

TEST_CASE("relative_bias: the logits gain the table row of bucket(s − t) per head, one table shared by the layers",
          "[attention][t5]") {
  const auto with = t5_like(8, 10);
  auto without = with;
  without.encoder->attention.relative_bias.reset();
  without.decoder->attention.relative_bias.reset();
  auto model = core::make_random_model(with, 11);
  auto plain = core::make_random_model(without, 11);
  {
    // The same weights but for the table; a table of distinct, large entries.
    torch::NoGradGuard no_grad;
    auto source = model->module->named_parameters();
    for (auto& item : plain->module->named_parameters()) item.value().copy_(source[item.key()]);
    for (const char* name : {"encoder.0.attn.relative_bias", "decoder.0.attn.relative_bias"})
      source[name].copy_(torch::randn(source[name].sizes()) * 2.0);
  }
  // Stored once per stack, in layer 0, and every layer reads that tensor.
  std::vector<std::string> names;
  for (const auto& item : model->module->named_parameters())
    if (item.key().find("relative_bias") != std::string::npos) names.push_back(item.key());
  CHECK(names == std::vector<std::string>{"encoder.0.attn.relative_bias", "decoder.0.attn.relative_bias"});
  CHECK(model->module->block(headlab::core::Stack::Encoder, 1)->attn->relative_bias.data_ptr() ==
        model->module->block(headlab::core::Stack::Encoder, 0)->attn->relative_bias.data_ptr());
  int64_t n = 0;
  for (const auto& p : model->module->parameters()) n += p.numel();
  CHECK(model->config.parameter_count() == n);

  const std::vector<int64_t> ids = {3, 17, 1, 30, 12, 5, 9, 22, 38, 0, 4, 8};  // offsets up to 11 > max_exact
  const std::vector<int64_t> dec = {0, 7, 19, 2, 33, 6, 11};
  auto a = run_pair(*model, ids, dec), b = run_pair(*plain, ids, dec);
  // Layer 0 sees the same input in both runs: the logits differ by exactly the bias.
  auto check_layer0 = [&](const core::AttentionStages& with_bias, const core::AttentionStages& no_bias,
                          const torch::Tensor& table, bool bidirectional, int64_t T) {
    auto difference = (with_bias.logits - no_bias.logits).squeeze(0);  // [h, T, T]
    // The expected bias, by the scalar formula of the bucket test above (8 buckets to distance 10).
    auto expected = torch::zeros({4, T, T});
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < T; ++s) {
        int64_t r = s - t, bucket = 0, n = 8;
        if (bidirectional) {
          n = 4;
          bucket = r > 0 ? 4 : 0;
          r = std::abs(r);
        } else {
          r = r < 0 ? -r : 0;
        }
        const int64_t exact = n / 2;
        const int64_t large = std::min<int64_t>(
            n - 1, exact + static_cast<int64_t>(std::log(double(r) / exact) / std::log(10.0 / exact) * (n - exact)));
        bucket += r < exact ? r : large;
        for (int64_t h = 0; h < 4; ++h) expected[h][t][s] = table[bucket][h];
      }
    CHECK(max_abs_diff(difference, expected) < 1e-4);
  };
  auto table = [&](const char* name) { return model->module->named_parameters()[name].detach(); };
  check_layer0(a->encoder.layers[0].self, b->encoder.layers[0].self, table("encoder.0.attn.relative_bias"), true,
               static_cast<int64_t>(ids.size()));
  check_layer0(a->decoder.layers[0].self, b->decoder.layers[0].self, table("decoder.0.attn.relative_bias"), false,
               static_cast<int64_t>(dec.size()));
  // Cross-attention has no table of its own and reads none.
  CHECK(!model->module->block(headlab::core::Stack::Decoder, 0)->cross_attn->relative_bias.defined());
}

TEST_CASE("relative_bias: generation with the cache gives the full run's last-position attention", "[attention][t5]") {
  auto config = headlab::test::attention(3, 3, 4, 4);
  config.relative_bias = core::RelativeBias{8, 10};
  config.scale = 1.0f;
  const int64_t D = 10, T = 12;
  core::Attention attention(config, D);
  torch::manual_seed(2);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : attention->parameters()) p.copy_(torch::randn(p.sizes()));
  }
  // A module on its own: the table a stack would own ([buckets, h_k]).
  attention->relative_bias = torch::randn({8, 3}) * 2.0;
  auto x = torch::randn({1, T, D});
  core::AttentionCall full;
  full.query_input = full.key_input = x;
  full.causal = true;
  full.capture = core::kCaptureWeights;
  core::AttentionStages all;
  auto out = attention->forward(full, &all);
  core::LayerCache cache;
  for (int64_t t = 0; t < T; ++t) {
    core::AttentionCall step;
    step.query_input = step.key_input = x.narrow(1, t, 1);
    step.causal = true;
    step.cache = &cache;
    step.position = t;
    step.capture = core::kCaptureWeights;
    core::AttentionStages one;
    auto y = attention->forward(step, &one);
    INFO("position " << t);
    // One row against the whole sequence's product: float32 rounding, which the CPU's kernels (AVX-512,
    // AMX) block differently, reaches 1.0e-5 on some machines; a wrong cache is off by far more.
    CHECK(max_abs_diff(y.squeeze(1), out.select(1, t)) < 3e-5);
    CHECK(max_abs_diff(one.weights.select(2, 0), all.weights.select(2, t).narrow(2, 0, t + 1)) < 1e-6);
  }
}

TEST_CASE("sinusoid_layout: interleaved sin/cos pairs or all sines then all cosines, by formula", "[positions]") {
  auto c = headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  c.positions = core::PositionKind::Sinusoidal;
  const int64_t E = c.hidden_size, P = c.max_positions;
  for (auto layout : {core::SinusoidLayout::Interleaved, core::SinusoidLayout::Halves}) {
    c.sinusoid_layout = layout;
    auto model = core::make_random_model(c, 1);
    const auto& table = model->module->sinusoid;
    REQUIRE(table.sizes() == torch::IntArrayRef({P, E}));
    double worst = 0;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t i = 0; i < E / 2; ++i) {
        const double angle = double(p) / std::pow(10000.0, 2.0 * double(i) / double(E));
        const int64_t sin_at = layout == core::SinusoidLayout::Halves ? i : 2 * i;
        const int64_t cos_at = layout == core::SinusoidLayout::Halves ? E / 2 + i : 2 * i + 1;
        worst = std::max(worst, std::abs(table[p][sin_at].item<double>() - std::sin(angle)));
        worst = std::max(worst, std::abs(table[p][cos_at].item<double>() - std::cos(angle)));
      }
    CHECK(worst < 1e-6);
    // The embedding adds row t to token t.
    auto ids = torch::tensor(std::vector<int64_t>{4, 9, 2}).view({1, 3});
    auto x = model->module->embed(ids);
    CHECK(max_abs_diff(x.squeeze(0), model->module->tokens->weight.index_select(0, ids.view(-1)) + table.narrow(0, 0, 3)) <
          1e-6);
  }
}

TEST_CASE("stack_embeddings: the decoder reads a position table and embedding norm of its own", "[positions]") {
  auto c = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  c.norm_placement = core::NormPlacement::Post;
  c.embedding_norm = true;
  c.final_norm = false;
  c.stack_embeddings = true;
  c.embedding_scale = 2.0f;
  auto model = core::make_random_model(c, 5);
  auto& m = *model->module;
  REQUIRE(m.decoder_positions);
  REQUIRE(m.decoder_embed_norm);
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  CHECK(c.parameter_count() == n);
  auto ids = torch::tensor(std::vector<int64_t>{4, 9, 2, 7}).view({1, 4});
  auto layer_norm = [&](const torch::Tensor& x, const core::Norm& norm) {
    auto centred = x - x.mean(-1, true);
    return centred / (centred.pow(2).mean(-1, true) + c.norm_eps).sqrt() * norm->weight + norm->bias;
  };
  auto tokens = m.tokens->weight.index_select(0, ids.view(-1)) * 2.0;
  auto rows = torch::arange(1, 5, torch::kLong);  // positions 1..4: the tokens start at offset 1
  auto encoder = layer_norm(tokens + m.positions->weight.index_select(0, rows), m.embed_norm);
  auto decoder = layer_norm(tokens + m.decoder_positions->weight.index_select(0, rows), m.decoder_embed_norm);
  CHECK(max_abs_diff(m.embed(ids, {}, false, 1, headlab::core::Stack::Encoder).squeeze(0), encoder) < 1e-5);
  CHECK(max_abs_diff(m.embed(ids, {}, false, 1, headlab::core::Stack::Decoder).squeeze(0), decoder) < 1e-5);
  CHECK(max_abs_diff(encoder, decoder) > 0.1);
  // Only an encoder-decoder has a second stack to embed for.
  auto encoder_only = headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  encoder_only.stack_embeddings = true;
  CHECK_THROWS_WITH(encoder_only.validate(), Catch::Matchers::Contains("stack_embeddings"));
}

TEST_CASE("lm_head.input_scale multiplies the final hidden state before the decoder", "[lm_head]") {
  auto c = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  auto scaled = c;
  scaled.lm_head.input_scale = 0.25f;
  auto a = core::make_random_model(c, 9), b = core::make_random_model(scaled, 9);
  auto h = torch::randn({1, 5, c.hidden_size});
  // With the final norm off the path (applied first in both), the logits scale by exactly 0.25.
  auto normed = a->module->decoder_final_norm(h);
  CHECK(max_abs_diff(b->module->head(h, headlab::core::Stack::Decoder), 0.25 * torch::matmul(normed, a->module->tokens->weight.t())) < 1e-5);
}

TEST_CASE("decoder_start_id: the config's start token before the tokenizer's", "[seq2seq]") {
  auto c = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  c.decoder_start_id = 7;
  CHECK_NOTHROW(c.validate());
  auto bad = c;
  bad.decoder_start_id = 30;
  CHECK_THROWS_WITH(bad.validate(), Catch::Matchers::Contains("decoder_start_id 30 is outside the vocabulary"));
  auto decoder_only = headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  decoder_only.decoder_start_id = 1;
  CHECK_THROWS_WITH(decoder_only.validate(), Catch::Matchers::Contains("decoder_start_id"));
}

TEST_CASE("encoder-decoder options: the config round trip keeps them and validation names them", "[config][seq2seq]") {
  auto c = t5_like(16, 40);
  c.lm_head.input_scale = 0.125f;
  c.decoder_start_id = 3;
  auto json = core::to_json(c);
  auto back = core::model_config_from_json(json);
  REQUIRE(back.encoder->attention.relative_bias);
  CHECK(back.encoder->attention.relative_bias->buckets == 16);
  CHECK(back.encoder->attention.relative_bias->max_distance == 40);
  CHECK(back.lm_head.input_scale == 0.125f);
  CHECK(back.decoder_start_id == std::optional<int64_t>(3));
  CHECK(core::to_json(back) == json);

  auto bart = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(2, 2, 8, 8), 1, 30);
  bart.stack_embeddings = true;
  bart.positions = core::PositionKind::Sinusoidal;
  bart.sinusoid_layout = core::SinusoidLayout::Halves;
  auto bart_back = core::model_config_from_json(core::to_json(bart));
  CHECK(bart_back.stack_embeddings);
  CHECK(bart_back.sinusoid_layout == core::SinusoidLayout::Halves);
  // Configs without the options do not write them, so older readers still read them.
  auto plain = core::to_json(headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(2, 2, 8, 8), 1, 30));
  for (const char* key : {"sinusoid_layout", "stack_embeddings", "decoder_start_id"}) CHECK(!plain.contains(key));

  auto small = t5_like(3, 40);
  CHECK_THROWS_WITH(small.validate(), Catch::Matchers::Contains("relative_bias.buckets must be >= 4"));
  auto near = t5_like(16, 8);
  CHECK_THROWS_WITH(near.validate(), Catch::Matchers::Contains("max_distance must be more than buckets / 2"));
  auto cross = t5_like(16, 40);
  cross.decoder->cross_attention->relative_bias = core::RelativeBias{16, 40};
  CHECK_THROWS_WITH(cross.validate(), Catch::Matchers::Contains("cross_attention.relative_bias"));
  json["encoder"]["attention"]["relative_bias"]["bucket"] = 3;
  CHECK_THROWS_WITH(core::model_config_from_json(json), Catch::Matchers::Contains("unknown key 'bucket'"));
}

TEST_CASE("encoder-decoder options keep LRP conservative: relevance sums to the explained logit", "[lrp][seq2seq]") {
  // The relative bias is a constant added to the logits, and the attention weights are constants
  // under LRP (analysis/LRP.md rule 1); per-stack embeddings, the embedding scale and the head's
  // input scale are linear.
  auto t5 = t5_like(8, 10);
  t5.lm_head.input_scale = 0.3f;
  auto bart = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(2, 2, 8, 8), 2, 40);
  bart.norm_placement = core::NormPlacement::Post;
  bart.final_norm = false;
  bart.embedding_norm = true;
  bart.stack_embeddings = true;
  bart.positions = core::PositionKind::Learned;  // with stack_embeddings: decoder_positions, a constant of its own
  bart.embedding_scale = 4.0f;
  for (const auto& config : {t5, bart}) {
    INFO(config.summary());
    auto model = core::make_random_model(config, 21);
    const std::vector<int64_t> ids = {3, 17, 1, 30, 12, 5, 9, 22, 38, 0, 4, 8};
    const std::vector<int64_t> dec = {0, 7, 19, 2, 33, 6, 11};
    const auto lrp = headlab::analysis::lrp_relevance(*model, ids, {}, {}, dec);
    CHECK(std::abs(lrp.target) > 1e-3);
    CHECK(lrp.relative_residual() < 1e-5);  // float32; measured ≤ 1e-6
    // The logit explained is the model's own: LRP's forward embeds and attends as core::run does.
    const auto trace = run_pair(*model, ids, dec);
    CHECK(lrp.target == Approx(trace->logits[lrp.position][lrp.token].item<double>()).epsilon(1e-4));
  }
}
