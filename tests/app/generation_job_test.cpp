// The Generate view's run through the Controller, headless: the steps it publishes are those of
// core::generate on the same prompt and controls, each with the new query's row in every head;
// Stop ends a long run; a model without a decoder gets a message.
#include "test_common.h"

#include "settle.h"

#include "app/document/controller.h"
#include "app/document/controls_edit.h"
#include "core/atomic_file.h"
#include "core/model/generate.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace headlab::app;
using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

using headlab::test::settle;

// A small GQA decoder (random weights) with GPT-2's tokenizer.
std::string causal_folder(const TempDir& dir) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/gqa.json");
  auto config = nlohmann::json::parse(in);
  config["vocab_size"] = 50257;
  config["max_positions"] = 2048;
  config["hidden_size"] = 32;
  config["ffn"]["inner_size"] = 64;
  config["decoder"]["attention"]["key_size"] = 4;
  config["decoder"]["attention"]["value_size"] = 4;
  std::ofstream(dir.str("config.json")) << config.dump();
  std::string out;
  const std::string folder = dir.str("model");
  REQUIRE(run_command(std::string(HEADLAB_BINARY) + " init --config " + dir.str("config.json") + " --out " + folder +
                          " --tokenizer " + HEADLAB_SOURCE_DIR + "/tests/data/tokenizers/gpt2/tokenizer.json",
                      out) == 0);
  return folder;
}

}  // namespace

