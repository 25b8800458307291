// Every RoPE family's fixture rewritten as transformers 5 writes its config — rope_theta, rope_scaling
// and partial_rotary_factor inside one rope_parameters object — runs as its 4.x spelling does: the
// same RoPE settings read, the maps and logits still within the reference's tolerance, and
// rope_parameters is what sets them (another θ there moves the maps).
#include "test_common.h"

#include "hf_fixtures.h"

#include "core/model/model.h"

#include <nlohmann/json.hpp>

using namespace headlab::core;
using namespace headlab::test::hf;

TEST_CASE("hf import: each RoPE family's transformers 5 spelling (rope_parameters) runs as its 4.x one",
          "[hf_import][rope]") {
  // OLMo (with and without clip_qkv), OLMo 2, Phi-2 and Phi-3 (partial rotary), Falcon, SmolLM3 (NoPE
  // layers), gpt-oss (YaRN, truncate false), Mixtral, Gemma, DeepSeek-V2-Lite and V3 (YaRN with
  // mscale), Llama plain and with each scaled rope type among the fixtures (llama3, linear, dynamic),
  // and Mistral.
  for (const char* folder : {"olmo", "olmo-clip", "olmo2", "phi", "phi3", "falcon", "smollm3", "gpt-oss", "mixtral", "gemma",
                             "deepseek-v2-lite", "deepseek-v3", "llama", "llama31", "llama-linear", "llama-dynamic",
                             "mistral"}) {
    DYNAMIC_SECTION(folder) {
      const FixtureVariants v(folder);
      const ModelConfig original = load_model(fixture(folder))->config;
      REQUIRE_FALSE(read_json(fixture(folder) + "/config.json").contains("rope_parameters"));  // a 4.x spelling
      const Errors errors = v.errors_with(as_transformers5_rope);
      CHECK(errors.attention <= kAttentionTolerance);
      CHECK(errors.logits <= kLogitTolerance);
      const ModelConfig read = load_model(v.dir.str())->config;
      CHECK(read.rope_theta == original.rope_theta);
      CHECK(read.rope_scaling == original.rope_scaling);
      CHECK(read.rope_dim == original.rope_dim);
      CHECK(read.decoder->nope_layers == original.decoder->nope_layers);
      // The θ in rope_parameters is the one the model runs with.
      CHECK(v.errors_with([](nlohmann::json& j) {
               as_transformers5_rope(j);
               j["rope_parameters"]["rope_theta"] = 10 * j["rope_parameters"]["rope_theta"].get<double>();
             }).attention > 1e-3);
    }
  }
}

TEST_CASE("hf import: Phi's partial_rotary_factor 1 rotates the whole head in either spelling", "[hf_import][rope]") {
  // Phi's own default is 0.5; a factor of 1 given in rope_parameters must not read as "not given".
  const FixtureVariants v("phi");
  v.write([](nlohmann::json& j) { j["partial_rotary_factor"] = 1.0; });
  const ModelConfig v4 = load_model(v.dir.str())->config;
  CHECK(v4.rope_dim == 0);  // the whole head
  v.write([](nlohmann::json& j) {
    j["partial_rotary_factor"] = 1.0;
    as_transformers5_rope(j);
  });
  CHECK(load_model(v.dir.str())->config.rope_dim == 0);
  v.write([](nlohmann::json& j) {
    j.erase("partial_rotary_factor");
    as_transformers5_rope(j);
  });
  // Absent everywhere: Phi's 0.5, which on this fixture's 10-dim heads rotates an odd 5 and is refused.
  CHECK_THROWS_WITH(load_model(v.dir.str()), Catch::Contains("partial_rotary_factor 0.5 rotates 5 of 10"));
}
