#include "test_common.h"

#include "core/config.h"
#include "core/model/transformer.h"

#include <nlohmann/json.hpp>

using namespace headlab::core;

namespace {

ModelConfig example(const std::string& name) {
  return load_model_config(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
}

std::string error_of(const nlohmann::json& j) {
  try {
    model_config_from_json(j);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config JSON round-trips for every example", "[config]") {
  for (const char* name : {"mha", "mqa", "gqa", "key-size", "talking-heads", "collaborative", "additive", "sliding-window",
                           "dilated", "global", "encoder-decoder", "relative-position", "latent", "disentangled"}) {
    INFO(name);
    const auto config = example(name);
    const auto again = model_config_from_json(to_json(config));
    CHECK(to_json(again) == to_json(config));
  }
  const auto th = example("talking-heads").encoder->attention;
  CHECK(th.logit_heads() == 6);
  CHECK(th.softmax_heads() == 4);
  CHECK(th.output_heads() == 8);
  CHECK(example("gqa").decoder->attention.variant_name() == "GQA(8q/2kv)");
  CHECK(example("mqa").decoder->attention.variant_name() == "MQA(4q/1kv)");
}

TEST_CASE("config errors name the key and the problem", "[config]") {
  auto j = to_json(example("mha"));
  auto bad = j;
  bad["encoder"]["attention"]["kv_heads"] = 3;
  CHECK_THAT(error_of(bad), Catch::Contains("kv_heads (3) must divide heads (4)"));
  bad = j;
  bad["positions"] = "alibi";
  CHECK_THAT(error_of(bad), Catch::Contains("config.positions: unknown value 'alibi'"));
  bad = j;
  bad["encoder"]["attention"]["heads"] = "four";
  CHECK_THAT(error_of(bad), Catch::Contains("config.encoder.attention.heads: wrong type"));
  bad = j;
  bad["format_version"] = 99;
  CHECK_THAT(error_of(bad), Catch::Contains("newer than this HeadLab"));
  bad = j;
  bad["kind"] = "decoder";
  CHECK_THAT(error_of(bad), Catch::Contains("needs a decoder stack"));
  bad = j;
  bad.erase("format");
  bad["architectures"] = {"BertModel"};
  CHECK_THAT(error_of(bad), Catch::Contains("unknown key 'architectures'"));
}

TEST_CASE("nope_layers round-trips and is checked", "[config][positions]") {
  auto j = to_json(example("mha"));
  j["positions"] = "rope";
  j["encoder"]["nope_layers"] = {0};
  const auto config = model_config_from_json(j);
  CHECK(config.encoder->nope_layers == std::vector<int>{0});
  CHECK(to_json(config)["encoder"]["nope_layers"] == nlohmann::json{0});
  CHECK_THAT(config.summary(), Catch::Contains("no RoPE in layer 0"));
  CHECK_FALSE(to_json(example("mha"))["encoder"].contains("nope_layers"));  // absent when empty
  const int layers = config.encoder->layers;
  auto bad = j;
  bad["encoder"]["nope_layers"] = {layers};
  CHECK_THAT(error_of(bad), Catch::Contains("encoder.nope_layers[0]: layer " + std::to_string(layers) + " is not in 0.."));
  bad = j;
  bad["encoder"]["nope_layers"] = {0, 0};
  CHECK_THAT(error_of(bad), Catch::Contains("layer 0 is listed twice"));
  bad = j;
  bad["positions"] = "learned";
  CHECK_THAT(error_of(bad), Catch::Contains("nope_layers: only meaningful with positions 'rope'"));
  bad = j;
  bad["encoder"]["nope_layers"] = "0";
  CHECK_THAT(error_of(bad), Catch::Contains("config.encoder.nope_layers: wrong type"));
}

TEST_CASE("parameter_count matches the module's parameters", "[config]") {
  // The count in `headlab info` comes from the config; check it against the real module.
  for (const char* name : {"mha", "gqa", "key-size", "talking-heads", "collaborative", "additive", "encoder-decoder",
                           "relative-position", "latent", "disentangled"}) {
    INFO(name);
    const auto config = example(name);
    headlab::core::Transformer module(config);
    int64_t n = 0;
    for (const auto& p : module->parameters()) n += p.numel();
    CHECK(config.parameter_count() == n);
  }
}

TEST_CASE("an attention-only model (ffn kind none) has no FFN and no norm before it", "[config]") {
  for (const char* name : {"mha", "gqa"}) {
    INFO(name);
    auto j = to_json(example(name));
    j["ffn"] = {{"kind", "none"}};
    const auto config = model_config_from_json(j);
    CHECK(config.ffn.kind == headlab::core::FfnKind::None);
    CHECK(to_json(config)["ffn"]["kind"] == "none");
    CHECK_THAT(config.summary(), Catch::Contains("FFN none (attention only)"));
    headlab::core::Transformer module(config);
    int64_t n = 0;
    for (const auto& p : module->named_parameters()) {
      n += p.value().numel();
      CHECK(p.key().find("ffn") == std::string::npos);
    }
    CHECK(config.parameter_count() == n);
    // The memory checks' estimate leaves out the FFN's 3·D·F a layer.
    auto with_ffn = config;
    with_ffn.ffn.kind = headlab::core::FfnKind::Mlp;
    CHECK(with_ffn.parameter_estimate() - config.parameter_estimate() ==
          Approx(3.0 * config.hidden_size * config.ffn.inner_size * config.encoder.value_or(*config.decoder).layers));
  }
}
