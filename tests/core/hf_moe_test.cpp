#include "test_common.h"

#include "hf_fixtures.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

// Mixtral and gpt-oss against their float64 references (tests/data/hf/fixtures_moe.py): the
// mixture-of-experts FFN, learned attention sinks and gpt-oss's alternating sliding layers.
using namespace headlab::core;
using namespace headlab::test::hf;
using Catch::Matchers::Contains;
using headlab::test::max_abs_diff;
using headlab::test::TempDir;

TEST_CASE("hf import: gpt-oss: learned sinks, alternating sliding layers, YaRN, a clamped-GLU mixture of experts",
          "[hf_import][moe]") {
  auto model = load_model(fixture("gpt-oss"));
  const ModelConfig& c = model->config;
  CHECK(c.family == "gpt_oss");
  CHECK(c.decoder->attention.sinks);
  CHECK(c.decoder->attention.qkv_bias);
  REQUIRE(c.decoder->local);
  CHECK(c.decoder->local->layers == std::vector<int>{0, 2});
  CHECK(c.decoder->local->pattern.window == 3);  // sliding_window 4 keys, the query's own counted
  CHECK(c.rope_scaling.kind == RopeScalingKind::Yarn);
  CHECK_FALSE(c.rope_scaling.truncate);
  CHECK(c.ffn.kind == FfnKind::ClampedSwiGLU);
  CHECK(c.ffn.limit == 1.5f);
  REQUIRE(c.ffn.moe);
  CHECK(c.ffn.moe->experts == 4);
  CHECK(c.ffn.moe->top_k == 2);
  CHECK(c.ffn.moe->router_bias);
  CHECK_THAT(c.summary(), Contains("4 experts, top 2") && Contains("sinks"));
  int64_t stored = 0;  // sinks, router biases and the experts' biases counted as the module holds them
  for (const auto& p : model->module->parameters()) stored += p.numel();
  CHECK(c.parameter_count() == stored);

  // The maps as transformers returns them (rows summing to 1 − the sink's share), the share itself and
  // each token's experts, layer by layer.
  const Expected expected = read_expected(fixture("gpt-oss"));
  RunRequest request;
  request.ids = expected.ids;
  const auto trace = run(*model, request);
  for (int l = 0; l < 3; ++l) {
    const auto& layer = trace->decoder.layers[size_t(l)];
    const std::string n = "." + std::to_string(l);
    REQUIRE(layer.self.sink_share.defined());
    CHECK(max_abs_diff(layer.self.sink_share, expected_tensor("gpt-oss", "sink_share" + n)) <= kAttentionTolerance);
    CHECK(max_abs_diff(layer.self.weights.sum(-1) + layer.self.sink_share, torch::ones_like(layer.self.sink_share)) < 1e-6);
    REQUIRE(layer.experts.defined());
    CHECK(torch::equal(layer.experts.to(torch::kFloat32), expected_tensor("gpt-oss", "experts" + n)));
  }
  const Errors errors = compare(*model, expected);
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);

  // Each detail matters: the clamp, the sliding layers, the number of experts, YaRN.
  const FixtureVariants v("gpt-oss");
  CHECK(v.errors_with([](auto& j) { j["swiglu_limit"] = 7.0; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["layer_types"] = {"full_attention", "full_attention", "full_attention"}; })
            .attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["num_experts_per_tok"] = 1; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["rope_scaling"]["factor"] = 16.0; }).attention > 1e-3);
  // …and the sinks: with sink logits of −10⁹ the softmax is the plain one.
  Tensors no_sinks = v.weights;
  for (auto& [name, t] : no_sinks)
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".sinks") == 0) t = torch::full_like(t, -1e9);
  write_variant(v.dir, read_json(fixture("gpt-oss/config.json")), no_sinks);
  CHECK(compare(*load_model(v.dir.str()), expected).attention > 1e-3);

  SECTION("refused by name: an unknown layer type, more experts per token than there are") {
    CHECK_THAT(v.refused([](auto& j) { j["layer_types"][1] = "chunked_attention"; }),
               Contains("layer_types[1] \"chunked_attention\" is not supported"));
    CHECK_THAT(v.refused([](auto& j) { j["num_experts_per_tok"] = 5; }), Contains("must be in 1..num_local_experts (4)"));
  }
}

TEST_CASE("hf import: headlab run writes gpt-oss's sink shares beside maps whose rows sum to 1 minus them",
          "[hf_import][moe][cli]") {
  const Expected expected = read_expected(fixture("gpt-oss"));
  std::string ids;
  for (size_t i = 0; i < expected.ids.size(); ++i) ids += (i ? "," : "") + std::to_string(expected.ids[i]);
  TempDir dir("hf-sinks-cli");
  const std::string dump = dir.str("dump.safetensors");
  std::string output;
  REQUIRE(headlab::test::run_command(std::string(HEADLAB_BINARY) + " run --model " + fixture("gpt-oss") + " --ids " + ids +
                                         " --out " + dump,
                                     output) == 0);
  auto file = SafetensorsFile::open(dump);
  const int64_t T = int64_t(expected.ids.size());
  REQUIRE(expected.attentions.size() == 3);
  for (int l = 0; l < 3; ++l) {
    INFO("layer " << l);
    const std::string n = "." + std::to_string(l);
    const auto maps = load_tensor(file, "attentions" + n);  // [h, T, T]
    const auto share = load_tensor(file, "sink_share" + n);  // [h, T]
    const int64_t h = expected.attentions[size_t(l)].size(0);
    CHECK(maps.sizes() == torch::IntArrayRef({h, T, T}));
    CHECK(share.sizes() == torch::IntArrayRef({h, T}));
    CHECK(max_abs_diff(maps.sum(-1) + share, torch::ones({h, T})) < 1e-6);
    CHECK(share.max().item<float>() > 0.5);  // some rows park most of their attention on the sink
    CHECK(max_abs_diff(share, expected_tensor("gpt-oss", "sink_share" + n)) <= kAttentionTolerance);
    CHECK(max_abs_diff(maps, expected.attentions[size_t(l)]) <= kAttentionTolerance);
  }
  CHECK_FALSE(file.contains("sink_share.3"));
}

