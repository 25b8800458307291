// The native config.json against hand-written JSON: every key a user writes is read into the field
// it names (checked field by field against literals, not against HeadLab's own writer), and writing
// the config back gives every one of those keys with the same value.
#include "test_common.h"

#include "core/config.h"
#include "core/model/model.h"
#include "core/model/transformer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <string>

using namespace headlab::core;
using nlohmann::json;

namespace {

// The numbers the module built from `c` holds: what parameter_count must equal.
int64_t module_parameters(const ModelConfig& c) {
  Transformer module(c);
  int64_t n = 0;
  for (const auto& p : module->parameters()) n += p.numel();
  return n;
}

// The error `base` with `edit` applied gives when read, or "(no error)".
std::string config_error(const json& base, const std::function<void(json&)>& edit) {
  json bad = base;
  edit(bad);
  try {
    model_config_from_json(bad).validate();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// An encoder-decoder that sets every key away from its default.
const char* kHandWritten = R"({
  "format": "headlab-model",
  "format_version": 1,
  "name": "hand-written",
  "description": "every key set by hand",
  "family": "native",
  "kind": "encoder-decoder",
  "objective": "seq2seq",
  "vocab_size": 321,
  "hidden_size": 48,
  "max_positions": 77,
  "type_vocab_size": 2,
  "positions": "rope",
  "rope_theta": 500000.0,
  "rope_dim": 4,
  "norm": "rmsnorm",
  "norm_eps": 1e-06,
  "norm_placement": "post",
  "embedding_norm": true,
  "final_norm": false,
  "ffn": {"kind": "swiglu", "inner_size": 96, "activation": "silu", "bias": false},
  "lm_head": {"transform": true, "tied": false, "bias": true},
  "encoder": {
    "layers": 3,
    "nope_layers": [1],
    "attention": {
      "heads": 6, "kv_heads": 6, "key_size": 10, "value_size": 7, "scoring": "dot", "scale": 0.25,
      "qkv_bias": false, "out_bias": false, "qk_norm": true, "qk_norm_eps": 1e-05,
      "talking_heads": {"key_heads": 6, "softmax_heads": 4, "value_heads": 5},
      "pattern": {"window": 5, "dilation": 2, "global_tokens": [0, 3]}
    }
  },
  "decoder": {
    "layers": 2,
    "attention": {"heads": 4, "kv_heads": 4, "key_size": 8, "value_size": 8, "scoring": "dot",
                  "qkv_bias": true, "out_bias": true, "collaborative": {"shared_key_size": 9},
                  "pattern": {"window": 0, "dilation": 1, "global_tokens": []}},
    "cross_attention": {"heads": 4, "kv_heads": 2, "key_size": 12, "value_size": 12, "scoring": "additive",
                        "qkv_bias": true, "out_bias": true,
                        "pattern": {"window": 0, "dilation": 1, "global_tokens": []}}
  }
})";

// Every key of `expected` is in `actual` with the same value (objects compared key by key, numbers
// as numbers so 1e-06 written as float survives).
void check_contains(const json& actual, const json& expected, const std::string& where) {
  if (expected.is_object()) {
    REQUIRE(actual.is_object());
    for (const auto& [key, value] : expected.items()) {
      INFO(where + "." + key);
      REQUIRE(actual.contains(key));
      check_contains(actual[key], value, where + "." + key);
    }
  } else if (expected.is_number_float()) {
    INFO(where);
    CHECK(actual.get<double>() == Approx(expected.get<double>()).epsilon(1e-6));
  } else {
    INFO(where);
    CHECK(actual == expected);
  }
}

}  // namespace

