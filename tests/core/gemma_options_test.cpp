// The engine options Gemma 2/3 need, each usable by any native model and each checked against its
// formula: attention and final logit soft-capping, norm weights stored as offsets from 1, norms of
// each sublayer's output ("sandwich" norms), scaled token embeddings, and local layers with their own
// attention pattern and RoPE base. Plus their config round trip, validation and LRP conservation.
#include "test_common.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "analysis/spectra.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace core = headlab::core;
namespace analysis = headlab::analysis;
using headlab::test::max_abs_diff;

namespace {

// Every parameter of `model` set to random values (norm weights near `norm_centre`).
void randomise(core::Model& model, uint64_t seed, double norm_centre = 1.0) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model.module->named_parameters()) {
    auto& p = item.value();
    const bool norm = item.key().find("norm") != std::string::npos;
    p.copy_(norm ? norm_centre + 0.3 * torch::randn(p.sizes()) : 0.4 * torch::randn(p.sizes()));
  }
}

// `to` receives `from`'s parameters (same names and shapes), each passed through `edit(name, value)`.
template <typename Edit>
void copy_weights(core::Model& from, core::Model& to, Edit edit) {
  torch::NoGradGuard no_grad;
  auto source = from.module->named_parameters();
  for (auto& item : to.module->named_parameters()) item.value().copy_(edit(item.key(), source[item.key()]));
}

// A Gemma-shaped decoder: RMSNorm, RoPE, GeGLU, GQA with head_dim unlike hidden/heads.
core::ModelConfig gemma_like(int layers) {
  auto c = headlab::test::llama_like(
      headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 2, 6, 6), layers, 40));
  c.ffn.activation = core::Activation::GeluTanh;
  c.lm_head.tied = true;
  return c;
}

std::shared_ptr<const core::Trace> run_ids(core::Model& model, const std::vector<int64_t>& ids,
                                           unsigned capture = core::kCaptureWeights) {
  core::RunRequest request;
  request.ids = ids;
  request.capture = capture;
  return core::run(model, request);
}

const std::vector<int64_t> kIds = {3, 17, 1, 30, 12, 5, 9, 22, 38, 0};

}  // namespace

TEST_CASE("logit_softcap: the logits are cap · tanh(raw / cap), an unbounded cap changes nothing",
          "[attention][gemma][softcap]") {
  auto config = headlab::test::attention(3, 3, 4, 4);
  config.scale = 0.9f;
  const int64_t D = 10, T = 6;
  core::Attention raw(config, D);
  torch::manual_seed(5);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : raw->parameters()) p.copy_(torch::randn(p.sizes()) * 1.2);
  }
  auto with_cap = [&](float cap) {
    auto capped_config = config;
    capped_config.logit_softcap = cap;
    core::Attention capped(capped_config, D);
    torch::NoGradGuard no_grad;
    for (const auto& item : capped->named_parameters()) item.value().copy_(raw->named_parameters()[item.key()]);
    return capped;
  };
  auto x = torch::randn({1, T, D});
  core::AttentionCall call;
  call.query_input = call.key_input = x;
  call.causal = true;
  call.capture = core::kCaptureLogits | core::kCaptureWeights;
  core::AttentionStages plain, capped, huge;
  raw->forward(call, &plain);
  const float cap = 2.0f;
  with_cap(cap)->forward(call, &capped);
  with_cap(1e7f)->forward(call, &huge);

  // The formula, element by element in float64, from the uncapped logits.
  auto J = plain.logits.to(torch::kFloat64);
  double worst = 0;
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < T; ++s) {
        const double expected = cap * std::tanh(J[0][h][t][s].item<double>() / cap);
        worst = std::max(worst, std::abs(expected - capped.logits[0][h][t][s].item<double>()));
      }
  CHECK(worst < 1e-6);
  CHECK(capped.logits.abs().max().item<double>() <= cap);
  CHECK(plain.logits.abs().max().item<double>() > 2 * cap);  // the cap bends these logits
  // The softmax reads the capped logits, under the same causal mask.
  auto blocked = core::attention_allowed(T, T, true, {}).logical_not();
  auto expected_weights = torch::softmax(capped.logits.masked_fill(blocked, -1e30), -1);
  CHECK(max_abs_diff(capped.weights, expected_weights) < 1e-6);
  CHECK(max_abs_diff(capped.weights, plain.weights) > 1e-2);
  // cap → ∞: the uncapped attention.
  CHECK(max_abs_diff(huge.logits, plain.logits) < 1e-5);
  CHECK(max_abs_diff(huge.weights, plain.weights) < 1e-6);
}

