#include "test_common.h"

#include "hf_fixtures.h"
#include "lrp_reference.h"
#include "relevance_checks.h"

#include "analysis/lrp.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

using namespace headlab::core;
using headlab::test::TempDir;
using Catch::Matchers::Contains;
using namespace headlab::test::hf;
namespace fs = std::filesystem;

TEST_CASE("hf import: BART, mBART, Marian and T5 match the reference encoder, decoder and cross maps and logits",
          "[hf_import][seq2seq]") {
  struct Case {
    const char* folder;
    const char* family;
  };
  for (const Case& c : {Case{"bart", "bart"}, Case{"mbart", "mbart"}, Case{"marian", "marian"}, Case{"t5", "t5"},
                        Case{"t5-v1_1", "t5"}}) {
    DYNAMIC_SECTION(c.folder) {
      auto model = load_model(fixture(c.folder));
      CHECK(model->config.family == c.family);
      CHECK(model->config.kind == StackKind::EncoderDecoder);
      const Expected expected = read_expected(fixture(c.folder));
      REQUIRE(!expected.decoder_ids.empty());
      // mBART's config leaves the start token to the target language's code.
      if (std::string(c.family) != "mbart") {
        REQUIRE(model->config.decoder_start_id);
        CHECK(*model->config.decoder_start_id == expected.decoder_ids.front());
      } else {
        CHECK(!model->config.decoder_start_id);
      }
      const Errors errors = compare_seq2seq(*model, expected);
      CHECK(errors.attention <= kAttentionTolerance);
      CHECK(errors.logits <= kLogitTolerance);
    }
  }
}

TEST_CASE("hf import: encoder-decoder configs map onto HeadLab's options", "[hf_import][seq2seq]") {
  SECTION("BART: learned positions from row 2, one table and embedding norm per stack, post-LN, a logit bias") {
    const auto c = load_model(fixture("bart"))->config;
    CHECK(c.positions == PositionKind::Learned);
    CHECK(c.max_positions == 40);
    CHECK(c.stack_embeddings);
    CHECK(c.embedding_norm);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK(c.lm_head.tied);
    CHECK(c.lm_head.bias);
    CHECK(*c.decoder_start_id == 2);
  }
  SECTION("mBART: BART's embeddings, pre-LN layers and a norm ending each stack") {
    const auto c = load_model(fixture("mbart"))->config;
    CHECK(c.stack_embeddings);
    CHECK(c.norm_placement == NormPlacement::Pre);
    CHECK(c.final_norm);
    CHECK(c.embedding_scale == Approx(std::sqrt(32.0)));
  }
  SECTION("Marian: the sinusoidal halves, scaled embeddings, no embedding norm") {
    const auto c = load_model(fixture("marian"))->config;
    CHECK(c.positions == PositionKind::Sinusoidal);
    CHECK(c.sinusoid_layout == SinusoidLayout::Halves);
    CHECK(!c.stack_embeddings);
    CHECK(!c.embedding_norm);
    CHECK(c.embedding_scale == Approx(std::sqrt(32.0)));
    CHECK(c.ffn.activation == Activation::Silu);
    CHECK(*c.decoder_start_id == 99);
  }
  SECTION("T5: relative bias in self-attention only, no scaling, RMSNorm, the tied head's rescaling") {
    const auto c = load_model(fixture("t5"))->config;
    CHECK(c.positions == PositionKind::None);
    CHECK(c.norm == NormKind::RMSNorm);
    REQUIRE(c.encoder->attention.relative_bias);
    CHECK(c.encoder->attention.relative_bias->buckets == 8);
    CHECK(c.encoder->attention.relative_bias->max_distance == 10);
    REQUIRE(c.decoder->attention.relative_bias);
    CHECK(!c.decoder->cross_attention->relative_bias);
    CHECK(c.encoder->attention.logit_scale() == 1.0f);
    CHECK(c.decoder->layers == 3);
    CHECK(c.lm_head.input_scale == Approx(1.0 / std::sqrt(32.0)));
    const auto v11 = load_model(fixture("t5-v1_1"))->config;
    CHECK(v11.ffn.kind == FfnKind::SwiGLU);
    CHECK(v11.ffn.activation == Activation::GeluTanh);
    CHECK(!v11.lm_head.tied);
    CHECK(v11.lm_head.input_scale == 1.0f);
  }
}

TEST_CASE("hf import: encoder-decoder options HeadLab does not run are refused by name", "[hf_import][seq2seq]") {
  auto refused = [](const std::string& folder, const std::function<void(nlohmann::json&)>& edit,
                    const std::function<void(Tensors&)>& edit_weights = {}) {
    TempDir dir("hf-seq2seq-refused");
    auto config = read_json(fixture(folder) + "/config.json");
    edit(config);
    auto weights = read_all(fixture(folder) + "/model.safetensors");
    if (edit_weights) edit_weights(weights);
    write_variant(dir, config, weights);
    return load_error(dir.str());
  };
  CHECK_THAT(refused("bart", [](auto& j) { j["normalize_before"] = true; }), Contains("normalize_before"));
  CHECK_THAT(refused("bart", [](auto& j) { j["encoder_ffn_dim"] = 64; }), Contains("decoder_ffn_dim"));
  CHECK_THAT(refused("marian", [](auto& j) { j["share_encoder_decoder_embeddings"] = false; }),
             Contains("share_encoder_decoder_embeddings"));
  CHECK_THAT(refused("t5", [](auto& j) { j["feed_forward_proj"] = "gated-mish"; j.erase("dense_act_fn"); }),
             Contains("feed_forward_proj"));
  // A Marian file whose stored position table is not the sinusoid HeadLab computes.
  const std::string edited = refused("marian", [](auto&) {}, [](Tensors& w) {
    for (auto& [name, t] : w)
      if (name == "model.decoder.embed_positions.weight") t = t + 0.01;
  });
  CHECK_THAT(edited, Contains("model.decoder.embed_positions.weight"));
  CHECK_THAT(edited, Contains("sinusoidal"));
}

TEST_CASE("hf import: T5 and Marian read every config spelling that changes their numbers", "[hf_import][seq2seq]") {
  // Each edited folder must still match the unedited reference: the edit spells the same model.
  auto matches = [](const std::string& folder, const std::function<void(nlohmann::json&)>& edit,
                    const std::function<void(Tensors&)>& edit_weights = {}) {
    TempDir dir("hf-seq2seq-spellings");
    auto config = read_json(fixture(folder) + "/config.json");
    edit(config);
    auto weights = read_all(fixture(folder) + "/model.safetensors");
    if (edit_weights) edit_weights(weights);
    write_variant(dir, config, weights);
    auto model = load_model(dir.str());
    const Errors errors = compare_seq2seq(*model, read_expected(fixture(folder)));
    CHECK(errors.attention <= kAttentionTolerance);
    CHECK(errors.logits <= kLogitTolerance);
    return model->config;
  };
  SECTION("transformers 5: tie_word_embeddings is always true, scale_decoder_outputs decides the rescale") {
    // T5 v1.1: an untied lm_head stored in the file, no rescale.
    auto v11 = matches("t5-v1_1", [](auto& j) {
      j["tie_word_embeddings"] = true;
      j["scale_decoder_outputs"] = false;
    });
    CHECK(!v11.lm_head.tied);
    CHECK(v11.lm_head.input_scale == 1.0f);
    // T5 v1.0: tied, rescaled.
    auto v10 = matches("t5", [](auto& j) { j["scale_decoder_outputs"] = true; });
    CHECK(v10.lm_head.tied);
    CHECK(v10.lm_head.input_scale == Approx(1.0 / std::sqrt(32.0)));
  }
  SECTION("the saved dense_act_fn and is_gated_act win over feed_forward_proj") {
    auto c = matches("t5-v1_1", [](auto& j) {
      j["feed_forward_proj"] = "relu";  // what T5Config would derive is overridden by the saved keys
      j["dense_act_fn"] = "gelu_new";
      j["is_gated_act"] = true;
    });
    CHECK(c.ffn.kind == FfnKind::SwiGLU);
  }
  SECTION("an unused cross-attention position bias of old conversions is ignored") {
    matches("t5", [](auto&) {}, [](Tensors& w) {
      w.emplace_back("decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight", torch::randn({8, 4}));
    });
  }
  SECTION("Marian: decoder_vocab_size is not read when the embeddings are shared") {
    matches("marian", [](auto& j) { j["decoder_vocab_size"] = 120; });
  }
}