TEST_CASE("a hand-written config.json is read key by key and written back the same", "[config]") {
  const ModelConfig c = model_config_from_json(json::parse(kHandWritten));
  CHECK(c.name == "hand-written");
  CHECK(c.description == "every key set by hand");
  CHECK(c.kind == StackKind::EncoderDecoder);
  CHECK(c.objective == "seq2seq");
  CHECK(c.vocab_size == 321);
  CHECK(c.hidden_size == 48);
  CHECK(c.max_positions == 77);
  CHECK(c.type_vocab_size == 2);
  CHECK(c.positions == PositionKind::Rope);
  CHECK(c.rope_theta == 500000.0f);
  CHECK(c.rope_dim == 4);
  CHECK(c.norm == NormKind::RMSNorm);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.norm_placement == NormPlacement::Post);
  CHECK(c.embedding_norm);
  CHECK(!c.final_norm);
  CHECK(c.ffn.kind == FfnKind::SwiGLU);
  CHECK(c.ffn.inner_size == 96);
  CHECK(c.ffn.activation == Activation::Silu);
  CHECK(!c.ffn.bias);
  CHECK(c.lm_head.transform);
  CHECK(!c.lm_head.tied);
  CHECK(c.lm_head.bias);

  REQUIRE(c.encoder);
  CHECK(c.encoder->layers == 3);
  CHECK(c.encoder->nope_layers == std::vector<int>{1});
  const AttentionConfig& e = c.encoder->attention;
  CHECK(e.heads == 6);
  CHECK(e.key_size == 10);
  CHECK(e.value_size == 7);
  REQUIRE(e.scale);
  CHECK(*e.scale == 0.25f);
  CHECK(!e.qkv_bias);
  CHECK(!e.out_bias);
  CHECK(e.qk_norm);
  CHECK(e.qk_norm_eps == 1e-5f);
  REQUIRE(e.talking_heads);
  CHECK(e.talking_heads->key_heads == 6);
  CHECK(e.talking_heads->softmax_heads == 4);
  CHECK(e.talking_heads->value_heads == 5);
  CHECK(e.output_heads() == 5);
  CHECK(e.pattern.window == 5);
  CHECK(e.pattern.dilation == 2);
  CHECK(e.pattern.global_tokens == std::vector<int>{0, 3});

  REQUIRE(c.decoder);
  CHECK(c.decoder->layers == 2);
  CHECK(c.decoder->attention.heads == 4);
  CHECK(!c.decoder->attention.scale);
  REQUIRE(c.decoder->attention.collaborative);
  CHECK(c.decoder->attention.collaborative->shared_key_size == 9);
  REQUIRE(c.decoder->cross_attention);
  CHECK(c.decoder->cross_attention->scoring == Scoring::Additive);
  CHECK(c.decoder->cross_attention->kv_heads == 2);
  CHECK(c.decoder->cross_attention->key_size == 12);

  // Written back: every hand-written key, same value.
  check_contains(to_json(c), json::parse(kHandWritten), "config");
}

TEST_CASE("keys left out of a hand-written config.json take their documented defaults", "[config]") {
  const ModelConfig c = model_config_from_json(json::parse(R"({
    "vocab_size": 100, "hidden_size": 32,
    "encoder": {"layers": 1, "attention": {"heads": 4, "key_size": 8}}})"));
  CHECK(c.kind == StackKind::Encoder);
  CHECK(c.positions == PositionKind::Learned);
  CHECK(c.rope_theta == 10000.0f);
  CHECK(c.norm == NormKind::LayerNorm);
  CHECK(c.norm_placement == NormPlacement::Pre);
  CHECK(c.final_norm);
  REQUIRE(c.encoder);
  CHECK(c.encoder->attention.kv_heads == 4);    // MHA unless said otherwise
  CHECK(c.encoder->attention.value_size == 8);  // d_v = d_k unless said otherwise
  CHECK(c.encoder->attention.scoring == Scoring::Dot);
  CHECK(!c.encoder->attention.scale);  // 1/√d_k at run time
  CHECK(c.encoder->attention.pattern.window == 0);
  CHECK(c.encoder->attention.pattern.dilation == 1);
}

