// Conversion to grouped-query attention (Ainslie et al. 2023): each group's key and value heads
// mean-pooled. Checked against the definition written out head by head, the identity (as many groups
// as kv heads), exactness when a group's heads are already equal, and the command line.
#include "test_common.h"

#include "core/config.h"
#include "core/convert.h"
#include "core/memory_budget.h"
#include "core/model.h"
#include "core/run.h"

#include <nlohmann/json.hpp>

#include <fstream>

using namespace headlab;

namespace {

core::ModelConfig shipped(const std::string& name) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  return core::model_config_from_json(nlohmann::json::parse(in));
}

torch::Tensor logits_of(core::Model& model) {
  core::RunRequest r;
  r.ids = {3, 17, 5, 99, 42, 7, 8};
  r.capture = core::kCaptureNone;
  return core::run(model, r)->logits;
}

}  // namespace

TEST_CASE("GQA conversion mean-pools each group's key and value heads", "[convert]") {
  auto mha = core::make_random_model(shipped("mha"), 3);  // 4 heads of 16
  auto gqa = core::convert_to_gqa(*mha, 2);
  CHECK(gqa->config.encoder->attention.kv_heads == 2);
  CHECK(gqa->config.encoder->attention.heads == 4);
  const auto before = mha->module->named_parameters();
  const auto after = gqa->module->named_parameters();
  for (const char* name : {"encoder.0.attn.k.weight", "encoder.1.attn.v.weight", "encoder.0.attn.k.bias"}) {
    INFO(name);
    const auto w = before[name];
    const auto p = after[name];
    REQUIRE(p.size(0) == 2 * 16);
    // kv head g, row j: (W[(2g)·16 + j] + W[(2g + 1)·16 + j]) / 2.
    for (int g = 0; g < 2; ++g)
      for (int j = 0; j < 16; ++j)
        CHECK(test::max_abs_diff(p[g * 16 + j], (w[(2 * g) * 16 + j] + w[(2 * g + 1) * 16 + j]) / 2) <= 1e-7);
  }
  // Everything else is copied.
  CHECK(torch::equal(before["encoder.0.attn.q.weight"], after["encoder.0.attn.q.weight"]));
  CHECK(torch::equal(before["tokens.weight"], after["tokens.weight"]));
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*gqa)) > 1e-4);  // pooling changes the model
}

TEST_CASE("GQA conversion is exact where nothing is pooled or the pooled heads are equal", "[convert]") {
  auto mha = core::make_random_model(shipped("mha"), 4);
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*core::convert_to_gqa(*mha, 4))) <= 1e-6);  // groups = kv heads

  // Give heads 2i and 2i+1 the same keys and values: pooling them loses nothing.
  {
    torch::NoGradGuard no_grad;
    for (auto& item : mha->module->named_parameters()) {
      const std::string& name = item.key();
      if (name.find(".attn.k.") == std::string::npos && name.find(".attn.v.") == std::string::npos) continue;
      auto& w = item.value();
      for (int g = 0; g < 2; ++g) w.narrow(0, (2 * g + 1) * 16, 16).copy_(w.narrow(0, 2 * g * 16, 16));
    }
  }
  CHECK(test::max_abs_diff(logits_of(*mha), logits_of(*core::convert_to_gqa(*mha, 2))) <= 1e-5);
  auto mqa = core::convert_to_gqa(*mha, 1);
  CHECK(mqa->config.encoder->attention.kv_heads == 1);
  CHECK(logits_of(*mqa).sizes() == logits_of(*mha).sizes());

  CHECK_THROWS_WITH(core::convert_to_gqa(*mha, 3), Catch::Contains("must divide the 4"));
  auto talking = core::make_random_model(shipped("talking-heads"), 1);
  CHECK_THROWS_WITH(core::convert_to_gqa(*talking, 1), Catch::Contains("talking heads"));
}

TEST_CASE("headlab convert writes a GQA folder and reports the cache and the quality change", "[convert][cli]") {
  test::TempDir dir("convert_cli");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/qwen2";
  std::string out;
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + model + " --to mqa --out " +
                                dir.str("mqa"),
                            out) == 0);
  INFO(out);
  const auto original = core::load_model(model);
  const auto converted = core::load_model(dir.str("mqa"));
  CHECK(converted->config.decoder->attention.kv_heads == 1);
  CHECK(out.find("KV cache: " + std::to_string(core::kv_cache_bytes_per_token(original->config)) + " → " +
                 std::to_string(core::kv_cache_bytes_per_token(converted->config))) != std::string::npos);
  CHECK(core::kv_cache_bytes_per_token(converted->config) * original->config.decoder->attention.kv_heads ==
        core::kv_cache_bytes_per_token(original->config));

  // With a tokenizer and text: the loss before and after.
  {
    std::ofstream text(dir.str("text.txt"));
    for (int i = 0; i < 60; ++i)
      text << "The cat sat on the mat because it was tired and the dog was not. "
              "A man walked into the room and sat down by the fire.\n";
  }
  const std::string shipped_model = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  REQUIRE(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + shipped_model + " --to gqa --groups 2 --out " +
                                dir.str("gqa") + " --data " + dir.str("text.txt"),
                            out) == 0);
  CHECK(out.find("loss ") != std::string::npos);
  CHECK(out.find("top-1 ") != std::string::npos);
  CHECK(core::load_model(dir.str("gqa"))->config.encoder->attention.kv_heads == 2);
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " convert --model " + shipped_model + " --to gqa --groups 3 --out " +
                              dir.str("bad"),
                          out) == 2);
  CHECK(out.find("must divide") != std::string::npos);
}
