// `headlab generate` as a user runs it: the dump's steps against an independent full run of the
// final sequence (core::run), the cache against --no-cache, and the refusals.
#include "test_common.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using headlab::test::run_command;
using headlab::test::TempDir;

TEST_CASE("headlab generate dumps each step's attention row, as a full run of the text computes it", "[cli][generate]") {
  TempDir dir("generate_cli");
  const std::string model = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama";
  const std::string base = std::string(HEADLAB_BINARY) + " generate --model " + model + " --ids 3,14,15,9 --max-new 6";
  std::string out;
  REQUIRE(run_command(base + " --out " + dir.str("cached.st"), out) == 0);
  REQUIRE(run_command(base + " --no-cache --out " + dir.str("full.st"), out) == 0);
  const auto cached = headlab::core::SafetensorsFile::open(dir.str("cached.st"));
  const auto full = headlab::core::SafetensorsFile::open(dir.str("full.st"));
  const auto ids = headlab::core::load_tensor(cached, "generated_ids", torch::kLong);
  REQUIRE(ids.numel() == 6);
  CHECK(torch::equal(ids, headlab::core::load_tensor(full, "generated_ids", torch::kLong)));

  // The printed ids are the dumped ones.
  CHECK(out.find(std::to_string(ids[0].item<int64_t>()) + "," + std::to_string(ids[1].item<int64_t>())) != std::string::npos);

  // One full run of prompt + generated tokens: step s's row is its query at position 3 + s.
  auto m = headlab::core::load_model(model);
  headlab::core::RunRequest request;
  request.ids = {3, 14, 15, 9};
  for (int s = 0; s < 5; ++s) request.ids.push_back(ids[s].item<int64_t>());
  request.capture = headlab::core::kCaptureWeights | headlab::core::kCaptureMixedWeights;
  const auto trace = headlab::core::run(*m, request);
  for (int s = 0; s < 6; ++s) {
    INFO("step " << s);
    const int64_t T = 4 + s;
    for (size_t l = 0; l < trace->decoder.layers.size(); ++l) {
      const std::string name = "step_attentions." + std::to_string(s) + "." + std::to_string(l);
      const auto row = headlab::core::load_tensor(cached, name);
      REQUIRE(row.sizes() == torch::IntArrayRef({m->config.decoder->attention.output_heads(), T}));
      CHECK(headlab::test::max_abs_diff(row, headlab::core::load_tensor(full, name)) <= 1e-5);
      CHECK(headlab::test::max_abs_diff(row.sum(1), torch::ones({row.size(0)})) <= 1e-5);
      if (s < 5) {  // the sixth token's query is not in the run
        const auto& u = headlab::core::value_weights(trace->decoder.layers[l].self);  // [h, T_all, T_all]
        CHECK(headlab::test::max_abs_diff(row, u.select(1, T - 1).narrow(1, 0, T)) <= 1e-5);
      }
    }
    const auto logits = headlab::core::load_tensor(cached, "step_logits." + std::to_string(s));
    CHECK(logits.argmax().item<int64_t>() == ids[s].item<int64_t>());  // greedy
  }

  // info prints what the cache costs a token; an encoder cannot generate; past the positions, a message.
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " info --json --model " + model, out) == 0);
  const auto info = nlohmann::json::parse(out);
  const auto& a = m->config.decoder->attention;
  CHECK(info["kv_cache_bytes_per_token"] ==
        int64_t(m->config.decoder->layers) * a.kv_heads * (a.key_size + a.value_size) * 4);
  CHECK(run_command(std::string(HEADLAB_BINARY) + " generate --model " + HEADLAB_SOURCE_DIR +
                        "/assets/models/default --prompt 'the cat'", out) == 1);
  CHECK(out.find("no decoder") != std::string::npos);
  CHECK(run_command(std::string(HEADLAB_BINARY) + " generate --model " + model + " --ids 3,14 --max-new 100000", out) == 1);
  CHECK(out.find("positions this model takes") != std::string::npos);
}

TEST_CASE("headlab generate stops at the ids generation_config.json names, as transformers' generate", "[cli][generate]") {
  TempDir dir("generate_stop");
  const std::string fixture = std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama";
  const std::string folder = dir.str("llama");
  std::filesystem::create_directories(folder);
  for (const char* f : {"config.json", "model.safetensors"})
    std::filesystem::copy_file(fixture + "/" + f, folder + "/" + f);
  const std::string base = std::string(HEADLAB_BINARY) + " generate --model " + folder + " --ids 3,14,15,9 --max-new 6";
  std::string out;
  REQUIRE(run_command(base + " --out " + dir.str("free.st"), out) == 0);
  auto ids = headlab::core::load_tensor(headlab::core::SafetensorsFile::open(dir.str("free.st")), "generated_ids", torch::kLong);
  REQUIRE(ids.numel() >= 3);  // config.json's eos_token_id (2) not drawn before the third token
  const int64_t third = ids[2].item<int64_t>();
  // A list, as Llama 3.1 Instruct's: the generation ends with the first of them it draws.
  std::ofstream(folder + "/generation_config.json") << "{\"eos_token_id\": [" << third << ", 99]}";
  REQUIRE(run_command(base + " --out " + dir.str("stopped.st"), out) == 0);
  ids = headlab::core::load_tensor(headlab::core::SafetensorsFile::open(dir.str("stopped.st")), "generated_ids", torch::kLong);
  REQUIRE(ids.numel() <= 3);
  CHECK(ids[ids.numel() - 1].item<int64_t>() == third);
  std::ofstream(folder + "/generation_config.json") << "{\"eos_token_id\": \"end\"}";
  CHECK(run_command(base, out) != 0);
  CHECK_THAT(out, Catch::Contains("generation_config.json: eos_token_id must be a token id or a list of them"));
}