TEST_CASE("lm_head.softcap: the model's logits are cap · tanh(uncapped / cap)", "[gemma][softcap]") {
  auto config = gemma_like(2);
  auto plain = core::make_random_model(config, 3);
  randomise(*plain, 3);
  config.lm_head.softcap = 2.0f;
  auto capped = core::make_random_model(config, 3);
  copy_weights(*plain, *capped, [](const std::string&, const torch::Tensor& t) { return t; });
  auto raw = run_ids(*plain, kIds)->logits.to(torch::kFloat64);
  auto bent = run_ids(*capped, kIds)->logits.to(torch::kFloat64);
  CHECK(raw.abs().max().item<double>() > 4.0);
  CHECK(max_abs_diff(bent, 2.0 * torch::tanh(raw / 2.0)) < 1e-5);
  config.lm_head.softcap = 1e8f;
  auto unbounded = core::make_random_model(config, 3);
  copy_weights(*plain, *unbounded, [](const std::string&, const torch::Tensor& t) { return t; });
  CHECK(max_abs_diff(run_ids(*unbounded, kIds)->logits, raw) < 1e-4);
}

TEST_CASE("norm_weight_offset: norms scale by (1 + w), as a model with weights 1 + w", "[gemma][norm]") {
  SECTION("one RMSNorm against x / sqrt(mean(x²) + eps) · (1 + w)") {
    core::Norm norm(core::NormKind::RMSNorm, 5, 1e-6f, 1.0f);
    torch::manual_seed(2);
    {
      torch::NoGradGuard no_grad;
      norm->weight.copy_(torch::randn({5}) * 0.5);
    }
    auto x = torch::randn({3, 5});
    auto X = x.to(torch::kFloat64), w = norm->weight.detach().to(torch::kFloat64);
    auto expected = X / (X.pow(2).mean(-1, true) + 1e-6).sqrt() * (1 + w);
    CHECK(max_abs_diff(norm(x), expected) < 1e-6);
  }
  SECTION("a whole model, q/k norms included, equals the offset-free one with weights + 1") {
    auto config = gemma_like(2);
    config.decoder->attention.qk_norm = true;
    auto plain = core::make_random_model(config, 4);
    randomise(*plain, 4);
    auto offset = config;
    offset.norm_weight_offset = 1.0f;
    offset.decoder->attention.qk_norm_weight_offset = 1.0f;
    auto shifted = core::make_random_model(offset, 4);
    copy_weights(*plain, *shifted, [](const std::string& name, const torch::Tensor& t) {
      const bool norm = name.find("norm") != std::string::npos;
      return norm ? t - 1 : t;
    });
    auto a = run_ids(*plain, kIds), b = run_ids(*shifted, kIds);
    CHECK(max_abs_diff(a->logits, b->logits) < 1e-4);
    CHECK(max_abs_diff(a->decoder.layers[1].self.weights, b->decoder.layers[1].self.weights) < 1e-6);
    // The key-query form carries the norms' scales offset + w.
    for (int head : {0, 3})
      CHECK(max_abs_diff(analysis::key_query_form(*plain, headlab::core::Stack::Decoder, 1, head),
                         analysis::key_query_form(*shifted, headlab::core::Stack::Decoder, 1, head)) < 1e-6);
    // Without the offset the same stored weights give another model: the option is read.
    auto unshifted = core::make_random_model(config, 4);
    copy_weights(*shifted, *unshifted, [](const std::string&, const torch::Tensor& t) { return t; });
    CHECK(max_abs_diff(run_ids(*unshifted, kIds)->logits, a->logits) > 1e-2);
    // A fresh model's norms start as the identity: stored weights 0.
    auto fresh = core::make_random_model(offset, 9);
    CHECK(fresh->module->block(headlab::core::Stack::Decoder, 0)->attn_norm->weight.abs().max().item<double>() == 0.0);
    CHECK(fresh->module->block(headlab::core::Stack::Decoder, 0)->attn->q_norm.abs().max().item<double>() == 0.0);
  }
}