TEST_CASE("hf import: every family matches the reference logits and attention maps", "[hf_import]") {
  struct Case {
    const char* folder;
    const char* family;
    const char* dtype;
  };
  for (const Case& c : {Case{"bert", "bert", "F32"}, Case{"gpt2", "gpt2", "F32"}, Case{"llama", "llama", "F32"},
                        Case{"qwen2", "qwen2", "F32"}, Case{"llama-bf16", "llama", "BF16"},
                        Case{"mistral", "mistral", "F32"}, Case{"qwen3", "qwen3", "F32"},
                        Case{"roberta", "roberta", "F32"}, Case{"distilbert", "distilbert", "F32"},
                        Case{"electra", "electra", "F32"}, Case{"electra-discriminator", "electra", "F32"},
                        Case{"albert", "albert", "F32"},
                        Case{"gemma2", "gemma2", "F32"}, Case{"gemma3", "gemma3", "BF16"},
                        Case{"llama31", "llama", "F32"}, Case{"llama-linear", "llama", "F32"},
                        Case{"llama-dynamic", "llama", "F32"}, Case{"qwen2-yarn", "qwen2", "F32"},
                        Case{"gemma3-scaled", "gemma3", "F32"}, Case{"phi3", "phi3", "F32"},
                        Case{"smollm3", "smollm3", "F32"}, Case{"gemma", "gemma", "F32"}, Case{"opt", "opt", "F32"},
                        Case{"olmo", "olmo", "F32"}, Case{"olmo-clip", "olmo", "F32"},
                        Case{"pythia", "gpt_neox", "F16"}, Case{"gptj", "gptj", "F32"},
                        Case{"bloom", "bloom", "F32"}, Case{"mixtral", "mixtral", "F32"},
                        Case{"gpt-oss", "gpt_oss", "F32"}, Case{"gpt-oss-mxfp4", "gpt_oss", "F32"},
                        Case{"phi", "phi", "F32"}, Case{"falcon", "falcon", "F32"},
                        Case{"falcon-40b", "falcon", "F32"}, Case{"falcon-sequential", "falcon", "F32"},
                        Case{"olmo2", "olmo2", "F32"}, Case{"modernbert", "modernbert", "F32"},
                        Case{"deepseek-v2-lite", "deepseek_v2", "F32"}, Case{"deepseek-v2", "deepseek_v2", "F32"},
                        Case{"deepseek-v3", "deepseek_v3", "F32"}, Case{"deberta-v3", "deberta_v2", "F32"},
                        Case{"deberta-v2", "deberta_v2", "F32"}}) {
    DYNAMIC_SECTION(c.folder) {
      auto model = load_model(fixture(c.folder));
      CHECK(model->config.family == c.family);
      CHECK(model->weights_dtype == c.dtype);
      const Errors errors = compare(*model, read_expected(fixture(c.folder)));
      // BF16 weights are compared with a reference computed from the same BF16-rounded values,
      // so the same float32 tolerances apply.
      CHECK(errors.attention <= kAttentionTolerance);
      CHECK(errors.logits <= kLogitTolerance);
    }
  }
}

TEST_CASE("hf import: scaled RoPE (linear, dynamic, llama3, yarn) is read, and each setting matters", "[hf_import][rope]") {
  SECTION("the settings as read") {
    const auto l31 = load_model(fixture("llama31"))->config;
    CHECK(l31.rope_scaling.kind == RopeScalingKind::Llama3);
    CHECK(l31.rope_scaling.factor == 8.0);
    CHECK(l31.rope_scaling.original_max_positions == 64);
    CHECK(l31.rope_scaling.low_freq_factor == 1.0);
    CHECK(l31.rope_scaling.high_freq_factor == 4.0);
    CHECK_THAT(l31.summary(), Contains("positions rope (llama3 scaling ×8.0)"));
    const auto yarn = load_model(fixture("qwen2-yarn"))->config;
    CHECK(yarn.rope_scaling.kind == RopeScalingKind::Yarn);
    CHECK(yarn.rope_scaling.factor == 4.0);
    // DeepSeek's mscale pair: (0.1·0.707·ln 4 + 1) / (0.1·ln 4 + 1).
    CHECK(yarn.rope_scaling.attention_factor == Approx((0.1 * 0.707 * std::log(4.0) + 1) / (0.1 * std::log(4.0) + 1)));
    CHECK(load_model(fixture("llama-linear"))->config.rope_scaling.kind == RopeScalingKind::Linear);
    CHECK(load_model(fixture("llama-dynamic"))->config.rope_scaling.kind == RopeScalingKind::Dynamic);
    const auto gemma = load_model(fixture("gemma3-scaled"))->config;
    CHECK(gemma.rope_scaling.kind == RopeScalingKind::Linear);
    REQUIRE(gemma.decoder->local.has_value());  // plain RoPE of its own, though θ is the same 10⁴
    CHECK(gemma.decoder->local->rope_theta == std::optional<float>(10000.0f));
    // A native config carries the scaling through config.json unchanged.
    for (const auto& c : {l31, yarn}) CHECK(model_config_from_json(to_json(c)).rope_scaling == c.rope_scaling);
  }
  SECTION("one wrong setting moves the maps far past the tolerance") {
    TempDir dir("rope-scaling");
    auto errors_with = [&](const char* folder, const std::function<void(nlohmann::json&)>& edit) {
      auto config = read_json(fixture(folder) + "/config.json");
      edit(config);
      write_variant(dir, config, read_all(fixture(folder) + "/model.safetensors"));
      return compare(*load_model(dir.str()), read_expected(fixture(folder)));
    };
    CHECK(errors_with("llama31", [](auto& j) { j["rope_scaling"] = nullptr; }).attention > 1e-3);
    CHECK(errors_with("llama31", [](auto& j) { j["rope_scaling"]["high_freq_factor"] = 2.0; }).attention > 1e-3);
    CHECK(errors_with("llama-linear", [](auto& j) { j["rope_scaling"]["factor"] = 2.0; }).attention > 1e-3);
    CHECK(errors_with("llama-dynamic", [](auto& j) { j["max_position_embeddings"] = 12; }).attention > 1e-3);
    CHECK(errors_with("qwen2-yarn", [](auto& j) { j["rope_parameters"]["attention_factor"] = 1.0; }).attention > 1e-3);
    CHECK(errors_with("qwen2-yarn", [](auto& j) { j["rope_parameters"]["beta_slow"] = 0.25; }).attention > 1e-3);
    // Gemma 3 scales its global layers only: scaling none, or every layer, moves the maps.
    CHECK(errors_with("gemma3-scaled", [](auto& j) { j["rope_scaling"] = nullptr; }).attention > 1e-3);
    // And the folder as written still matches (the edits above are what moved it).
    CHECK(errors_with("qwen2-yarn", [](auto&) {}).attention <= kAttentionTolerance);
  }
}

TEST_CASE("hf import: Phi-3's fused projections, partial rotary embeddings and sliding window", "[hf_import][phi3]") {
  const auto c = load_model(fixture("phi3"))->config;
  CHECK(c.family == "phi3");
  CHECK(c.rope_dim == 4);  // int(8 · 0.5): half of each head rotates
  CHECK_THAT(c.summary(), Contains("positions rope (first 4 dims of each head rotated)"));
  CHECK(c.decoder->attention.pattern.window == 4);  // sliding_window 5 keys, the query among them
  CHECK(c.decoder->attention.kv_heads == 2);
  CHECK(!c.decoder->attention.qkv_bias);
  CHECK(c.ffn.kind == FfnKind::SwiGLU);
  TempDir dir("hf-phi3");
  const Tensors weights = read_all(fixture("phi3/model.safetensors"));
  const Expected expected = read_expected(fixture("phi3"));
  auto errors_with = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto config = read_json(fixture("phi3/config.json"));
    edit(config);
    write_variant(dir, config, weights);
    return compare(*load_model(dir.str()), expected);
  };
  // Each detail matters: the whole head rotating, or no window.
  CHECK(errors_with([](auto& j) { j["partial_rotary_factor"] = 1.0; }).attention > 1e-3);
  CHECK(errors_with([](auto& j) { j["sliding_window"] = nullptr; }).attention > 1e-3);
  // Phi-3's long-context rope type is refused by name; so is a factor that leaves an odd rotated size.
  auto refused = [&](const std::function<void(nlohmann::json&)>& edit) {
    auto config = read_json(fixture("phi3/config.json"));
    edit(config);
    write_variant(dir, config, weights);
    return load_error(dir.str());
  };
  CHECK_THAT(refused([](auto& j) {
               j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1, 1}}, {"short_factor", {1, 1}}};
             }),
             Contains("rope_scaling type 'longrope' is not supported"));
  CHECK_THAT(refused([](auto& j) { j["partial_rotary_factor"] = 0.375; }), Contains("RoPE needs an even number"));
  // A config that splits the fused rows otherwise (4 key/value heads) does not fit the stored qkv_proj.
  CHECK_THAT(refused([](auto& j) { j["num_key_value_heads"] = 4; }),
             Contains("self_attn.qkv_proj.weight") && Contains("[64, 32]") && Contains("[96, 32]"));
}