TEST_CASE("hf import: gpt-oss as the hub ships it: MXFP4 experts dequantised as they are read", "[hf_import][moe]") {
  auto model = load_model(fixture("gpt-oss-mxfp4"));
  const Expected expected = read_expected(fixture("gpt-oss-mxfp4"));
  const Errors errors = compare(*model, expected);
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);
  CHECK(model->weights_dtype == "F32");  // the float tensors' type; the experts are float32 once read

  // One value by hand from the stored bytes: gate.weight[i][d] of expert e is gate_up_proj[e][d][2i]
  // = the dequantised blocks' row 2i, column d: block d / 32, byte (d % 32) / 2, the low nibble for
  // an even d, times 2^(scale − 127).
  const FixtureVariants v("gpt-oss-mxfp4");
  const torch::Tensor blocks = get(v.weights, "model.layers.1.mlp.experts.gate_up_proj_blocks");  // [E, 2I, G, 16]
  const torch::Tensor scales = get(v.weights, "model.layers.1.mlp.experts.gate_up_proj_scales");  // [E, 2I, G]
  const float e2m1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  const auto params = model->module->named_parameters();
  for (const auto& [e, i, d] : {std::tuple{2, 3, 17}, std::tuple{0, 0, 0}, std::tuple{3, 31, 30}}) {
    const int byte = blocks[e][2 * i][d / 32][(d % 32) / 2].item<int>();
    const int code = d % 2 == 0 ? byte & 0x0F : byte >> 4;
    const float want = std::ldexp(e2m1[code], scales[e][2 * i][d / 32].item<int>() - 127);
    const torch::Tensor gate = params["decoder.1.ffn.experts." + std::to_string(e) + ".gate.weight"];
    CHECK(gate[i][d].item<float>() == want);
  }

  SECTION("bad MXFP4 tensors are refused, naming the tensor") {
    auto config = read_json(fixture("gpt-oss-mxfp4/config.json"));
    auto edited = [&](const std::string& name, const std::function<torch::Tensor(const torch::Tensor&)>& edit) {
      Tensors out;
      for (const auto& [n, t] : v.weights)
        if (n != name)
          out.emplace_back(n, t);
        else if (auto changed = edit(t); changed.defined())
          out.emplace_back(n, changed);
      write_variant(v.dir, config, out);
      return load_error(v.dir.str());
    };
    const std::string scales_name = "model.layers.0.mlp.experts.down_proj_scales";
    CHECK_THAT(edited(scales_name, [](const torch::Tensor&) { return torch::Tensor(); }),
               Contains("'" + scales_name + "' is missing") && Contains("MXFP4 scales"));
    CHECK_THAT(edited(scales_name, [](const torch::Tensor& t) { return t.to(torch::kFloat32); }),
               Contains("'" + scales_name + "' has dtype F32, expected U8"));
    CHECK_THAT(edited("model.layers.0.mlp.experts.down_proj_blocks",
                      [](const torch::Tensor& t) { return t.narrow(1, 0, 16).contiguous(); }),
               Contains("down_proj_blocks' has shape [4, 16, 1, 16], expected [4, 32, 1, 16]"));
    // An exponent that overflows float32 (2^128 · 6) is caught, not silently infinite.
    CHECK_THAT(edited(scales_name, [](const torch::Tensor& t) { return torch::full_like(t, 255); }),
               Contains(scales_name.substr(0, scales_name.size() - 7) + "_blocks"));
  }
}

TEST_CASE("hf import: Mixtral: softmax routing to the top 2 of 4 SwiGLU experts, renormalised", "[hf_import][moe]") {
  auto model = load_model(fixture("mixtral"));
  const ModelConfig& c = model->config;
  CHECK(c.family == "mixtral");
  CHECK(c.ffn.kind == FfnKind::SwiGLU);
  REQUIRE(c.ffn.moe);
  CHECK(c.ffn.moe->experts == 4);
  CHECK(c.ffn.moe->top_k == 2);
  CHECK(c.ffn.moe->normalize);
  CHECK_FALSE(c.ffn.moe->router_bias);
  CHECK(c.decoder->attention.pattern.window == 0);  // sliding_window null
  int64_t stored = 0;  // the config's count is what the module holds: experts, router and all
  for (const auto& p : model->module->parameters()) stored += p.numel();
  CHECK(c.parameter_count() == stored);

  const Expected expected = read_expected(fixture("mixtral"));
  RunRequest request;
  request.ids = expected.ids;
  const auto trace = run(*model, request);
  for (int l = 0; l < 2; ++l)
    CHECK(torch::equal(trace->decoder.layers[size_t(l)].experts.to(torch::kFloat32),
                       expected_tensor("mixtral", "experts." + std::to_string(l))));
  CHECK_FALSE(trace->decoder.layers[0].self.sink_share.defined());  // no sinks, no share

  const FixtureVariants v("mixtral");
  CHECK(v.errors_with([](auto& j) { j["num_experts_per_tok"] = 1; }).logits > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["sliding_window"] = 4; }).attention > 1e-3);
  CHECK_THAT(v.refused([](auto& j) { j["num_local_experts"] = 3; }),  // the file holds a fourth expert
             Contains("block_sparse_moe.gate.weight") && Contains("[4, 32]"));
}
