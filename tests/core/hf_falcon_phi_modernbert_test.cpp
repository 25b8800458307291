#include "test_common.h"

#include "hf_fixtures.h"

#include "core/model/model.h"
#include "core/model/run.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

// Phi-2, Falcon's three layouts, OLMo 2 and ModernBERT against their float64 references
// (tests/data/hf/fixtures_phi_falcon.py, fixtures_olmo2_modernbert.py).
using namespace headlab::core;
using namespace headlab::test::hf;
using Catch::Matchers::Contains;

TEST_CASE("hf import: Phi-2: one LayerNorm feeding attention and MLP side by side, 0.4 of each head rotating",
          "[hf_import][phi]") {
  const auto c = load_model(fixture("phi"))->config;
  CHECK(c.family == "phi");
  CHECK(c.parallel_residual);
  CHECK(c.rope_dim == 4);  // int(10 · 0.4)
  CHECK(c.lm_head.bias);
  CHECK_FALSE(c.lm_head.tied);
  const FixtureVariants v("phi");
  // Each detail matters: the whole head rotating, another base.
  CHECK(v.errors_with([](auto& j) { j["partial_rotary_factor"] = 1.0; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rope_theta"] = 100.0; }).attention > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["qk_layernorm"] = true; }), Contains("qk_layernorm true is not supported"));
  CHECK_THAT(v.refused([](auto& j) { j["partial_rotary_factor"] = 0.3; }), Contains("RoPE needs an even number"));
}

TEST_CASE("hf import: Falcon's fused query_key_value in each of its three layouts", "[hf_import][falcon]") {
  SECTION("Falcon-7B: one key/value head, attention and MLP side by side from input_layernorm") {
    const auto c = load_model(fixture("falcon"))->config;
    CHECK(c.family == "falcon");
    CHECK(c.decoder->attention.kv_heads == 1);
    CHECK(c.parallel_residual);
    CHECK(c.lm_head.tied);
  }
  SECTION("Falcon-40B: the new decoder architecture, 2 key/value groups, ln_attn and ln_mlp, biases") {
    const auto c = load_model(fixture("falcon-40b"))->config;
    CHECK(c.decoder->attention.heads == 8);
    CHECK(c.decoder->attention.kv_heads == 2);
    CHECK(c.decoder->attention.qkv_bias);
    CHECK(c.parallel_residual);
    // One norm for both (num_ln_in_parallel_attn 1) reads tensors the file does not have.
    const FixtureVariants v("falcon-40b");
    CHECK_THAT(v.refused([](auto& j) { j["num_ln_in_parallel_attn"] = 1; }), Contains("input_layernorm.weight"));
  }
  SECTION("the older sequential layout: per-head fused qkv, post_attention_layernorm") {
    const auto c = load_model(fixture("falcon-sequential"))->config;
    CHECK(c.decoder->attention.kv_heads == 4);
    CHECK_FALSE(c.parallel_residual);
  }
  SECTION("each layout is read as its own: the maps differ when another is assumed") {
    const FixtureVariants v("falcon");
    // The same rows read as [heads, 3, head_dim] do not fit a multi-query file.
    CHECK_THAT(v.refused([](auto& j) { j["multi_query"] = false; }), Contains("query_key_value.weight"));
    CHECK(v.errors_with([](auto& j) { j["rope_theta"] = 100.0; }).attention > 1e-3);
    CHECK_THAT(v.refused([](auto& j) { j["alibi"] = true; }), Contains("alibi true is not supported"));
  }
}

TEST_CASE("hf import: OLMo 2: norms after each sublayer, q/k norms over the whole projections", "[hf_import][olmo]") {
  auto model = load_model(fixture("olmo2"));
  const auto& c = model->config;
  CHECK(c.family == "olmo2");
  CHECK_FALSE(c.sublayer_input_norm);
  CHECK(c.sublayer_output_norm);
  CHECK(c.decoder->attention.qk_norm);
  CHECK(c.decoder->attention.qk_norm_whole);
  int64_t stored = 0;
  for (const auto& p : model->module->parameters()) stored += p.numel();
  CHECK(c.parameter_count() == stored);
  const FixtureVariants v("olmo2");
  CHECK(v.errors_with([](auto& j) { j["rms_norm_eps"] = 0.5; }).attention > 1e-3);  // the q/k norms' eps
}

TEST_CASE("hf import: ModernBERT: global and local layers with their own RoPE bases, no norm before layer 0",
          "[hf_import][modernbert]") {
  auto model = load_model(fixture("modernbert"));
  const auto& c = model->config;
  CHECK(c.family == "modernbert");
  CHECK(c.kind == StackKind::Encoder);
  CHECK_FALSE(c.first_attention_norm);
  REQUIRE(c.encoder->local);
  CHECK(c.encoder->local->layers == std::vector<int>{1, 2});
  CHECK(c.encoder->local->pattern.window == 3);
  CHECK(c.encoder->local->rope_theta == std::optional<float>(10000.0f));
  CHECK(c.rope_theta == 160000.0f);
  CHECK(c.lm_head.transform);
  int64_t stored = 0;
  for (const auto& p : model->module->parameters()) stored += p.numel();
  CHECK(c.parameter_count() == stored);
  const FixtureVariants v("modernbert");
  // Each detail matters: a global layer every layer, the local window, the local base.
  CHECK(v.errors_with([](auto& j) { j["global_attn_every_n_layers"] = 1; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["local_attention"] = 2; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["local_rope_theta"] = 160000.0; }).attention > 1e-3);
  // transformers 5's spelling of the same model: layer types and a base per type.
  CHECK(v.errors_with([](auto& j) {
           j["layer_types"] = {"full_attention", "sliding_attention", "sliding_attention", "full_attention"};
           j["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 160000.0}}},
                                   {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
           j.erase("global_rope_theta");
           j.erase("local_rope_theta");
         }).attention <= kAttentionTolerance);
  CHECK_THAT(v.refused([](auto& j) { j["classifier_activation"] = "silu"; }), Contains("classifier_activation"));
}
