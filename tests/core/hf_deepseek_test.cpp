#include "test_common.h"

#include "hf_fixtures.h"

#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

// DeepSeek-V2 (and its Lite shape) and DeepSeek-V3 against their float64 references
// (tests/data/hf/fixtures_deepseek.py): multi-head latent attention, DeepSeek's routers, shared
// experts and dense first layers.
using namespace headlab::core;
using namespace headlab::test::hf;
using Catch::Matchers::Contains;

namespace {

// Each token's experts as run, layer by layer, against the reference's (dense layers have none).
void check_experts(const std::string& folder, int dense_layers) {
  auto model = load_model(fixture(folder));
  RunRequest request;
  request.ids = read_expected(fixture(folder)).ids;
  const auto trace = run(*model, request);
  for (size_t l = 0; l < trace->decoder.layers.size(); ++l) {
    INFO(folder << " layer " << l);
    const auto& experts = trace->decoder.layers[l].experts;
    if (int(l) < dense_layers) {
      CHECK_FALSE(experts.defined());
      continue;
    }
    REQUIRE(experts.defined());
    CHECK(torch::equal(experts.to(torch::kFloat32), expected_tensor(folder, "experts." + std::to_string(l))));
  }
}

}  // namespace

TEST_CASE("hf import: DeepSeek-V3: latent attention, YaRN with mscale, the sigmoid router with its bias and groups",
          "[hf_import][deepseek]") {
  auto model = load_model(fixture("deepseek-v3"));
  const ModelConfig& c = model->config;
  CHECK(c.family == "deepseek_v3");
  const auto& a = c.decoder->attention;
  REQUIRE(a.latent);
  CHECK((a.heads == 4 && a.kv_heads == 4 && a.key_size == 12 && a.value_size == 6));
  CHECK((a.latent->kv_rank == 12 && a.latent->q_rank == 10 && a.latent->rope_size == 4));
  CHECK(c.rope_interleaved);
  CHECK(c.rope_scaling.kind == RopeScalingKind::Yarn);
  // The rotary tables' factor is DeepSeek's mscale ratio; the logits' scale carries mscale(factor, mscale_all_dim)².
  const double mscale = 0.1 * std::log(4.0) + 1.0;
  CHECK(c.rope_scaling.attention_factor == Approx((0.1 * 0.9 * std::log(4.0) + 1) / mscale));
  REQUIRE(a.scale);
  CHECK(*a.scale == Approx(mscale * mscale / std::sqrt(12.0)));
  REQUIRE(c.ffn.moe);
  const MoeConfig& m = *c.ffn.moe;
  CHECK((m.experts == 8 && m.top_k == 2 && m.groups == 4 && m.top_groups == 2));
  CHECK(m.scores == RouterScores::Sigmoid);
  CHECK(m.group_score == GroupScore::TopTwoSum);
  CHECK((m.choice_bias && m.normalize && m.scale == 2.5f));
  CHECK(m.dense_layers == std::vector<int>{0});
  CHECK((m.dense_inner_size == 40 && m.shared_inner_size == 16));
  CHECK(c.parameter_count() == stored_parameters(*model));
  CHECK_THAT(c.summary(), Contains("MLA(4h, latent 12, query latent 10, RoPE 4)") && Contains("sigmoid router"));
  // The cache keeps the latent and the rotated key: 3 layers × (12 + 4) floats, against MHA's 4 × (12 + 6).
  CHECK(kv_cache_bytes_per_token(c) == 3 * 16 * 4);
  CHECK(kv_cache_bytes_per_token_as_mha(c) == 3 * 4 * 18 * 4);

  const Errors errors = compare(*model, read_expected(fixture("deepseek-v3")));
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);
  check_experts("deepseek-v3", 1);

  // Each detail matters: the interleaved rotation, the logit scale's mscale², the renormalised and scaled
  // weights, the groups.
  const FixtureVariants v("deepseek-v3");
  CHECK(v.errors_with([](auto& j) { j["rope_interleave"] = false; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rope_scaling"].erase("mscale_all_dim"); }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["norm_topk_prob"] = false; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["routed_scaling_factor"] = 1.0; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["topk_group"] = 1; }).logits > 1e-3);
  CHECK(v.errors_with([](auto&) {}).logits <= kLogitTolerance);  // the edits above are what moved it
  // The first dense layer's experts are not in the file; a config that asks for them is refused by name.
  CHECK_THAT(v.refused([](auto& j) { j["first_k_dense_replace"] = 0; }),
             Contains("model.layers.0.mlp.gate.") && Contains("is missing from model.safetensors"));
  CHECK_THAT(v.refused([](auto& j) { j["num_key_value_heads"] = 2; }), Contains("must equal num_attention_heads"));
}

TEST_CASE("hf import: DeepSeek-V2: latent attention with and without a query latent, greedy and group-limited routing",
          "[hf_import][deepseek]") {
  SECTION("the Lite shape: queries straight from the stream, greedy top-k, experts one by one") {
    auto model = load_model(fixture("deepseek-v2-lite"));
    const ModelConfig& c = model->config;
    CHECK(c.family == "deepseek_v2");
    REQUIRE(c.decoder->attention.latent);
    CHECK(c.decoder->attention.latent->q_rank == 0);
    CHECK(c.rope_interleaved);  // apply_rotary_emb's complex product over pairs
    CHECK(c.rope_scaling.kind == RopeScalingKind::None);
    REQUIRE(c.ffn.moe);
    CHECK((c.ffn.moe->scores == RouterScores::Softmax && c.ffn.moe->groups == 1 && !c.ffn.moe->normalize));
    CHECK(c.ffn.moe->shared_inner_size == 32);  // two shared experts of 16
    CHECK(c.parameter_count() == stored_parameters(*model));
    check_experts("deepseek-v2-lite", 1);
    const FixtureVariants v("deepseek-v2-lite");
    // One shared expert of 16 does not fit the stored two (32 rows): refused, naming the tensor.
    CHECK_THAT(v.refused([](auto& j) { j["n_shared_experts"] = 1; }), Contains("shared_experts"));
  }
  SECTION("transformers 5's spelling: a query latent, group-limited greedy, stacked experts, rope_parameters") {
    auto model = load_model(fixture("deepseek-v2"));
    const ModelConfig& c = model->config;
    REQUIRE(c.ffn.moe);
    CHECK((c.ffn.moe->groups == 2 && c.ffn.moe->top_groups == 1 && c.ffn.moe->group_score == GroupScore::Max));
    CHECK(c.ffn.moe->scale == 4.0f);
    CHECK(c.rope_theta == 5000.0f);
    CHECK(c.parameter_count() == stored_parameters(*model));
    check_experts("deepseek-v2", 1);
    const FixtureVariants v("deepseek-v2");
    CHECK(v.errors_with([](auto& j) { j["topk_method"] = "greedy"; }).logits > 1e-3);
    CHECK(v.errors_with([](auto& j) { j["routed_scaling_factor"] = 1.0; }).logits > 1e-3);
    CHECK(v.errors_with([](auto& j) { j["rope_parameters"]["rope_theta"] = 10000.0; }).attention > 1e-3);
    CHECK_THAT(v.refused([](auto& j) { j["topk_method"] = "noaux_tc"; }), Contains("topk_method 'noaux_tc' is not supported"));
  }
  for (const char* folder : {"deepseek-v2-lite", "deepseek-v2"}) {
    DYNAMIC_SECTION(folder << " matches its reference") {
      auto model = load_model(fixture(folder));
      const Errors errors = compare(*model, read_expected(fixture(folder)));
      CHECK(errors.attention <= kAttentionTolerance);
      CHECK(errors.logits <= kLogitTolerance);
    }
  }
}