TEST_CASE("hf import: SmolLM3's NoPE layers, as listed or by their interval", "[hf_import][smollm3]") {
  const auto c = load_model(fixture("smollm3"))->config;
  CHECK(c.family == "smollm3");
  CHECK(c.decoder->nope_layers == std::vector<int>{2});  // no_rope_layers [1, 1, 0]
  CHECK(c.rope_theta == 2e6f);
  CHECK(c.lm_head.tied);
  const FixtureVariants v("smollm3");
  // Without the list, every no_rope_layer_interval-th layer is NoPE: interval 3 is the same model.
  CHECK(v.errors_with([](auto& j) {
           j.erase("no_rope_layers");
           j["no_rope_layer_interval"] = 3;
         }).attention <= kAttentionTolerance);
  // Each detail matters: RoPE in every layer, or the default base.
  CHECK(v.errors_with([](auto& j) { j["no_rope_layers"] = {1, 1, 1}; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j.erase("rope_theta"); }).attention <= kAttentionTolerance);  // 2·10⁶ by default
  CHECK(v.errors_with([](auto& j) { j["rope_theta"] = 10000.0; }).attention > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["no_rope_layers"] = {1, 0}; }), Contains("at least num_hidden_layers (3)"));
  CHECK_THAT(v.refused([](auto& j) { j["no_rope_layers"] = {1, 2, 0}; }), Contains("no_rope_layers[1] must be 0"));
  CHECK_THAT(v.refused([](auto& j) { j["use_sliding_window"] = true; }), Contains("use_sliding_window true"));
}

TEST_CASE("hf import: Gemma (1): offset norms, √hidden, GeGLU, head_dim^-½, no post-norms", "[hf_import][gemma]") {
  const auto c = load_model(fixture("gemma"))->config;
  CHECK(c.family == "gemma");
  const auto& a = c.decoder->attention;
  CHECK((a.heads == 4 && a.kv_heads == 1 && a.key_size == 12));
  CHECK_FALSE(a.scale);  // 1/sqrt(head_dim)
  CHECK(a.logit_softcap == 0.0f);
  CHECK_FALSE(c.sublayer_output_norm);
  CHECK_FALSE(c.decoder->local);
  CHECK(c.norm_weight_offset == 1.0f);
  CHECK(c.embedding_scale == static_cast<float>(std::sqrt(32.0)));
  CHECK((c.ffn.kind == FfnKind::SwiGLU && c.ffn.activation == Activation::GeluTanh));
  const FixtureVariants v("gemma");
  // hidden_activation decides, as GemmaMLP reads it; without it, gelu_pytorch_tanh, not the legacy
  // hidden_act "gelu" beside it (which would refuse, or change the logits).
  CHECK(v.errors_with([](auto& j) { j.erase("hidden_activation"); }).logits <= kLogitTolerance);
  CHECK_THAT(v.refused([](auto& j) { j["hidden_activation"] = "gelu"; }),
             Contains("hidden_activation 'gelu' is not supported"));
  // Gemma scales every layer's RoPE (linear: the angles / factor).
  CHECK(v.errors_with([](auto& j) { j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 2.0}}; }).attention > 1e-3);
  CHECK(load_model(v.dir.str())->config.rope_scaling.kind == RopeScalingKind::Linear);
}

TEST_CASE("hf import: OPT's offset positions, ReLU MLP and biases, OPT-350m's layout is refused", "[hf_import][opt]") {
  const auto c = load_model(fixture("opt"))->config;
  CHECK(c.family == "opt");
  CHECK(c.positions == PositionKind::Learned);
  CHECK(c.max_positions == 16);
  CHECK((c.ffn.kind == FfnKind::Mlp && c.ffn.activation == Activation::Relu && c.ffn.bias));
  CHECK((c.decoder->attention.qkv_bias && c.decoder->attention.out_bias));
  CHECK(c.norm_placement == NormPlacement::Pre);
  CHECK(c.lm_head.tied);
  const FixtureVariants v("opt");
  // Each detail matters: the ReLU, the final LayerNorm, the biases.
  CHECK(v.errors_with([](auto& j) { j["activation_function"] = "gelu"; }).logits > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["_remove_final_layer_norm"] = true; }), Contains("final_layer_norm"));
  CHECK_THAT(v.refused([](auto& j) { j["enable_bias"] = false; }), Contains("bias"));
  CHECK_THAT(v.refused([](auto& j) { j["do_layer_norm_before"] = false; }), Contains("do_layer_norm_before false"));
  CHECK_THAT(v.refused([](auto& j) { j["word_embed_proj_dim"] = 16; }), Contains("project_in / project_out"));
  // The table's rows must be max_position_embeddings + 2.
  CHECK_THAT(v.refused([](auto& j) { j["max_position_embeddings"] = 32; }), Contains("embed_positions.weight"));
}

TEST_CASE("hf import: OLMo's weightless LayerNorms, and its clip_qkv", "[hf_import][olmo]") {
  auto model = load_model(fixture("olmo"));
  const auto& c = model->config;
  CHECK(c.family == "olmo");
  CHECK((c.norm == NormKind::LayerNorm && c.norm_eps == 1e-5f));
  const auto params = model->module->named_parameters();
  for (const char* name : {"decoder.0.attn_norm.weight", "decoder.1.ffn_norm.weight", "decoder_norm.weight"})
    CHECK(params[name].eq(1.0f).all().item<bool>());
  CHECK(params["decoder.0.attn_norm.bias"].eq(0.0f).all().item<bool>());
  const FixtureVariants v("olmo");
  CHECK(c.decoder->attention.qkv_clip == 0.0f);  // clip_qkv null
  // Each detail matters: a clip where there is none, another RoPE base; another activation is refused.
  CHECK(v.errors_with([](auto& j) { j["clip_qkv"] = 0.05; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rope_theta"] = 100.0; }).attention > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["hidden_act"] = "gelu"; }), Contains("hidden_act 'gelu' is not supported"));
  // OLMo 1.7's clip_qkv: q, k and v clamped as they leave their projections (the fixture's 1.5 clamps
  // ~40% of the queries and keys); without it the same weights give other maps and logits.
  const auto clipped = load_model(fixture("olmo-clip"));
  CHECK(clipped->config.decoder->attention.qkv_clip == 1.5f);
  CHECK_THAT(clipped->config.summary(), Contains("qkv-clip=1.5"));
  const FixtureVariants clip("olmo-clip");
  const Errors unclipped = clip.errors_with([](auto& j) { j["clip_qkv"] = nullptr; });
  CHECK(unclipped.attention > 1e-2);
  CHECK(unclipped.logits > 1e-2);
  CHECK(clip.errors_with([](auto& j) { j["clip_qkv"] = 1.6; }).attention > 1e-4);  // the bound itself matters
  const Errors unreached = clip.errors_with([](auto& j) { j["clip_qkv"] = 1e9; });  // a bound no value reaches
  CHECK(unreached.attention == unclipped.attention);
  CHECK(unreached.logits == unclipped.logits);
  CHECK_THAT(v.refused([](auto& j) { j["clip_qkv"] = -8.0; }), Contains("clip_qkv must be a positive number or null"));
  CHECK_THAT(v.refused([](auto& j) { j["clip_qkv"] = "8"; }), Contains("clip_qkv"));
  // A file with norm weights is not OLMo's layout: the tensor is named.
  TempDir dir("hf-olmo-norms");
  Tensors weights = v.weights;
  weights.emplace_back("model.norm.weight", torch::ones({32}));
  write_variant(dir, read_json(fixture("olmo/config.json")), weights);
  CHECK_THAT(load_error(dir.str()), Contains("unexpected tensor 'model.norm.weight'"));
}

TEST_CASE("hf import: GPT-NeoX (Pythia): per-head fused qkv, a quarter of each head rotating, parallel residual",
          "[hf_import][gpt_neox]") {
  const auto c = load_model(fixture("pythia"))->config;
  CHECK(c.family == "gpt_neox");
  CHECK(c.rope_dim == 4);  // rotary_pct 0.25 of head size 16
  CHECK_FALSE(c.rope_interleaved);
  CHECK(c.parallel_residual);
  CHECK((c.norm == NormKind::LayerNorm && c.ffn.activation == Activation::Gelu && !c.lm_head.tied));
  CHECK_THAT(c.summary(), Contains("attention and FFN in parallel"));
  const FixtureVariants v("pythia");
  // Each detail matters: the FFN after attention, the whole head rotating, another base.
  CHECK(v.errors_with([](auto& j) { j["use_parallel_residual"] = false; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rotary_pct"] = 1.0; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rotary_emb_base"] = 100; }).attention > 1e-3);
  // transformers 5 spells the same settings inside rope_parameters.
  CHECK(v.errors_with([](auto& j) {
           j.erase("rotary_emb_base");
           j.erase("rotary_pct");
           j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000}, {"partial_rotary_factor", 0.25}};
         }).attention <= kAttentionTolerance);
  // Left out, the fraction is GPTNeoXConfig's default: a quarter, as the fixture says.
  CHECK(v.errors_with([](auto& j) { j.erase("rotary_pct"); }).attention <= kAttentionTolerance);
  CHECK(v.errors_with([](auto& j) {
           j.erase("rotary_pct");
           j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000}};
         }).attention <= kAttentionTolerance);
  CHECK_THAT(v.refused([](auto& j) { j["rotary_pct"] = 0.1; }), Contains("RoPE needs an even number"));
  // A config without its class is asked for one, not read as a HeadLab config ("unknown key …").
  CHECK_THAT(v.refused([](auto& j) { j.erase("architectures"); }),
             Contains("model_type 'gpt_neox'") && Contains("without 'architectures'") && Contains("GPTNeoXForCausalLM"));
}