TEST_CASE("sublayer_output_norm: h + N_out(sublayer(N_in(h))) for attention and feed-forward", "[gemma][norm]") {
  auto config = gemma_like(1);
  config.sublayer_output_norm = true;
  config.norm_weight_offset = 1.0f;
  auto model = core::make_random_model(config, 6);
  randomise(*model, 6, 0.0);
  auto trace = run_ids(*model, kIds, core::kCaptureResidual);
  auto block = model->module->block(headlab::core::Stack::Decoder, 0);
  torch::NoGradGuard no_grad;
  // The norms by formula; the attention and feed-forward modules themselves.
  auto rms = [&](const torch::Tensor& x, const torch::Tensor& w) {
    return x / (x.pow(2).mean(-1, true) + config.norm_eps).sqrt() * (1 + w);
  };
  auto x = trace->decoder.hidden[0].unsqueeze(0);
  core::AttentionCall call;
  call.query_input = call.key_input = rms(x, block->attn_norm->weight);
  call.causal = true;
  call.rope = model->module->rope_tables(x.size(1), headlab::core::Stack::Decoder);
  auto h = x + rms(block->attn->forward(call), block->attn_out_norm->weight);
  h = h + rms(block->ffn->forward(rms(h, block->ffn_norm->weight)), block->ffn_out_norm->weight);
  CHECK(max_abs_diff(trace->decoder.hidden[1], h.squeeze(0)) < 1e-5);
  // Four norms per layer, counted by parameter_count and named in the weight file.
  int64_t n = 0;
  for (const auto& p : model->module->parameters()) n += p.numel();
  CHECK(model->config.parameter_count() == n);
  std::vector<std::string> names;
  for (const auto& [name, t] : core::named_weights(model->module)) names.push_back(name);
  CHECK(std::count(names.begin(), names.end(), "decoder.0.attn_out_norm.weight") == 1);
  CHECK(std::count(names.begin(), names.end(), "decoder.0.ffn_out_norm.weight") == 1);
}

TEST_CASE("embedding_scale multiplies the token embeddings", "[gemma]") {
  auto config = gemma_like(1);
  config.embedding_scale = 4.5f;
  auto model = core::make_random_model(config, 8);
  torch::NoGradGuard no_grad;
  auto ids = torch::tensor(kIds, torch::kLong).unsqueeze(0);
  auto expected = model->module->tokens->weight.index_select(0, ids[0]) * 4.5;
  CHECK(max_abs_diff(model->module->embed(ids).squeeze(0), expected) < 1e-6);
  // The tied head scores against the unscaled embeddings.
  auto trace = run_ids(*model, kIds, core::kCaptureResidual);
  auto final_hidden = model->module->decoder_final_norm(trace->decoder.hidden.back());
  CHECK(max_abs_diff(trace->logits, torch::matmul(final_hidden, model->module->tokens->weight.t())) < 1e-4);
}