TEST_CASE("a config's family is native or one the family table names", "[config]") {
  const auto with_family = [](const std::string& family) {
    return json::parse(R"({"vocab_size": 100, "hidden_size": 32, "kind": "decoder", "family": ")" + family +
                       R"(", "decoder": {"layers": 1, "attention": {"heads": 4, "key_size": 8}}})");
  };
  CHECK(model_config_from_json(with_family("native")).family == "native");
  CHECK(model_config_from_json(with_family("llama")).family == "llama");
  CHECK(model_config_from_json(with_family("deepseek_v3")).family == "deepseek_v3");
  CHECK_THROWS_WITH(model_config_from_json(with_family("lama")),
                    Catch::Matchers::Contains("config.family: 'lama' is no family HeadLab knows") &&
                        Catch::Matchers::Contains("llama"));
}

TEST_CASE("values that would run to NaN, crash or miscount are refused when a config is read", "[config]") {
  const json j = json::parse(R"({"vocab_size": 100, "hidden_size": 32, "kind": "decoder", "objective": "causal",
    "positions": "rope", "max_positions": 64,
    "decoder": {"layers": 1, "attention": {"heads": 4, "key_size": 8}}})");
  CHECK(config_error(j, [](json&) {}) == "(no error)");
  using Catch::Matchers::Contains;
  CHECK_THAT(config_error(j, [](json& b) { b["rope_theta"] = -1.0; }), Contains("rope_theta must be > 0"));
  CHECK_THAT(config_error(j, [](json& b) { b["rope_theta"] = 0.0; }), Contains("rope_theta must be > 0"));
  CHECK_THAT(config_error(j, [](json& b) { b["rope_dim"] = 64; }), Contains("rope_dim 64 is more than the key size (8)"));
  CHECK(config_error(j, [](json& b) { b["rope_dim"] = 8; }) == "(no error)");
  CHECK_THAT(config_error(j, [](json& b) { b["type_vocab_size"] = -1; }), Contains("type_vocab_size must be >= 0"));
  CHECK_THAT(config_error(j, [](json& b) { b["objective"] = "foo"; }), Contains("objective must be mlm, causal, seq2seq or none"));
}

TEST_CASE("rope_scaling is read key by key, written back, and refused where it cannot run", "[config][rope]") {
  json j = json::parse(R"({
    "vocab_size": 100, "hidden_size": 32, "kind": "decoder", "positions": "rope", "max_positions": 64,
    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_positions": 16, "beta_fast": 24.0,
                     "beta_slow": 2.0, "truncate": false, "attention_factor": 1.25},
    "decoder": {"layers": 1, "attention": {"heads": 2, "kv_heads": 2, "key_size": 8, "value_size": 8}}
  })");
  const ModelConfig c = model_config_from_json(j);
  CHECK(c.rope_scaling.kind == RopeScalingKind::Yarn);
  CHECK(c.rope_scaling.factor == 4.0);
  CHECK(c.rope_scaling.original_max_positions == 16);
  CHECK(c.rope_scaling.beta_fast == 24.0);
  CHECK(c.rope_scaling.beta_slow == 2.0);
  CHECK(!c.rope_scaling.truncate);
  CHECK(c.rope_scaling.attention_factor == 1.25);
  check_contains(to_json(c), j, "config");

  auto error = [&](const std::function<void(json&)>& edit) { return config_error(j, edit); };
  using Catch::Matchers::Contains;
  CHECK_THAT(error([](json& b) { b["rope_scaling"]["type"] = "longrope"; }),
             Contains("rope_scaling.type") && Contains("longrope") && Contains("llama3"));
  CHECK_THAT(error([](json& b) { b["rope_scaling"]["low_freq_factor"] = 1.0; }),
             Contains("unknown key 'low_freq_factor'"));  // a llama3 key on a yarn scaling
  CHECK_THAT(error([](json& b) { b["rope_scaling"]["factor"] = 0.0; }), Contains("factor must be > 0"));
  CHECK_THAT(error([](json& b) { b["positions"] = "learned"; }),
             Contains("rope_scaling (yarn): only meaningful with positions 'rope'"));
  CHECK_THAT(error([](json& b) { b["rope_scaling"] = {{"type", "llama3"}, {"factor", 8.0}}; }),
             Contains("original_max_positions must be >= 1"));
  CHECK_THAT(error([](json& b) {
               b["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
               b["rope_dim"] = 2;
             }),
             Contains("dynamic RoPE scaling needs more than 2 rotated dims"));
}