TEST_CASE("hf import: GPT-J: interleaved partial rotary, one LayerNorm for attention and MLP side by side",
          "[hf_import][gptj]") {
  const auto c = load_model(fixture("gptj"))->config;
  CHECK(c.family == "gptj");
  CHECK((c.rope_interleaved && c.rope_dim == 8 && c.parallel_residual));
  CHECK((c.lm_head.bias && !c.lm_head.tied));
  CHECK_FALSE(c.decoder->attention.qkv_bias);
  CHECK_THAT(c.summary(), Contains("interleaved pairs"));
  const FixtureVariants v("gptj");
  CHECK(v.errors_with([](auto& j) { j["rotary_dim"] = 16; }).attention > 1e-3);  // the whole head
  CHECK(v.errors_with([](auto& j) { j["rotary_dim"] = nullptr; }).attention > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["rotary_dim"] = 7; }), Contains("rotary_dim 7 must be even"));
}

TEST_CASE("hf import: BLOOM: ALiBi with the extra slopes of 6 heads, the embedding LayerNorm, per-head fused qkv",
          "[hf_import][bloom]") {
  const auto c = load_model(fixture("bloom"))->config;
  CHECK(c.family == "bloom");
  CHECK(c.positions == PositionKind::None);
  CHECK(c.decoder->attention.alibi);
  CHECK(c.embedding_norm);
  CHECK_THAT(c.summary(), Contains("ALiBi"));
  const FixtureVariants v("bloom");
  // The released configs spell hidden_size n_embed; the other aliases read alike.
  CHECK(v.errors_with([](auto& j) {
           j["n_embed"] = j["hidden_size"];
           j.erase("hidden_size");
           j["num_hidden_layers"] = j["n_layer"];
           j.erase("n_layer");
         }).logits <= kLogitTolerance);
  CHECK_THAT(v.refused([](auto& j) { j["apply_residual_connection_post_layernorm"] = true; }),
             Contains("apply_residual_connection_post_layernorm true is not supported"));
  // Each detail matters: the norms' epsilon, and the head count — 3 heads of 16 split the fused rows
  // otherwise and take ALiBi's slopes for 3 heads: the logits move.
  CHECK(v.errors_with([](auto& j) { j["layer_norm_epsilon"] = 0.5; }).logits > 1e-3);
  v.write([](auto& j) { j["n_head"] = 3; });
  auto three_heads = load_model(v.dir.str());
  CHECK(three_heads->config.decoder->attention.heads == 3);
  RunRequest request;
  request.ids = v.expected.ids;
  CHECK(relative_difference(run(*three_heads, request)->logits, v.expected.logits) > 1e-3);
}

TEST_CASE("hf import: configs map onto HeadLab's options", "[hf_import]") {
  SECTION("BERT: post-LN encoder, token types, MLM head tied with bias") {
    const auto c = load_model(fixture("bert"))->config;
    CHECK(c.kind == StackKind::Encoder);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK_FALSE(c.final_norm);
    CHECK(c.embedding_norm);
    CHECK(c.type_vocab_size == 2);
    CHECK(c.ffn.activation == Activation::Gelu);
    CHECK(c.norm_eps == Approx(1e-12));
    CHECK((c.lm_head.transform && c.lm_head.tied && c.lm_head.bias));
    CHECK(c.encoder->attention.heads == 4);
    CHECK(c.name == "bert");
  }
  SECTION("RoBERTa: BERT's encoder, positions from padding_idx + 1, one token type, lm_head") {
    const auto c = load_model(fixture("roberta"))->config;
    CHECK(c.family == "roberta");
    CHECK(c.max_positions == 32);  // 34 rows, the first two (up to the padding index) never read
    CHECK(c.type_vocab_size == 1);
    CHECK(c.norm_eps == Approx(1e-5));
    CHECK((c.lm_head.transform && c.lm_head.tied && c.lm_head.bias));
  }
  SECTION("DistilBERT: post-LN encoder without token types, LayerNorms at 1e-12, vocab_* MLM head") {
    const auto c = load_model(fixture("distilbert"))->config;
    CHECK(c.family == "distilbert");
    CHECK(c.type_vocab_size == 0);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK(c.norm_eps == Approx(1e-12));
    CHECK((c.lm_head.transform && c.lm_head.tied && c.lm_head.bias));
    CHECK(c.encoder->layers == 2);
  }
  SECTION("GPT-2: pre-LN causal decoder, gelu_new, n_inner = 4·n_embd") {
    const auto c = load_model(fixture("gpt2"))->config;
    CHECK(c.kind == StackKind::Decoder);
    CHECK(c.positions == PositionKind::Learned);
    CHECK(c.ffn.activation == Activation::GeluTanh);
    CHECK(c.ffn.inner_size == 128);
    CHECK(c.max_positions == 32);
    CHECK((c.final_norm && c.lm_head.tied && !c.lm_head.bias));
  }
  SECTION("Llama: RMSNorm, RoPE, GQA, SwiGLU, untied head") {
    const auto c = load_model(fixture("llama"))->config;
    CHECK(c.norm == NormKind::RMSNorm);
    CHECK(c.positions == PositionKind::Rope);
    CHECK(c.rope_theta == Approx(500000.0));
    CHECK(c.ffn.kind == FfnKind::SwiGLU);
    CHECK_FALSE(c.ffn.bias);
    CHECK(c.decoder->attention.heads == 4);
    CHECK(c.decoder->attention.kv_heads == 2);
    CHECK(c.decoder->attention.key_size == 8);
    CHECK_FALSE(c.decoder->attention.qkv_bias);
    CHECK_FALSE(c.lm_head.tied);
    CHECK_THAT(c.summary(), Contains("GQA(4q/2kv)") && Contains("(llama)"));
  }
  SECTION("Llama BF16 variant: MQA, explicit head_dim, attention_bias, tied") {
    const auto c = load_model(fixture("llama-bf16"))->config;
    CHECK(c.decoder->attention.kv_heads == 1);
    CHECK(c.decoder->attention.key_size == 16);
    CHECK((c.decoder->attention.qkv_bias && c.decoder->attention.out_bias));
    CHECK(c.lm_head.tied);
  }
  SECTION("Mistral: Llama's layout with a sliding window of 4 keys (3 before the query)") {
    const auto c = load_model(fixture("mistral"))->config;
    CHECK(c.family == "mistral");
    CHECK(c.decoder->attention.pattern.window == 3);
    CHECK_FALSE(c.decoder->attention.qkv_bias);
    CHECK(c.decoder->attention.key_size == 8);
  }
  SECTION("Qwen3 (a transformers 5 config): q/k RMSNorm, head_dim unlike hidden/heads, tied, no biases") {
    const auto c = load_model(fixture("qwen3"))->config;
    CHECK(c.family == "qwen3");
    CHECK(c.decoder->attention.qk_norm);
    CHECK(c.decoder->attention.qk_norm_eps == Approx(1e-6));
    CHECK(c.decoder->attention.key_size == 12);
    CHECK(c.rope_theta == Approx(1e6));  // from rope_parameters
    CHECK_FALSE(c.decoder->attention.qkv_bias);
    CHECK(c.lm_head.tied);
    CHECK_THAT(c.summary(), Contains("GQA(4q/2kv) qk-norm") && Contains("(qwen3)"));
  }
  SECTION("Qwen2: q/k/v biases, no o_proj bias, sharded checkpoint") {
    const auto c = load_model(fixture("qwen2"))->config;
    CHECK(c.decoder->attention.qkv_bias);
    CHECK_FALSE(c.decoder->attention.out_bias);
    CHECK(c.rope_theta == Approx(1e6));
  }
}