TEST_CASE("local layers: their own window and RoPE base, the other layers unchanged", "[gemma][pattern]") {
  auto config = gemma_like(3);
  config.rope_theta = 1e6f;
  auto local = config;
  local.decoder->local = core::LocalLayers{{0, 2}, core::AttentionPattern{2, 1, {}}, 100.0f};
  auto model = core::make_random_model(local, 10);
  randomise(*model, 10);
  auto trace = run_ids(*model, kIds, core::kCaptureWeights | core::kCaptureResidual);
  const int64_t T = kIds.size();
  auto allowed = core::attention_allowed(T, T, true, {2, 1, {}});
  for (int l : {0, 2}) {
    const auto& w = trace->decoder.layers[l].self.weights;  // [1, h, T, T]
    CHECK(w.masked_select(allowed.logical_not().expand_as(w)).abs().max().item<double>() == 0.0);
  }
  // Layer 1 is global: it attends beyond the window.
  const auto& global = trace->decoder.layers[1].self.weights;
  CHECK(global.masked_select(allowed.logical_not().expand_as(global)).abs().max().item<double>() > 1e-3);

  // Layer 0 equals layer 0 of a model whose every layer has the window and θ = 100; layer 1 equals
  // the model without local layers: each layer reads its own pattern and tables.
  auto all_local = config;
  all_local.rope_theta = 100.0f;
  all_local.decoder->attention.pattern = {2, 1, {}};
  auto uniform = core::make_random_model(all_local, 10);
  copy_weights(*model, *uniform, [](const std::string&, const torch::Tensor& t) { return t; });
  auto same_first = run_ids(*uniform, kIds);
  CHECK(max_abs_diff(same_first->decoder.layers[0].self.weights, trace->decoder.layers[0].self.weights) < 1e-6);
  auto no_local = core::make_random_model(config, 10);
  copy_weights(*model, *no_local, [](const std::string&, const torch::Tensor& t) { return t; });
  auto plain = run_ids(*no_local, kIds);
  CHECK(max_abs_diff(plain->decoder.layers[0].self.weights, trace->decoder.layers[0].self.weights) > 1e-3);
  // Layer 1's input differs between the two models (layer 0 does), so run the local-free model's
  // layer 1 on the local model's layer-1 input: the global layer is the same.
  {
    torch::NoGradGuard no_grad;
    core::BlockCall call;
    call.causal = true;
    call.capture = core::kCaptureWeights;
    call.rope = no_local->module->rope_tables(T, headlab::core::Stack::Decoder);
    core::AttentionStages stages;
    no_local->module->block(headlab::core::Stack::Decoder, 1)->forward(trace->decoder.hidden[1].unsqueeze(0), call, &stages, nullptr);
    CHECK(max_abs_diff(stages.weights.squeeze(0), trace->decoder.layers[1].self.weights) < 1e-6);
  }
  auto tables = model->module->rope_tables(T, headlab::core::Stack::Decoder);
  CHECK(tables.local_cos.defined());
  CHECK(max_abs_diff(tables.local_cos, uniform->module->rope_tables(T, headlab::core::Stack::Decoder).cos) == 0.0);
  CHECK(max_abs_diff(tables.cos, no_local->module->rope_tables(T, headlab::core::Stack::Decoder).cos) == 0.0);
  CHECK_THAT(model->config.summary(), Catch::Contains("local layers 0, 2 (window 2, RoPE θ 100)"));
}