TEST_CASE("sinks, a mixture of experts and the clamped GLU are read, written back and validated", "[config][moe]") {
  using Catch::Matchers::Contains;
  json j = json::parse(R"({
    "vocab_size": 100, "hidden_size": 32, "kind": "decoder", "positions": "rope", "max_positions": 64,
    "norm": "rmsnorm",
    "ffn": {"kind": "swiglu_clamped", "inner_size": 24, "activation": "silu", "bias": true, "limit": 7.0,
            "moe": {"experts": 8, "top_k": 2, "normalize": false, "router_bias": true, "shared_inner_size": 16}},
    "decoder": {"layers": 2, "attention": {"heads": 4, "kv_heads": 2, "key_size": 8, "value_size": 8, "sinks": true}}
  })");
  const ModelConfig c = model_config_from_json(j);
  CHECK(c.decoder->attention.sinks);
  CHECK(c.ffn.kind == FfnKind::ClampedSwiGLU);
  CHECK(c.ffn.limit == 7.0f);
  REQUIRE(c.ffn.moe);
  CHECK(c.ffn.moe->experts == 8);
  CHECK(c.ffn.moe->top_k == 2);
  CHECK_FALSE(c.ffn.moe->normalize);
  CHECK(c.ffn.moe->router_bias);
  CHECK(c.ffn.moe->shared_inner_size == 16);
  check_contains(to_json(c), j, "config");
  // Per layer: 4 sinks; router 8·32 + 8; 8 experts and a shared one of (3·32·inner + 2·inner + 32) each.
  const int64_t attention = 32 * 32 + 2 * (32 * 16) + 32 * 32 + (32 + 2 * 16) + 32;
  const int64_t experts = 8 * (3 * 32 * 24 + 2 * 24 + 32) + (3 * 32 * 16 + 2 * 16 + 32);
  const int64_t layer = attention + 4 + 8 * 32 + 8 + experts + 2 * 32;
  CHECK(c.parameter_count() == 100 * 32 + 2 * layer + 32);
  CHECK_THAT(c.summary(), Contains("× 8 experts, top 2 (weights not renormalised), a shared expert of 16") &&
                              Contains("clamped SwiGLU (limit 7.0)") && Contains("sinks"));

  auto error = [&](const std::function<void(json&)>& edit) { return config_error(j, edit); };
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["top_k"] = 9; }), Contains("ffn.moe.top_k must be in 1..experts (8)"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["experts"] = 0; }), Contains("ffn.moe.experts must be in 1..1024"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["gate"] = "sigmoid"; }), Contains("unknown key 'gate'"));
  CHECK_THAT(error([](json& b) { b["ffn"]["limit"] = 0.0; }), Contains("ffn.limit must be > 0"));
  CHECK_THAT(error([](json& b) { b["ffn"]["kind"] = "none"; }), Contains("ffn.moe needs an FFN kind"));
}