// transformers 5 writes RoPE settings into `rope_parameters` (and lists `layer_types`); a folder
// written that way must give the same numbers as the 4.x spelling, or be refused — never run with
// the default θ = 10⁴.
TEST_CASE("hf import: transformers 5 config spellings are read or refused", "[hf_import]") {
  TempDir dir("hf-v5");
  auto v4 = read_json(fixture("qwen2/config.json"));
  Tensors weights;
  for (const char* shard : {"qwen2/model-00001-of-00002.safetensors", "qwen2/model-00002-of-00002.safetensors"})
    for (auto& named : read_all(fixture(shard))) weights.push_back(named);
  const Expected expected = read_expected(fixture("qwen2"));
  auto v5 = v4;
  v5.erase("rope_theta");
  v5.erase("torch_dtype");
  v5["dtype"] = "float32";
  v5["transformers_version"] = "5.0.0";
  v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  v5["layer_types"] = {"full_attention", "full_attention"};

  SECTION("rope_parameters.rope_theta is the θ the model runs with") {
    write_variant(dir, v5, weights);
    auto model = load_model(dir.str());
    CHECK(model->config.rope_theta == Approx(1e6));
    const Errors errors = compare(*model, expected);
    CHECK(errors.attention <= kAttentionTolerance);
    CHECK(errors.logits <= kLogitTolerance);
  }
  SECTION("the same folder with θ = 10⁴ differs from the reference: the comparison can fail") {
    auto wrong = v5;
    wrong["rope_parameters"]["rope_theta"] = 10000.0;
    write_variant(dir, wrong, weights);
    const Errors errors = compare(*load_model(dir.str()), expected);
    CHECK(errors.attention > 1e-2);
  }
  SECTION("per-layer-type parameters that agree are read") {
    auto typed = v5;
    typed["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1000000.0}}}};
    write_variant(dir, typed, weights);
    CHECK(load_model(dir.str())->config.rope_theta == Approx(1e6));
  }
  SECTION("refused: unknown rope types and keys, disagreeing θ, sliding layers") {
    auto scaled = v5;
    scaled["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 1e6}, {"factor", 4.0}};
    write_variant(dir, scaled, weights);
    CHECK_THAT(load_error(dir.str()), Contains("rope_parameters type 'longrope'") && Contains("not supported") &&
                                          Contains("default, linear, dynamic, llama3 and yarn"));

    auto unknown = v5;
    unknown["rope_parameters"]["factor"] = 2.0;
    write_variant(dir, unknown, weights);
    CHECK_THAT(load_error(dir.str()), Contains("'rope_parameters.factor'") && Contains("not supported"));

    auto both = v5;
    both["rope_theta"] = 10000.0;
    write_variant(dir, both, weights);
    CHECK_THAT(load_error(dir.str()), Contains("disagree"));

    auto per_type = v5;
    per_type["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 1e6}}},
                                   {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    write_variant(dir, per_type, weights);
    CHECK_THAT(load_error(dir.str()), Contains("different RoPE per layer type"));

    auto sliding = v5;
    sliding["layer_types"] = {"full_attention", "sliding_attention"};
    write_variant(dir, sliding, weights);
    CHECK_THAT(load_error(dir.str()), Contains("layer_types[1] 'sliding_attention'") && Contains("not supported"));

    // Mistral's layers all slide: layer_types must agree with sliding_window.
    auto mistral = read_json(fixture("mistral/config.json"));
    const Tensors mistral_weights = read_all(fixture("mistral/model.safetensors"));
    mistral["layer_types"] = {"sliding_attention", "sliding_attention"};
    write_variant(dir, mistral, mistral_weights);
    CHECK(load_model(dir.str())->config.decoder->attention.pattern.window == 3);
    mistral["layer_types"] = {"sliding_attention", "full_attention"};
    write_variant(dir, mistral, mistral_weights);
    CHECK_THAT(load_error(dir.str()), Contains("layer_types[1] 'full_attention'"));
    mistral.erase("layer_types");
    mistral["sliding_window"] = 0;
    write_variant(dir, mistral, mistral_weights);
    CHECK_THAT(load_error(dir.str()), Contains("sliding_window must be >= 1"));

    auto partial = v5;
    partial["rope_parameters"]["partial_rotary_factor"] = 0.5;
    write_variant(dir, partial, weights);
    CHECK_THAT(load_error(dir.str()), Contains("partial_rotary_factor") && Contains("not supported"));
  }
}

TEST_CASE("hf import: BertModel without an MLM head, weight/bias names, no prefix", "[hf_import]") {
  TempDir dir("hf-bertmodel");
  auto config = read_json(fixture("bert/config.json"));
  config["architectures"] = {"BertModel"};
  Tensors weights;
  for (auto [name, t] : read_all(fixture("bert/model.safetensors"))) {
    if (name.rfind("cls.", 0) == 0) continue;
    if (name.rfind("bert.", 0) == 0) name = name.substr(5);
    for (auto [from, to] : {std::pair<std::string, std::string>{".gamma", ".weight"}, {".beta", ".bias"}})
      if (name.size() > from.size() && name.compare(name.size() - from.size(), from.size(), from) == 0)
        name = name.substr(0, name.size() - from.size()) + to;
    weights.emplace_back(name, t);
  }
  write_variant(dir, config, weights);
  auto model = load_model(dir.str());
  CHECK_FALSE(model->config.lm_head.transform);
  CHECK(model->config.lm_head.tied);
  CHECK_THAT(model->config.name, Contains("no MLM head"));
  const Expected expected = read_expected(fixture("bert"));
  RunRequest request;
  request.ids = expected.ids;
  request.token_types = expected.token_types;
  auto trace = run(*model, request);
  for (size_t l = 0; l < expected.attentions.size(); ++l)
    CHECK(headlab::test::max_abs_diff(value_weights(trace->encoder.layers[l].self), expected.attentions[l]) <= kAttentionTolerance);
  // The stand-in head: final hidden states scored against the token embeddings.
  torch::NoGradGuard no_grad;
  auto logits = torch::matmul(trace->encoder.hidden.back(), model->module->tokens->weight.t());
  CHECK(headlab::test::max_abs_diff(trace->logits, logits) <= 1e-4);
}

TEST_CASE("hf import: GPT-2 with the transformer. prefix, a tied lm_head and no mask buffers", "[hf_import]") {
  TempDir dir("hf-gpt2-prefix");
  Tensors weights;
  for (const auto& [name, t] : read_all(fixture("gpt2/model.safetensors"))) {
    if (name.find(".attn.bias") != std::string::npos || name.find(".attn.masked_bias") != std::string::npos) continue;
    weights.emplace_back("transformer." + name, t);
  }
  weights.emplace_back("lm_head.weight", get(weights, "transformer.wte.weight"));
  write_variant(dir, read_json(fixture("gpt2/config.json")), weights);
  auto model = load_model(dir.str());
  const Errors errors = compare(*model, read_expected(fixture("gpt2")));
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);
}

TEST_CASE("hf import: F16 weights load as the same values in float32", "[hf_import]") {
  // The F16 folder must run exactly like an F32 folder holding the F16-rounded values.
  TempDir f16("hf-f16"), f32("hf-f16-as-f32");
  auto config = read_json(fixture("gpt2/config.json"));
  Tensors rounded;
  for (const auto& [name, t] : read_all(fixture("gpt2/model.safetensors")))
    rounded.emplace_back(name, t.is_floating_point() ? t.to(torch::kHalf).to(torch::kFloat) : t);
  write_variant(f16, config, rounded, DType::F16);
  write_variant(f32, config, rounded, DType::F32);
  auto half = load_model(f16.str());
  auto full = load_model(f32.str());
  CHECK(half->weights_dtype == "F16");
  RunRequest request;
  request.ids = {3, 1, 4, 1, 5, 9, 2, 6};
  CHECK(headlab::test::max_abs_diff(run(*half, request)->logits, run(*full, request)->logits) == 0.0);
}

TEST_CASE("hf import: errors name the architecture, the tensor or the option", "[hf_import]") {
  TempDir dir("hf-errors");
  const auto gpt2_config = read_json(fixture("gpt2/config.json"));
  const Tensors gpt2_weights = read_all(fixture("gpt2/model.safetensors"));

  SECTION("unsupported architecture") {
    auto config = gpt2_config;
    config["architectures"] = {"XLNetLMHeadModel"};
    write_variant(dir, config, gpt2_weights);
    const std::string error = load_error(dir.str());
    CHECK_THAT(error, Contains("XLNetLMHeadModel") && Contains("not supported"));
  }
  SECTION("missing tensor") {
    Tensors weights;
    for (const auto& [name, t] : gpt2_weights)
      if (name != "h.1.mlp.c_fc.weight") weights.emplace_back(name, t);
    write_variant(dir, gpt2_config, weights);
    CHECK_THAT(load_error(dir.str()), Contains("'h.1.mlp.c_fc.weight'") && Contains("missing"));
  }
  SECTION("misshaped tensor") {
    Tensors weights;
    for (const auto& [name, t] : gpt2_weights)
      weights.emplace_back(name, name == "h.0.attn.c_attn.weight" ? torch::zeros({32, 95}) : t);
    write_variant(dir, gpt2_config, weights);
    CHECK_THAT(load_error(dir.str()),
               Contains("'h.0.attn.c_attn.weight' has shape [32, 95], expected [32, 96]") && Contains("model.safetensors"));
  }
  SECTION("config and weights disagree: a tensor for a layer the config does not have") {
    Tensors weights = gpt2_weights;
    weights.emplace_back("h.2.ln_1.weight", torch::ones({32}));
    write_variant(dir, gpt2_config, weights);
    CHECK_THAT(load_error(dir.str()), Contains("unexpected tensor 'h.2.ln_1.weight'"));
  }
  SECTION("rope_scaling without a key its type needs") {
    auto config = read_json(fixture("llama/config.json"));
    config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
    write_variant(dir, config, read_all(fixture("llama/model.safetensors")));
    CHECK_THAT(load_error(dir.str()), Contains("rope_scaling") && Contains("llama3") && Contains("needs 'low_freq_factor'"));
  }
  SECTION("missing shard") {
    fs::copy_file(fixture("qwen2/config.json"), dir.str("config.json"));
    fs::copy_file(fixture("qwen2/model.safetensors.index.json"), dir.str("model.safetensors.index.json"));
    fs::copy_file(fixture("qwen2/model-00001-of-00002.safetensors"), dir.str("model-00001-of-00002.safetensors"));
    CHECK_THAT(load_error(dir.str()), Contains("model-00002-of-00002.safetensors"));
  }
  SECTION("PyTorch pickles only") {
    write_json(dir.str("config.json"), gpt2_config);
    std::ofstream(dir.str("pytorch_model.bin")) << "not a pickle";
    CHECK_THAT(load_error(dir.str()), Contains("pytorch_model.bin") && Contains("safetensors"));
  }
}

TEST_CASE("hf import: headlab run and info work on Hugging Face folders", "[hf_import][cli]") {
  const std::string binary = HEADLAB_BINARY;
  REQUIRE(fs::exists(binary));  // built before the tests (add_dependencies)
  TempDir dir("hf-cli");
  const Expected expected = read_expected(fixture("gpt2"));
  std::string ids;
  for (size_t i = 0; i < expected.ids.size(); ++i) ids += (i ? "," : "") + std::to_string(expected.ids[i]);
  std::string output;
  const std::string dump = dir.str("dump.safetensors");
  REQUIRE(headlab::test::run_command(binary + " run --model " + fixture("gpt2") + " --ids " + ids + " --out " + dump,
                                     output) == 0);
  auto file = SafetensorsFile::open(dump);
  std::vector<std::string> names;
  for (const auto& info : file.tensors()) names.push_back(info.name);
  CHECK(names == std::vector<std::string>{"logits", "attentions.0", "attentions.1"});
  CHECK(headlab::test::max_abs_diff(load_tensor(file, "logits"), expected.logits) <= kLogitTolerance * expected.logits.abs().max().item<double>());
  CHECK(headlab::test::max_abs_diff(load_tensor(file, "attentions.1"), expected.attentions[1]) <= kAttentionTolerance);

  REQUIRE(headlab::test::run_command(binary + " info --model " + fixture("llama-bf16"), output) == 0);
  CHECK_THAT(output, Contains("(llama)") && Contains("MQA(4q/1kv)") && Contains("2 layers") && Contains("BF16") &&
                         Contains("parameters"));
}

// ELECTRA and ALBERT: factorised embeddings (embedding_size → hidden_size) and, for ALBERT, one set
// of layer weights shared by every layer. The reference numbers are in the family test above.
TEST_CASE("hf import: ELECTRA and ALBERT map onto factorised embeddings and shared layers", "[hf_import][encoders]") {
  SECTION("ElectraForMaskedLM: embeddings_project, the generator head at embedding_size, tied") {
    const auto model = load_model(fixture("electra"));
    const auto& c = model->config;
    CHECK(c.family == "electra");
    CHECK(c.embedding_size == 16);
    CHECK(c.hidden_size == 32);
    CHECK(c.type_vocab_size == 2);
    CHECK(c.norm_placement == NormPlacement::Post);
    CHECK((c.lm_head.transform && c.lm_head.tied && c.lm_head.bias));
    CHECK(model->module->head_transform->weight.sizes() == std::vector<int64_t>{16, 32});
    CHECK(c.name == "electra");
  }
  SECTION("ElectraForPreTraining: the encoder; the discriminator head is named as not run") {
    const auto c = load_model(fixture("electra-discriminator"))->config;
    CHECK(c.embedding_size == 0);  // embedding_size = hidden_size: no embeddings_project
    CHECK_FALSE(c.lm_head.transform);
    CHECK_THAT(c.name, Contains("discriminator") && Contains("not run"));
  }
  SECTION("AlbertForMaskedLM: one layer's weights run in all three layers, gelu_new, projection") {
    const auto model = load_model(fixture("albert"));
    const auto& c = model->config;
    CHECK(c.family == "albert");
    CHECK(c.encoder->layers == 3);
    CHECK(c.encoder->shared_layers);
    CHECK(c.embedding_size == 16);
    CHECK(c.ffn.activation == Activation::GeluTanh);
    CHECK((c.lm_head.transform && c.lm_head.tied && c.lm_head.bias));
    CHECK(model->module->blocks(headlab::core::Stack::Encoder)->size() == 1);
    int64_t n = 0;
    for (const auto& p : model->module->parameters()) n += p.numel();
    CHECK(c.parameter_count() == n);
    CHECK_THAT(c.summary(), Contains("(albert)") && Contains("3 layers") && Contains("shared by all layers"));
  }
}

TEST_CASE("hf import: ALBERT and ELECTRA variants: bare models, pre-training files, no prefix", "[hf_import][encoders]") {
  TempDir dir("hf-encoders");
  const Expected albert_expected = read_expected(fixture("albert"));
  const Tensors albert_weights = read_all(fixture("albert/model.safetensors"));
  const auto albert_config = read_json(fixture("albert/config.json"));

  SECTION("AlbertForPreTraining: the MLM head as AlbertForMaskedLM; pooler and sentence-order head unused") {
    auto config = albert_config;
    config["architectures"] = {"AlbertForPreTraining"};
    Tensors weights;
    for (const auto& [name, t] : albert_weights)
      if (name != "predictions.decoder.bias" && name != "predictions.decoder.weight") weights.emplace_back(name, t);
    weights.emplace_back("albert.pooler.weight", torch::zeros({32, 32}));
    weights.emplace_back("albert.pooler.bias", torch::zeros({32}));
    weights.emplace_back("sop_classifier.classifier.weight", torch::zeros({2, 32}));
    weights.emplace_back("sop_classifier.classifier.bias", torch::zeros({2}));
    write_variant(dir, config, weights);
    const Errors errors = compare(*load_model(dir.str()), albert_expected);
    CHECK(errors.attention <= kAttentionTolerance);
    CHECK(errors.logits <= kLogitTolerance);
  }
  SECTION("AlbertModel without a prefix: reference attention; logits against the projected embeddings") {
    auto config = albert_config;
    config["architectures"] = {"AlbertModel"};
    Tensors weights;
    for (const auto& [name, t] : albert_weights)
      if (name.rfind("albert.", 0) == 0) weights.emplace_back(name.substr(7), t);
    weights.emplace_back("pooler.weight", torch::zeros({32, 32}));
    weights.emplace_back("pooler.bias", torch::zeros({32}));
    write_variant(dir, config, weights);
    auto model = load_model(dir.str());
    CHECK_FALSE(model->config.lm_head.transform);
    CHECK_THAT(model->config.name, Contains("no MLM head") && Contains("embedding projection"));
    RunRequest request;
    request.ids = albert_expected.ids;
    request.token_types = albert_expected.token_types;
    auto trace = run(*model, request);
    REQUIRE(trace->encoder.layers.size() == 3);
    for (size_t l = 0; l < 3; ++l)
      CHECK(headlab::test::max_abs_diff(value_weights(trace->encoder.layers[l].self), albert_expected.attentions[l]) <= kAttentionTolerance);
    torch::NoGradGuard no_grad;
    const auto& m = *model->module;
    auto projected = torch::matmul(m.tokens->weight, m.embed_project->weight.t());  // [V, D]
    CHECK(headlab::test::max_abs_diff(trace->logits, torch::matmul(trace->encoder.hidden.back(), projected.t())) <= 1e-4);
  }
  SECTION("ElectraModel without a prefix: the generator's encoder, reference attention") {
    auto config = read_json(fixture("electra/config.json"));
    config["architectures"] = {"ElectraModel"};
    Tensors weights;
    for (const auto& [name, t] : read_all(fixture("electra/model.safetensors")))
      if (name.rfind("electra.", 0) == 0) weights.emplace_back(name.substr(8), t);
    write_variant(dir, config, weights);
    auto model = load_model(dir.str());
    CHECK(model->config.embedding_size == 16);
    CHECK_THAT(model->config.name, Contains("no MLM head"));
    const Expected expected = read_expected(fixture("electra"));
    RunRequest request;
    request.ids = expected.ids;
    request.token_types = expected.token_types;
    auto trace = run(*model, request);
    for (size_t l = 0; l < expected.attentions.size(); ++l)
      CHECK(headlab::test::max_abs_diff(value_weights(trace->encoder.layers[l].self), expected.attentions[l]) <= kAttentionTolerance);
  }
  SECTION("the comparison can fail: ALBERT without its token types differs from the reference") {
    RunRequest request;
    request.ids = albert_expected.ids;  // token types all 0 instead of the reference's 0…0 1…1
    auto trace = run(*load_model(fixture("albert")), request);
    double worst = 0;
    for (size_t l = 0; l < 3; ++l)
      worst = std::max(worst, headlab::test::max_abs_diff(value_weights(trace->encoder.layers[l].self), albert_expected.attentions[l]));
    CHECK(worst > 1e-3);
  }
}

TEST_CASE("hf import: ELECTRA and ALBERT options HeadLab does not run are refused by name", "[hf_import][encoders]") {
  TempDir dir("hf-encoder-errors");
  const auto albert_config = read_json(fixture("albert/config.json"));
  const Tensors albert_weights = read_all(fixture("albert/model.safetensors"));
  const auto electra_config = read_json(fixture("electra/config.json"));
  const Tensors electra_weights = read_all(fixture("electra/model.safetensors"));
  auto albert_error = [&](const char* key, const nlohmann::json& value) {
    auto config = albert_config;
    config[key] = value;
    write_variant(dir, config, albert_weights);
    return load_error(dir.str());
  };
  auto electra_error = [&](const char* key, const nlohmann::json& value) {
    auto config = electra_config;
    config[key] = value;
    write_variant(dir, config, electra_weights);
    return load_error(dir.str());
  };
  CHECK_THAT(albert_error("num_hidden_groups", 3),
             Contains("config.json") && Contains("num_hidden_groups 3 is not supported"));
  CHECK_THAT(albert_error("inner_group_num", 2), Contains("inner_group_num 2 is not supported"));
  CHECK_THAT(albert_error("position_embedding_type", "relative_key"),
             Contains("position_embedding_type 'relative_key' is not supported"));
  CHECK_THAT(albert_error("hidden_act", "quick_gelu"), Contains("hidden_act 'quick_gelu' is not supported"));
  CHECK_THAT(electra_error("hidden_act", "relu"),
             Contains("hidden_act 'relu' is not supported for ElectraForMaskedLM") && Contains("generator head"));
  CHECK_THAT(electra_error("position_embedding_type", "relative_key_query"),
             Contains("position_embedding_type 'relative_key_query'"));
  CHECK_THAT(electra_error("is_decoder", true), Contains("is_decoder true"));
  // A second layer group's weights in an ALBERT file whose config says one group.
  Tensors extra = albert_weights;
  extra.emplace_back("albert.encoder.albert_layer_groups.1.albert_layers.0.ffn.bias", torch::zeros({64}));
  write_variant(dir, albert_config, extra);
  CHECK_THAT(load_error(dir.str()), Contains("unexpected tensor 'albert.encoder.albert_layer_groups.1"));
  // embedding_size that disagrees with the file's tables names the tensor and the shapes.
  auto wrong = electra_config;
  wrong["embedding_size"] = 8;
  write_variant(dir, wrong, electra_weights);
  CHECK_THAT(load_error(dir.str()), Contains("'electra.embeddings.word_embeddings.weight' has shape [100, 16], expected [100, 8]"));
}

// ---- Gemma 2 / Gemma 3 ------------------------------------------------------------------------

TEST_CASE("hf import: Gemma 2 and Gemma 3 map onto local layers, soft-caps and offset norms", "[hf_import][gemma]") {
  SECTION("Gemma 2: even layers slide, both soft-caps, query_pre_attn_scalar, (1 + w) norms, √hidden") {
    const auto c = load_model(fixture("gemma2"))->config;
    CHECK(c.family == "gemma2");
    const auto& a = c.decoder->attention;
    CHECK(c.decoder->local->layers == std::vector<int>{0, 2});
    CHECK(c.decoder->local->pattern.window == 3);  // sliding_window 4: the query and 3 before it
    CHECK_FALSE(c.decoder->local->rope_theta);     // one RoPE base for every layer
    CHECK(a.pattern.window == 0);
    CHECK(a.logit_softcap == 3.0f);
    CHECK(c.lm_head.softcap == 10.0f);
    CHECK(*a.scale == Approx(0.25));  // 16^-½, not head_dim (12)^-½
    CHECK((a.heads == 4 && a.kv_heads == 2 && a.key_size == 12));
    CHECK_FALSE(a.qk_norm);
    CHECK(c.norm_weight_offset == 1.0f);
    CHECK(c.sublayer_output_norm);
    CHECK(c.embedding_scale == static_cast<float>(std::sqrt(32.0)));
    CHECK((c.ffn.kind == FfnKind::SwiGLU && c.ffn.activation == Activation::GeluTanh));
    CHECK(c.lm_head.tied);
    CHECK_THAT(c.summary(), Contains("local layers 0, 2 (window 3)") && Contains("softcap=3") && Contains("FFN GLU/gelu_tanh"));
  }
  SECTION("Gemma 3: one global layer in six, local RoPE base, q/k norms, no soft-caps, BF16 √hidden") {
    const auto c = load_model(fixture("gemma3"))->config;
    CHECK(c.family == "gemma3");
    CHECK(c.decoder->local->layers == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(c.decoder->local->pattern.window == 3);
    CHECK(*c.decoder->local->rope_theta == 10000.0f);
    CHECK(c.rope_theta == 1e6f);
    const auto& a = c.decoder->attention;
    CHECK((a.qk_norm && a.qk_norm_weight_offset == 1.0f && a.qk_norm_eps == Approx(1e-6)));
    CHECK(a.logit_softcap == 0.0f);
    CHECK(c.lm_head.softcap == 0.0f);
    CHECK((a.kv_heads == 1 && a.key_size == 16));
    CHECK(c.embedding_scale == 6.9375f);  // sqrt(48) = 6.928… rounded to BF16, as the BF16 model computes it
  }
}

// Gemma's layer pattern and RoPE bases as transformers 5 (and late 4.x) write them — layer_types and
// rope_parameters per layer type — give the same numbers; contradictions and unsupported options are
// refused with the key named.
TEST_CASE("hf import: Gemma config spellings are read or refused", "[hf_import][gemma]") {
  TempDir dir("hf-gemma");
  const auto gemma2 = read_json(fixture("gemma2/config.json"));
  const auto gemma3 = read_json(fixture("gemma3/config.json"));
  const Tensors gemma2_weights = read_all(fixture("gemma2/model.safetensors"));
  const Tensors gemma3_weights = read_all(fixture("gemma3/model.safetensors"));
  auto matches = [&](const nlohmann::json& config, const Tensors& weights, const char* reference) {
    write_variant(dir, config, weights, reference == std::string("gemma3") ? DType::BF16 : DType::F32);
    const Errors errors = compare(*load_model(dir.str()), read_expected(fixture(reference)));
    return errors.attention <= kAttentionTolerance && errors.logits <= kLogitTolerance;
  };

  SECTION("transformers 5: layer_types and rope_parameters") {
    auto v5 = gemma2;
    v5.erase("rope_theta");
    v5["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention"};
    v5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
    CHECK(matches(v5, gemma2_weights, "gemma2"));

    auto v5_3 = gemma3;
    for (const char* key : {"rope_theta", "rope_local_base_freq", "rope_scaling", "sliding_window_pattern"}) v5_3.erase(key);
    v5_3["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention",
                           "sliding_attention", "sliding_attention", "full_attention"};
    v5_3["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                               {"full_attention", {{"rope_type", "default"}, {"rope_theta", 1000000.0}}}};
    CHECK(matches(v5_3, gemma3_weights, "gemma3"));
    // transformers 5 also writes its private pattern default (6) whatever layer_types say; as in
    // transformers, layer_types decide and the pattern keys beside them are not read.
    v5_3["_sliding_window_pattern"] = 6;
    CHECK(matches(v5_3, gemma3_weights, "gemma3"));
    auto own_types = v5_3;
    own_types["layer_types"] = {"sliding_attention", "full_attention", "sliding_attention",
                                "sliding_attention", "sliding_attention", "full_attention"};
    own_types["sliding_window_pattern"] = 6;
    write_variant(dir, own_types, gemma3_weights, DType::BF16);
    CHECK(load_model(dir.str())->config.decoder->local->layers == std::vector<int>{0, 2, 3, 4});
    CHECK_FALSE(matches(own_types, gemma3_weights, "gemma3"));  // layer 1 is global now: other maps
  }
  SECTION("the comparison can fail: wrong layer types, local RoPE base, soft-cap or window") {
    auto all_global = gemma2;
    all_global["layer_types"] = {"full_attention", "full_attention", "full_attention"};
    CHECK_FALSE(matches(all_global, gemma2_weights, "gemma2"));
    auto no_cap = gemma2;
    no_cap["attn_logit_softcapping"] = nullptr;
    CHECK_FALSE(matches(no_cap, gemma2_weights, "gemma2"));
    auto no_final_cap = gemma2;
    no_final_cap["final_logit_softcapping"] = nullptr;
    CHECK_FALSE(matches(no_final_cap, gemma2_weights, "gemma2"));
    auto local_theta = gemma3;
    local_theta["rope_local_base_freq"] = 1000000.0;
    CHECK_FALSE(matches(local_theta, gemma3_weights, "gemma3"));
    auto window = gemma3;
    window["sliding_window"] = 5;
    CHECK_FALSE(matches(window, gemma3_weights, "gemma3"));
    auto scalar = gemma3;
    scalar.erase("query_pre_attn_scalar");  // the default 256, not head_dim
    CHECK_FALSE(matches(scalar, gemma3_weights, "gemma3"));
  }
  SECTION("Gemma 2 defaults: soft-caps 50 and 30 when the keys are absent") {
    auto defaults = gemma2;
    defaults.erase("attn_logit_softcapping");
    defaults.erase("final_logit_softcapping");
    write_variant(dir, defaults, gemma2_weights);
    const auto c = load_model(dir.str())->config;
    CHECK(c.decoder->attention.logit_softcap == 50.0f);
    CHECK(c.lm_head.softcap == 30.0f);
  }
  SECTION("refused, naming the key") {
    auto refuse = [&](const nlohmann::json& config, const Tensors& weights) {
      write_variant(dir, config, weights);
      return load_error(dir.str());
    };
    auto multimodal = gemma3;
    multimodal["architectures"] = {"Gemma3ForConditionalGeneration"};
    multimodal["model_type"] = "gemma3";
    CHECK_THAT(refuse(multimodal, gemma3_weights),
               Contains("Gemma3ForConditionalGeneration") && Contains("not supported") && Contains("Gemma3ForCausalLM") &&
                   Contains("config.json"));
    // Scaled RoPE is Gemma 3's global layers' only: on Gemma 2, or on Gemma 3's sliding layers, refused.
    auto linear = gemma2;
    linear["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
    CHECK_THAT(refuse(linear, gemma2_weights), Contains("rope_scaling type \"linear\" is not supported here"));
    auto local_scaled = gemma3;
    local_scaled["rope_parameters"] = {{"sliding_attention", {{"rope_type", "linear"}, {"factor", 2.0}}}};
    CHECK_THAT(refuse(local_scaled, gemma3_weights),
               Contains("rope_parameters.sliding_attention type \"linear\" is not supported here"));
    auto theta = gemma3;
    theta["rope_parameters"] = {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 500.0}}}};
    CHECK_THAT(refuse(theta, gemma3_weights), Contains("rope_local_base_freq 10000.0 and 'rope_parameters.sliding_attention.rope_theta' 500.0 disagree"));
    auto bidirectional = gemma3;
    bidirectional["use_bidirectional_attention"] = true;
    CHECK_THAT(refuse(bidirectional, gemma3_weights), Contains("use_bidirectional_attention"));
    auto no_window = gemma2;
    no_window["sliding_window"] = nullptr;
    CHECK_THAT(refuse(no_window, gemma2_weights), Contains("'sliding_window' is null"));
    auto activation = gemma2;
    activation["hidden_activation"] = "relu";
    CHECK_THAT(refuse(activation, gemma2_weights), Contains("hidden_activation 'relu'"));
    auto type = gemma2;
    type["layer_types"] = {"sliding_attention", "chunked_attention", "sliding_attention"};
    CHECK_THAT(refuse(type, gemma2_weights), Contains("layer_types[1] \"chunked_attention\" is not supported"));
  }
}

TEST_CASE("hf import: LRP explains each family's own logit and conserves it", "[hf_import][lrp]") {
  // analysis/lrp.cpp runs a forward pass of its own (token embeddings as a leaf, constants
  // detached); the logit it explains must be the one core::run computes, in every family.
  for (const char* folder : {"bert", "roberta", "distilbert", "gpt2", "llama", "qwen2", "mistral", "qwen3", "electra",
                             "albert", "gemma2", "gemma3", "bart", "mbart", "marian", "t5", "t5-v1_1", "llama31",
                             "qwen2-yarn", "phi3", "smollm3", "gemma", "opt", "olmo", "olmo-clip", "pythia", "gptj",
                             "bloom", "mixtral", "gpt-oss", "gpt-oss-mxfp4", "phi", "falcon", "falcon-40b",
                             "falcon-sequential", "olmo2", "modernbert", "deepseek-v2-lite", "deepseek-v2", "deepseek-v3",
                             "deberta-v3", "deberta-v2"}) {
    DYNAMIC_SECTION(folder) {
      auto model = load_model(fixture(folder));
      const Expected expected = read_expected(fixture(folder));
      const auto lrp = headlab::analysis::lrp_relevance(*model, expected.ids, {}, {}, expected.decoder_ids);
      RunRequest request;
      request.ids = expected.ids;
      request.decoder_ids = expected.decoder_ids;
      const auto trace = run(*model, request);
      const double logit = trace->logits[lrp.position][lrp.token].item<double>();
      CHECK(lrp.target == Approx(logit).epsilon(1e-4).margin(1e-5));
      CHECK(lrp.relative_residual() < 1e-5);  // float32; measured ≤ 1e-6

      // In float64 the family's rules conserve f up to rounding, and relevance sits on the head
      // that made it: a head whose gate is closed carries none, the heads beside it do.
      model->module->to(torch::kFloat64);
      const auto main = model->config.decoder ? headlab::core::Stack::Decoder : headlab::core::Stack::Encoder;
      const auto& stack = main == headlab::core::Stack::Decoder ? *model->config.decoder : *model->config.encoder;
      headlab::core::ModelControls closed;
      closed.at(main, 0).gates.assign(size_t(stack.attention.output_heads()), 1.0f);
      closed.at(main, 0).gates[1] = 0.0f;
      const auto r64 = headlab::analysis::lrp_relevance(*model, expected.ids, {}, closed, expected.decoder_ids);
      CHECK(r64.relative_residual() < 1e-9);
      headlab::test::check_closed_head_carries_none(r64, main, 1e-9);

      // Every head's and input position's share, value by value against the forward-mode reference
      // (tests/lrp_reference.h): the family's norms, FFN, embeddings and LM head as the rules see them.
      const auto r = headlab::analysis::lrp_relevance(*model, expected.ids, {}, {}, expected.decoder_ids);
      const auto ref = headlab::test::lrp_reference(*model, expected.ids, expected.decoder_ids, {}, r.position, r.token);
      headlab::test::check_against_reference(r, ref, 1e-9);
    }
  }
}