TEST_CASE("Gemma options: config round trip, validation, native save/load and LRP", "[gemma][config]") {
  auto config = gemma_like(3);
  config.norm_weight_offset = 1.0f;
  config.sublayer_output_norm = true;
  config.embedding_scale = 4.0f;
  config.lm_head.softcap = 30.0f;
  config.decoder->attention.logit_softcap = 50.0f;
  config.decoder->attention.qkv_clip = 8.0f;  // OLMo's clamp, beside the Gemma options
  config.decoder->attention.qk_norm = true;
  config.decoder->attention.qk_norm_weight_offset = 1.0f;
  config.decoder->local = core::LocalLayers{{0, 1}, core::AttentionPattern{3, 1, {}}, 1e4f};
  const auto json = core::to_json(config);
  CHECK(json["norm_weight_offset"] == 1.0);
  CHECK(json["lm_head"]["softcap"] == 30.0);
  CHECK(json["decoder"]["local"]["layers"].get<std::vector<int>>() == std::vector<int>{0, 1});
  const auto back = core::model_config_from_json(json);
  CHECK(core::to_json(back) == json);
  CHECK(back.sublayer_output_norm);
  CHECK(back.embedding_scale == 4.0f);
  CHECK(back.decoder->attention.logit_softcap == 50.0f);
  CHECK(back.decoder->attention.qkv_clip == 8.0f);
  CHECK(json["decoder"]["attention"]["qkv_clip"] == 8.0);
  CHECK(back.decoder->attention.qk_norm_weight_offset == 1.0f);
  CHECK(back.decoder->local->pattern.window == 3);
  CHECK(*back.decoder->local->rope_theta == 1e4f);
  // Configs without the options are written as before.
  const auto plain_json = core::to_json(gemma_like(1));
  for (const char* key : {"norm_weight_offset", "sublayer_output_norm", "embedding_scale"}) CHECK_FALSE(plain_json.contains(key));
  CHECK_FALSE(plain_json["decoder"].contains("local"));
  CHECK_FALSE(plain_json["decoder"]["attention"].contains("qkv_clip"));

  auto invalid = [&](auto edit) {
    auto c = config;
    edit(c);
    try {
      c.validate();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(valid)");
  };
  using Catch::Contains;
  CHECK_THAT(invalid([](auto& c) { c.decoder->local->layers = {0, 3}; }), Contains("local.layers[1]: layer 3 is not in 0..2"));
  CHECK_THAT(invalid([](auto& c) { c.decoder->local->layers = {1, 1}; }), Contains("listed twice"));
  CHECK_THAT(invalid([](auto& c) { c.positions = core::PositionKind::Learned; }), Contains("local.rope_theta: only meaningful"));
  CHECK_THAT(invalid([](auto& c) { c.decoder->local->pattern.window = -1; }), Contains("local.pattern.window must be >= 0"));
  CHECK_THAT(invalid([](auto& c) { c.lm_head.softcap = -1; }), Contains("lm_head.softcap must be >= 0"));
  CHECK_THAT(invalid([](auto& c) { c.decoder->attention.logit_softcap = -2; }), Contains("logit_softcap must be >= 0"));
  CHECK_THAT(invalid([](auto& c) { c.decoder->attention.qkv_clip = -1; }), Contains("qkv_clip must be >= 0"));
  CHECK_THAT(invalid([](auto& c) { c.embedding_scale = 0; }), Contains("embedding_scale must be > 0"));
  CHECK_THAT(invalid([](auto& c) { c.norm_placement = core::NormPlacement::Post; }),
             Contains("sublayer_output_norm needs norm_placement 'pre'"));
  auto unknown = json;
  unknown["decoder"]["local"]["window"] = 3;
  CHECK_THROWS_WITH(core::model_config_from_json(unknown), Contains("config.decoder.local: unknown key 'window'"));

  auto model = core::make_random_model(config, 12);
  randomise(*model, 12, 0.0);
  int64_t n = 0;
  for (const auto& p : model->module->parameters()) n += p.numel();
  CHECK(config.parameter_count() == n);
  headlab::test::TempDir dir("gemma-native");
  core::save_model(*model, dir.str());
  auto loaded = core::load_model(dir.str());
  CHECK(max_abs_diff(run_ids(*loaded, kIds)->logits, run_ids(*model, kIds)->logits) == 0.0);

  // Gradient × input with the LRP rules still sums to the target logit through the soft-caps.
  auto lrp_config = config;
  lrp_config.lm_head.softcap = 3.0f;
  auto lrp_model = core::make_random_model(lrp_config, 13);
  randomise(*lrp_model, 13, 0.0);
  const auto lrp = analysis::lrp_relevance(*lrp_model, kIds);
  CHECK(std::abs(lrp.target) > 0.1);
  CHECK(lrp.relative_residual() < 1e-5);  // float32; measured ≤ 1e-6
}