TEST_CASE("multi-head latent attention and DeepSeek's router are read, written back and validated", "[config][moe][latent]") {
  using Catch::Matchers::Contains;
  json j = json::parse(R"({
    "vocab_size": 100, "hidden_size": 32, "kind": "decoder", "positions": "rope", "max_positions": 64,
    "norm": "rmsnorm",
    "ffn": {"kind": "swiglu", "inner_size": 8, "activation": "silu", "bias": false,
            "moe": {"experts": 8, "top_k": 2, "normalize": true, "router_bias": false, "shared_inner_size": 8,
                    "scores": "sigmoid", "groups": 4, "top_groups": 2, "group_score": "top2_sum",
                    "choice_bias": true, "scale": 2.5, "dense_layers": [0], "dense_inner_size": 20}},
    "decoder": {"layers": 2, "attention": {"heads": 4, "kv_heads": 4, "key_size": 10, "value_size": 6,
                "qkv_bias": false, "out_bias": false,
                "latent": {"kv_rank": 12, "q_rank": 8, "rope_size": 4, "norm_eps": 1e-6}}}
  })");
  const ModelConfig c = model_config_from_json(j);
  REQUIRE(c.decoder->attention.latent);
  CHECK(c.decoder->attention.latent->kv_rank == 12);
  CHECK(c.decoder->attention.latent->q_rank == 8);
  CHECK(c.decoder->attention.latent->rope_size == 4);
  REQUIRE(c.ffn.moe);
  CHECK(c.ffn.moe->scores == RouterScores::Sigmoid);
  CHECK(c.ffn.moe->group_score == GroupScore::TopTwoSum);
  CHECK(c.ffn.moe->dense_layers == std::vector<int>{0});
  check_contains(to_json(c), j, "config");
  CHECK(model_config_from_json(to_json(c)).decoder->attention.latent == c.decoder->attention.latent);
  // Attention: q_down 32·8, its norm 8, q 8·(4·10); kv_down 32·(12 + 4), its norm 12; k 12·(4·6), v 12·(4·6); o 24·32.
  const int64_t attention = 32 * 8 + 8 + 8 * 40 + 32 * 16 + 12 + 12 * 24 + 12 * 24 + 24 * 32;
  const int64_t dense = 3 * 32 * 20, expert = 3 * 32 * 8;
  const int64_t moe = 8 * expert + 8 * 32 + 8 + 3 * 32 * 8;  // experts, router, choice bias, shared expert
  CHECK(c.parameter_count() == 100 * 32 + 2 * attention + dense + moe + 4 * 32 + 32);  // tied head
  CHECK(c.parameter_count() == module_parameters(c));
  // A random model starts with the latents' norms as the identity and no choice bias, as transformers does.
  auto random = make_random_model(c, 1);
  const auto params = random->module->named_parameters();
  CHECK(torch::equal(params["decoder.0.attn.kv_latent_norm"], torch::ones({12})));
  CHECK(torch::equal(params["decoder.1.attn.q_latent_norm"], torch::ones({8})));
  CHECK(torch::equal(params["decoder.1.ffn.router_choice_bias"], torch::zeros({8})));
  CHECK(params["decoder.1.attn.kv_down.weight"].std().item<double>() == Approx(0.02).epsilon(0.2));
  CHECK_THAT(c.summary(), Contains("MLA(4h, latent 12, query latent 8, RoPE 4)") && Contains("sigmoid router") &&
                              Contains("best 2 of 4 groups") && Contains("1 dense layer(s) of 20"));

  auto error = [&](const std::function<void(json&)>& edit) { return config_error(j, edit); };
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["kv_heads"] = 2; }), Contains("kv_heads must equal heads"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["latent"]["rope_size"] = 10; }),
             Contains("rope_size (10) must be less than key_size (10)"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["latent"]["rope_size"] = 3; }), Contains("rope_size must be even"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["latent"]["kv_rank"] = 0; }), Contains("kv_rank must be >= 1"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["qk_norm"] = true; }), Contains("cannot be combined with qk_norm"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["talking_heads"] = {{"key_heads", 4}, {"softmax_heads", 4}, {"value_heads", 4}}; }),
             Contains("cannot be combined with talking_heads"));
  CHECK_THAT(error([](json& b) { b["rope_dim"] = 2; }), Contains("rope_dim cannot be set with multi-head latent attention"));
  CHECK_THAT(error([](json& b) { b["decoder"]["attention"]["latent"]["rank"] = 4; }), Contains("unknown key 'rank'"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["groups"] = 3; }), Contains("ffn.moe.groups (3) must divide experts (8)"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["top_groups"] = 5; }), Contains("ffn.moe.top_groups must be in 1..groups (4)"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["top_k"] = 5; }), Contains("must be at least top_k (5)"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["dense_layers"] = {2}; }), Contains("ffn.moe.dense_layers[0]: layer 2 is not in 0..1"));
  CHECK_THAT(error([](json& b) { b["ffn"]["moe"]["scores"] = "tanh"; }), Contains("tanh"));
}