TEST_CASE("the Generate view's run publishes the steps core::generate makes", "[app][generate]") {
  TempDir dir("generation_job");
  ::setenv("XDG_STATE_HOME", dir.str("state").c_str(), 1);
  const std::string folder = causal_folder(dir);
  Controller c;
  c.start(folder, "");
  settle(c);
  REQUIRE(c.doc().model);
  c.execute(cmd::SetGate{headlab::core::Stack::Decoder, 1, 3, 0.0f});
  settle(c);
  c.execute(cmd::Generate{{"The cat sat on", 6, 0.8f, 40, 0.95f, 3}});
  settle(c);
  const auto g = c.doc().generation;
  REQUIRE(g);
  CHECK(c.doc().generation_job.error.empty());
  REQUIRE(g->steps.size() == 6);
  CHECK(g->stopped == "max_new");

  // The same generation directly from the engine, with the same controls.
  auto model = headlab::core::load_model(folder);
  headlab::core::GenerateRequest request;
  // A native decoder reads the bare ids, as it was trained (the trainer packs no begin token).
  REQUIRE(model->config.family == "native");
  request.prompt = model->tokenizer->encode("The cat sat on", false).ids;
  request.max_new = 6;
  request.sampling = {0.8f, 40, 0.95f, 3};
  request.controls = c.doc().session.controls;
  CHECK(request.controls.get(headlab::core::Stack::Decoder, 1).gate(3) == 0.0f);
  const auto expected = headlab::core::generate(*model, request);
  REQUIRE(g->prompt_tokens.size() == request.prompt.size());
  for (size_t s = 0; s < 6; ++s) {
    INFO("step " << s);
    const auto& step = g->steps[s];
    CHECK(step.id == expected.tokens[s]);
    CHECK(step.token == model->tokenizer->id_to_token(expected.tokens[s]));
    REQUIRE(step.rows.size() == 2);  // layers
    CHECK(step.heads == 8);
    CHECK(step.keys == int(request.prompt.size() + s));
    for (int h = 0; h < step.heads; ++h) {
      double sum = 0;
      for (int k = 0; k < step.keys; ++k) sum += step.rows[1][size_t(h) * step.keys + k];
      CHECK(sum == Approx(1.0).margin(1e-5));
    }
    const auto& last = expected.steps[s].attention[1];
    CHECK(step.rows[1][size_t(2) * step.keys + 0] == Approx(last[2][0].item<float>()).margin(1e-6));
    CHECK(step.top.size() == 5);
    CHECK(step.cache_bytes == expected.steps[s].cache_bytes);
  }
  CHECK(g->bytes_per_token * 4 == g->mha_bytes_per_token);  // GQA with 2 groups of 8 heads: h/g = 4
  // The text knows the gates it was written with: once the Mixer changes, the view marks it.
  CHECK(headlab::app::same_controls(g->controls, c.doc().session.controls));
  c.execute(cmd::SetGate{headlab::core::Stack::Decoder, 1, 3, 1.0f});
  settle(c);
  CHECK(c.doc().generation == g);
  CHECK(!headlab::app::same_controls(g->controls, c.doc().session.controls));
  c.execute(cmd::SetGate{headlab::core::Stack::Decoder, 1, 3, 0.0f});
  settle(c);

  SECTION("Stop ends a long run after the step under way") {
    const auto before = c.doc().generation;
    c.execute(cmd::Generate{{"The", 1000}});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((c.doc().generation == before || (c.doc().generation && c.doc().generation->steps.size() < 3)) &&
           c.doc().generation_job.error.empty() && std::chrono::steady_clock::now() < until) {
      c.poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    c.execute(cmd::StopGeneration{});
    settle(c, 20);
    REQUIRE(c.doc().generation);
    CHECK(c.doc().generation->stopped == "cancelled");
    CHECK(c.doc().generation->steps.size() < 1000);
  }
  SECTION("a session keeps the settings and writes the same tokens again when loaded") {
    c.execute(cmd::SaveSession{dir.str("s.json")});
    const auto saved = nlohmann::json::parse(headlab::core::read_file_bytes(dir.str("s.json")));
    CHECK(saved["generation"]["prompt"] == "The cat sat on");
    CHECK(saved["generation"]["generated"].size() == 6);
    Controller d;
    d.start("", dir.str("s.json"));
    settle(d);
    REQUIRE(d.doc().generation);
    REQUIRE(d.doc().generation->steps.size() == 6);
    for (size_t s = 0; s < 6; ++s) CHECK(d.doc().generation->steps[s].id == g->steps[s].id);
    CHECK(d.doc().session.generation.settings.seed == 3);
    CHECK(d.doc().session.generation.settings.top_k == 40);
  }
  SECTION("going back: keep the first tokens, write on under other gates; Δp against the ungated model") {
    c.execute(cmd::SetGate{headlab::core::Stack::Decoder, 0, 5, 0.0f});
    settle(c);
    c.execute(cmd::Generate{{"The cat sat on", 6, 0.8f, 40, 0.95f, 3}, 3});
    settle(c);
    const auto again = c.doc().generation;
    REQUIRE(again);
    REQUIRE(again->steps.size() == 6);
    for (size_t s = 0; s < 3; ++s) {
      CHECK(again->steps[s].id == g->steps[s].id);
      CHECK(again->steps[s].kept);
    }
    CHECK(!again->steps[3].kept);
    std::vector<int64_t> written;
    for (const auto& step : again->steps) written.push_back(step.id);
    CHECK(c.doc().session.generation.generated == written);
    // Δp's base: the model without controls on the same text, computed here through core::generate
    // with those tokens forced.
    auto plain = request;
    plain.controls = {};
    plain.forced = written;
    const auto base = headlab::core::generate(*model, plain);
    for (size_t s = 0; s < 6; ++s) {
      INFO("step " << s);
      const auto& step = again->steps[s];
      REQUIRE(step.top_base.size() == step.top.size());
      const auto p = torch::softmax(base.steps[s].logits, -1);
      const auto id = model->tokenizer->token_to_id(step.top[0].first);
      REQUIRE(id);
      CHECK(step.top_base[0] == Approx(p[*id].item<float>()).margin(1e-5));
    }
  }
  SECTION("Stop before the run starts leaves nothing running") {
    c.execute(cmd::Generate{{"The", 1000}});
    c.execute(cmd::StopGeneration{});
    settle(c, 20);
    CHECK(!c.doc().generation_job.running);
  }
  SECTION("a masked-LM encoder cannot generate: the message says why") {
    c.execute(cmd::OpenModel{std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default"});
    settle(c);
    c.execute(cmd::Generate{{"The", 3}});
    settle(c);
    CHECK_THAT(c.doc().generation_job.error, Catch::Contains("no decoder"));
    CHECK(!c.doc().generation);
  }
}