TEST_CASE("disentangled attention is read, written back, counted and validated", "[config][disentangled]") {
  using Catch::Matchers::Contains;
  json j = json::parse(R"({
    "vocab_size": 100, "hidden_size": 32, "kind": "encoder", "positions": "none", "max_positions": 64,
    "norm_placement": "post", "embedding_norm": true, "final_norm": false,
    "ffn": {"kind": "mlp", "inner_size": 8, "activation": "gelu", "bias": true},
    "encoder": {"layers": 2, "attention": {"heads": 4, "kv_heads": 4, "key_size": 8, "value_size": 8,
                "disentangled": {"buckets": 8, "max_distance": 32, "c2p": true, "p2c": false,
                                 "shared_keys": false, "table_norm": true, "table_norm_eps": 1e-7}}}
  })");
  const ModelConfig c = model_config_from_json(j);
  REQUIRE(c.encoder->attention.disentangled);
  const Disentangled& d = *c.encoder->attention.disentangled;
  CHECK((d.buckets == 8 && d.max_distance == 32 && d.c2p && !d.p2c && !d.shared_keys && d.span() == 8));
  check_contains(to_json(c), j, "config");
  CHECK(model_config_from_json(to_json(c)).encoder->attention.disentangled == c.encoder->attention.disentangled);
  CHECK(c.encoder->attention.logit_scale() == Approx(1.0 / std::sqrt(8.0 * 2)));
  // Per layer: q, k, v, o (32·32 + 32 each), FFN 32·8 + 8 + 8·32 + 32, two LayerNorms, and pos_k (32·32 + 32);
  // once: the table 16 rows and its LayerNorm.
  const int64_t layer = 4 * (32 * 32 + 32) + (32 * 8 + 8 + 8 * 32 + 32) + 2 * 64 + (32 * 32 + 32);
  CHECK(c.parameter_count() == 100 * 32 + 64 + 2 * layer + 16 * 32 + 64);  // tokens, embedding norm, layers, table
  CHECK(c.parameter_count() == module_parameters(c));
  // A random model's table norm starts as the identity; the table itself is random.
  auto random = make_random_model(c, 1);
  const auto params = random->module->named_parameters();
  CHECK(torch::equal(params["encoder.0.attn.rel_norm.weight"], torch::ones({32})));
  CHECK(params["encoder.0.attn.rel_embeddings"].std().item<double>() == Approx(0.02).epsilon(0.2));
  CHECK(params.find("encoder.1.attn.rel_embeddings") == nullptr);  // stored once, in layer 0
  CHECK_THAT(c.summary(), Contains("disentangled(c2p, 8 log buckets to 32)"));

  auto error = [&](const std::function<void(json&)>& edit) { return config_error(j, edit); };
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["kv_heads"] = 2; }), Contains("kv_heads must equal heads"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["disentangled"]["buckets"] = 7; }), Contains("buckets must be even"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["disentangled"]["max_distance"] = 5; }),
             Contains("max_distance must be more than buckets / 2 + 1 (5)"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["disentangled"]["c2p"] = false; }), Contains("needs c2p, p2c or both"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["latent"] = {{"kv_rank", 4}}; }),
             Contains("cannot be combined with multi-head latent attention"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["scoring"] = "additive"; }), Contains("needs dot-product scoring"));
  CHECK_THAT(error([](json& b) { b["encoder"]["attention"]["disentangled"]["span"] = 4; }), Contains("unknown key 'span'"));
}
