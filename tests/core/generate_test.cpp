// Generation with the KV cache: every step fed from the cache equals recomputing the whole sequence
// (logits and the new query's attention row in every head, 1e-5) for every attention variant and
// every Hugging Face decoder family, with head controls applied; sliding windows keep a bounded
// cache; MQA and GQA keep 1/h and g/h of MHA's, latent attention its latent; sampling is reproducible by seed.
#include "test_common.h"

#include "core/config.h"
#include "core/model/generate.h"
#include "core/memory_budget.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace headlab;
using core::GenerateRequest;
using nlohmann::json;

namespace {

json shipped_config(const std::string& name) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  return json::parse(in);
}

// The shipped example config as a causal decoder (its encoder stack becomes the decoder's).
core::ModelConfig as_decoder(json j) {
  if (j["kind"] == "encoder") {
    j["kind"] = "decoder";
    j["objective"] = "causal";
    j["decoder"] = j["encoder"];
    j.erase("encoder");
  }
  return core::model_config_from_json(j);
}

// Runs `request` with and without the cache and compares every step.
void expect_cache_equals_recompute(core::Model& model, GenerateRequest request) {
  request.use_cache = true;
  const auto cached = core::generate(model, request);
  request.use_cache = false;
  const auto full = core::generate(model, request);
  REQUIRE(cached.tokens == full.tokens);
  REQUIRE(cached.steps.size() == full.steps.size());
  for (size_t s = 0; s < cached.steps.size(); ++s) {
    INFO("step " << s);
    const auto& a = cached.steps[s];
    const auto& b = full.steps[s];
    const double scale = std::max(1.0, b.logits.abs().max().item<double>());
    CHECK(test::max_abs_diff(a.logits, b.logits) <= 1e-5 * scale);
    REQUIRE(a.attention.size() == b.attention.size());
    for (size_t l = 0; l < a.attention.size(); ++l) {
      INFO("layer " << l);
      REQUIRE(a.attention[l].sizes() == b.attention[l].sizes());
      CHECK(test::max_abs_diff(a.attention[l], b.attention[l]) <= 1e-5);
    }
    REQUIRE(a.sink_share.size() == b.sink_share.size());
    for (size_t l = 0; l < a.sink_share.size(); ++l) {
      REQUIRE(a.sink_share[l].defined() == b.sink_share[l].defined());
      if (a.sink_share[l].defined()) CHECK(test::max_abs_diff(a.sink_share[l], b.sink_share[l]) <= 1e-5);
    }
    REQUIRE(a.cross_attention.size() == b.cross_attention.size());
    for (size_t l = 0; l < a.cross_attention.size(); ++l)
      CHECK(test::max_abs_diff(a.cross_attention[l], b.cross_attention[l]) <= 1e-5);
    CHECK(a.cache_bytes > 0);
    CHECK(b.cache_bytes == 0);
  }
}

}  // namespace

TEST_CASE("a step from the KV cache equals recomputing the sequence, every variant", "[generate]") {
  for (const char* name : {"mha", "mqa", "gqa", "key-size", "talking-heads", "collaborative", "additive",
                           "sliding-window", "dilated", "global", "encoder-decoder", "relative-position", "latent", "disentangled"}) {
    for (const char* positions : {"shipped", "rope", "sinusoidal"}) {
      DYNAMIC_SECTION(name << ", positions " << positions) {
        json j = shipped_config(name);
        if (std::string(positions) != "shipped") j["positions"] = positions;
        auto model = core::make_random_model(as_decoder(j), 7);
        GenerateRequest request;
        request.prompt = {5, 17, 3, 250, 42, 9, 11};
        if (model->config.kind == core::StackKind::EncoderDecoder) request.decoder_prompt = {1};
        request.max_new = 12;  // past the sliding windows of the shipped configs
        expect_cache_equals_recompute(*model, request);

        // Head controls apply at every step: a closed head, a half gate and a mixing matrix.
        const auto& attention = model->config.decoder->attention;
        const int h = attention.softmax_heads(), h_v = attention.output_heads();
        auto& layer0 = request.controls.at(headlab::core::Stack::Decoder, 0);
        layer0.gates.assign(h_v, 1.0f);
        layer0.gates[0] = 0.0f;
        layer0.gates[h_v - 1] = 0.5f;
        auto& layer1 = request.controls.at(headlab::core::Stack::Decoder, 1);
        layer1.pre_mix.assign(size_t(h) * h, 0.0f);
        for (int i = 0; i < h; ++i) layer1.pre_mix[size_t(i) * h + (i + 1) % h] = 1.0f;  // a rotation of the heads
        expect_cache_equals_recompute(*model, request);
        GenerateRequest plain;
        plain.prompt = request.prompt;
        plain.decoder_prompt = request.decoder_prompt;
        plain.max_new = 4;
        const auto ungated = core::generate(*model, plain);
        const auto gated = core::generate(*model, request);
        CHECK(test::max_abs_diff(ungated.steps[0].logits, gated.steps[0].logits) > 1e-4);  // the controls act
      }
    }
  }
}

TEST_CASE("a step from the KV cache equals recomputing the sequence, every Hugging Face decoder", "[generate][hf]") {
  // Scaled RoPE too (llama3, linear, yarn, Gemma 3's scaled global layers); dynamic scaling changes
  // nothing within max_positions, the most generation runs to.
  for (const char* family : {"gpt2", "llama", "llama-bf16", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "llama31",
                             "llama-linear", "qwen2-yarn", "gemma3-scaled", "phi3", "smollm3", "gemma", "opt", "olmo", "olmo-clip",
                             "pythia", "gptj", "bloom", "mixtral", "gpt-oss", "phi", "falcon", "falcon-40b",
                             "falcon-sequential", "olmo2", "deepseek-v2-lite", "deepseek-v2", "deepseek-v3"}) {
    DYNAMIC_SECTION(family) {
      auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/" + family);
      GenerateRequest request;
      request.prompt = {3, 14, 15, 9, 26, 5};
      request.max_new = 10;
      expect_cache_equals_recompute(*model, request);
      request.sampling = {0.8f, 20, 0.9f, 11};
      expect_cache_equals_recompute(*model, request);
    }
  }
}

TEST_CASE("each step carries its query's share of the learned sinks, the row and it summing to 1", "[generate][sinks]") {
  auto sinks = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/gpt-oss");
  const int h = sinks->config.decoder->attention.softmax_heads();
  GenerateRequest request;
  request.prompt = {3, 14, 15, 9, 26, 5};
  request.max_new = 4;
  for (bool cache : {true, false}) {
    request.use_cache = cache;
    const auto out = core::generate(*sinks, request);
    for (const auto& step : out.steps) {
      REQUIRE(step.sink_share.size() == step.attention.size());
      for (size_t l = 0; l < step.sink_share.size(); ++l) {
        REQUIRE(step.sink_share[l].defined());
        REQUIRE(step.sink_share[l].sizes() == torch::IntArrayRef{h});
        const auto share = step.sink_share[l].to(torch::kDouble);
        CHECK(share.min().item<double>() > 0.0);  // a learned sink always takes some weight
        // No controls: the row of U is the row of W, which sums to 1 minus the sink's share.
        CHECK(test::max_abs_diff(step.attention[l].to(torch::kDouble).sum(1) + share, torch::ones({h}, torch::kDouble)) <= 1e-5);
      }
    }
  }
  // A model without sinks has none to report.
  auto plain = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/llama");
  const auto out = core::generate(*plain, request);
  for (const auto& share : out.steps[0].sink_share) CHECK(!share.defined());
}

TEST_CASE("a step from the KV cache equals recomputing the sequence, every Hugging Face encoder-decoder",
          "[generate][hf][seq2seq]") {
  // The decoder's own learned positions (BART, mBART), the sinusoid halves (Marian) and the
  // relative position bias read from the cache's positions (T5).
  for (const char* family : {"bart", "mbart", "marian", "t5", "t5-v1_1"}) {
    DYNAMIC_SECTION(family) {
      auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/tests/data/hf/" + family);
      GenerateRequest request;
      request.prompt = {3, 14, 15, 9, 26, 5, 2};
      request.decoder_prompt = {model->config.decoder_start_id.value_or(2), 17};
      request.max_new = 12;
      expect_cache_equals_recompute(*model, request);
      request.sampling = {0.8f, 20, 0.9f, 11};
      expect_cache_equals_recompute(*model, request);
    }
  }
}

TEST_CASE("dynamic RoPE generates past max_positions, each step there recomputed", "[generate][rope]") {
  json j = shipped_config("mha");
  j["positions"] = "rope";
  j["max_positions"] = 8;
  j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  auto model = core::make_random_model(as_decoder(j), 9);
  GenerateRequest request;
  request.prompt = {5, 17, 3, 250, 42, 9};
  request.max_new = 6;  // the sequence grows to 11 tokens, past the 8 positions
  const auto cached = core::generate(*model, request);
  request.use_cache = false;
  const auto full = core::generate(*model, request);
  REQUIRE(cached.tokens == full.tokens);
  REQUIRE(cached.steps.size() == 6);
  for (size_t s = 0; s < cached.steps.size(); ++s) {
    INFO("step " << s);
    const double scale = std::max(1.0, full.steps[s].logits.abs().max().item<double>());
    CHECK(test::max_abs_diff(cached.steps[s].logits, full.steps[s].logits) <= 1e-5 * scale);
  }
  // Steps 0–2 read 6–8 tokens from the cache; from 9 tokens on (step 3) each step recomputes, since
  // the base grows with the length and the cached keys were rotated at the old one.
  CHECK(cached.steps[2].cache_bytes > 0);
  CHECK(cached.steps[3].cache_bytes == 0);
  REQUIRE(cached.notes.size() == 1);
  CHECK_THAT(cached.notes[0], Catch::Contains("dynamic RoPE"));
  CHECK(full.notes.empty());
  // The same model without dynamic scaling generates within its 8 positions only.
  j.erase("rope_scaling");
  auto plain = core::make_random_model(as_decoder(j), 9);
  CHECK_THROWS_WITH(core::generate(*plain, request), Catch::Contains("positions this model takes"));
}

TEST_CASE("the cache holds h_kv heads of keys and values, a sliding window bounds it", "[generate]") {
  auto bytes_after = [](const json& j, int steps) {
    auto model = core::make_random_model(as_decoder(j), 3);
    GenerateRequest request;
    request.prompt = {1, 2, 3};
    request.max_new = steps;
    return core::generate(*model, request).steps.back().cache_bytes;
  };
  // Layers × (kv heads × (d_k + d_v)) × 4 bytes × tokens fed.
  auto expected = [](const json& j, int64_t tokens) {
    const json& stack = j.contains("encoder") ? j["encoder"] : j["decoder"];
    const json& a = stack["attention"];
    return tokens * stack["layers"].get<int64_t>() * a["kv_heads"].get<int64_t>() *
           (a["key_size"].get<int64_t>() + a["value_size"].get<int64_t>()) * 4;
  };
  json mha = shipped_config("mha"), mqa = shipped_config("mqa"), gqa = shipped_config("gqa");
  const int64_t tokens = 3 + 9;  // the prompt and the 9 tokens fed after it (the tenth is drawn, not fed)
  const int64_t per_head = 2 * (16 + 16) * 4;
  CHECK(bytes_after(mha, 10) == expected(mha, tokens));
  CHECK(bytes_after(mqa, 10) == expected(mqa, tokens));
  CHECK(bytes_after(gqa, 10) == expected(gqa, tokens));
  CHECK(bytes_after(mqa, 10) * 4 == bytes_after(mha, 10));  // MQA: ÷ h of the same-sized MHA
  // The formula the memory estimate and `headlab info` use.
  CHECK(core::kv_cache_bytes_per_token(as_decoder(mha)) == 4 * per_head);
  CHECK(core::kv_cache_bytes_per_token(as_decoder(mqa)) == per_head);
  CHECK(core::kv_cache_bytes_per_token_as_mha(as_decoder(mqa)) == core::kv_cache_bytes_per_token(as_decoder(mha)));
  CHECK(core::kv_cache_bytes_per_token_as_mha(as_decoder(mha)) == core::kv_cache_bytes_per_token(as_decoder(mha)));

  // Multi-head latent attention keeps the latent and the shared rotated key: (16 + 4) numbers a token
  // and layer against MHA's 8 heads × (12 + 8) with the same heads.
  json latent = shipped_config("latent");
  CHECK(bytes_after(latent, 10) == tokens * 2 * (16 + 4) * 4);
  CHECK(core::kv_cache_bytes_per_token(as_decoder(latent)) == 2 * (16 + 4) * 4);
  CHECK(core::kv_cache_bytes_per_token_as_mha(as_decoder(latent)) == 2 * 8 * (12 + 8) * 4);

  // A sliding window of w keeps at most w + 1 positions a layer however long the text grows.
  json sliding = shipped_config("sliding-window");
  const int w = sliding["encoder"]["attention"]["pattern"]["window"].get<int>();
  CHECK(bytes_after(sliding, 40) <= expected(sliding, w + 1));
  CHECK(core::kv_cache_bytes(as_decoder(sliding), 1000) == expected(sliding, w + 1));
  CHECK(bytes_after(sliding, 80) == bytes_after(sliding, 40));
  CHECK(bytes_after(mha, 40) > bytes_after(mha, 20));
}

TEST_CASE("sampling: greedy at temperature 0, reproducible by seed, top-k and top-p narrow the choice", "[generate]") {
  auto model = core::make_random_model(as_decoder(shipped_config("mha")), 5);
  GenerateRequest request;
  request.prompt = {4, 8, 15, 16, 23};
  request.max_new = 16;
  const auto greedy = core::generate(*model, request);
  for (const auto& step : greedy.steps) CHECK(step.token == step.logits.argmax().item<int64_t>());

  request.sampling = {1.0f, 0, 1.0f, 42};
  const auto a = core::generate(*model, request), b = core::generate(*model, request);
  CHECK(a.tokens == b.tokens);
  request.sampling.seed = 43;
  CHECK(core::generate(*model, request).tokens != a.tokens);
  request.sampling = {1.0f, 1, 1.0f, 7};  // top-1 is greedy
  CHECK(core::generate(*model, request).tokens == greedy.tokens);
  request.sampling = {1.0f, 0, 1e-6f, 7};  // the nucleus of a tiny p is the most probable token
  CHECK(core::generate(*model, request).tokens == greedy.tokens);

  // top-k = 3 draws only from the 3 most probable tokens of each step.
  auto generator = at::make_generator<at::CPUGeneratorImpl>(1);
  const auto logits = torch::randn({50});
  const auto top3 = std::get<1>(logits.topk(3));
  for (int i = 0; i < 200; ++i) {
    const int64_t t = core::sample_token(logits, {2.0f, 3, 1.0f, 0}, generator);
    CHECK(top3.eq(t).any().item<bool>());
  }
  // Forced tokens are written as given; the steps after them are drawn again.
  request.sampling = {};
  request.forced = {7, 8, 9};
  const auto forced = core::generate(*model, request);
  CHECK(std::vector<int64_t>(forced.tokens.begin(), forced.tokens.begin() + 3) == request.forced);
  for (size_t s = 3; s < forced.steps.size(); ++s) CHECK(forced.tokens[s] == forced.steps[s].logits.argmax().item<int64_t>());
  request.forced.clear();
  request.stop_ids = {greedy.tokens[2]};
  const auto stopped = core::generate(*model, request);
  CHECK(stopped.stopped == "end of sequence");
  CHECK(stopped.tokens.size() <= 3);
}

TEST_CASE("generation refuses what it cannot do, saying why", "[generate]") {
  auto encoder = core::make_random_model(core::model_config_from_json(shipped_config("mha")), 1);
  GenerateRequest request;
  request.prompt = {1, 2, 3};
  CHECK_THROWS_WITH(core::generate(*encoder, request), Catch::Contains("no decoder"));
  auto decoder = core::make_random_model(as_decoder(shipped_config("mha")), 1);
  request.max_new = 300;
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("256 positions"));
  request.max_new = 3;
  auto& controls = request.controls.at(headlab::core::Stack::Decoder, 0);
  controls.gates = {0.0f};
  controls.ablation = core::Ablation::Mean;
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("mean ablation"));
  controls.mean_outputs.assign(4 * 16, 0.1f);  // dataset means: fine
  CHECK(core::generate(*decoder, request).tokens.size() == 3);
  request.prompt.clear();
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("prompt is empty"));
  // Sampling settings that would leave no token to draw, however they arrive (a script, the window).
  request.prompt = {1, 2, 3};
  request.sampling = {1.0f, 0, 0.0f, 1};
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("top_p must be in (0, 1]"));
  request.sampling = {std::nanf(""), 0, 1.0f, 1};
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("temperature must be a finite number"));
  request.sampling = {1.0f, -2, 1.0f, 1};
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("top_k must be >= 0"));
  request.sampling = {};
  // Over the memory limit: refused before it starts, saying what it would need.
  request.prompt = {1, 2, 3};
  core::set_memory_limit(1024);
  CHECK_THROWS_WITH(core::generate(*decoder, request), Catch::Contains("this generation needs about"));
  core::set_memory_limit(0);
}

TEST_CASE("a Stop ends generation within a layer of the step under way, keeping the steps before", "[generate]") {
  // The Stop is set from the step's own progress after layer 3 of 8 of the second step: the
  // generation must end before layer 5 of that step, drop that step and keep the first — without
  // timing, so it cannot pass or fail by chance.
  json j = shipped_config("mha");
  j["encoder"]["layers"] = 8;
  auto model = core::make_random_model(as_decoder(j), 9);
  for (const bool cache : {false, true}) {
    INFO((cache ? "from the cache" : "recomputing"));
    GenerateRequest request;
    request.prompt = {5, 6, 7, 8};
    request.max_new = 3;
    request.use_cache = cache;
    const auto whole = core::generate(*model, request);
    REQUIRE(whole.steps.size() == 3);

    std::atomic<bool> stop{false};
    request.cancel = &stop;
    std::vector<std::pair<int, int>> calls;  // (done, total) as reported
    request.progress = [&](int done, int total) {
      calls.emplace_back(done, total);
      if (calls.size() == 8 + 3) stop = true;  // the second step, after its third layer
      return true;
    };
    const auto stopped = core::generate(*model, request);
    CHECK(stopped.stopped == "cancelled");
    REQUIRE(stopped.steps.size() == 1);  // the second step is dropped, the first stands
    CHECK(stopped.tokens == std::vector<int64_t>{whole.tokens[0]});
    CHECK(torch::equal(stopped.steps[0].logits, whole.steps[0].logits));
    CHECK(calls.size() == 8 + 3);  // not one layer more after the Stop
    CHECK(calls.back() == std::make_pair(3, 8));

    // A progress callback that returns false stops it the same way.
    request.cancel = nullptr;
    int layers_run = 0;
    request.progress = [&](int, int) { return ++layers_run < 8 + 5; };
    const auto refused = core::generate(*model, request);
    CHECK(refused.stopped == "cancelled");
    CHECK(refused.steps.size() == 1);
    CHECK(layers_run == 8 + 5);
  }
}

TEST_CASE("sampling draws tokens with the softmax at temperature T, truncated to the top k and the nucleus p",
          "[generate]") {
  // The expected distribution, computed independently in float64 with plain loops: the softmax of
  // logits / T; only the k most probable kept (k = 0: all); then, in descending order, the kept
  // tokens whose kept mass before them is below p of the kept total (the one crossing p included,
  // Holtzman et al. 2020); renormalised.
  const std::vector<double> logits = {2.0, 1.5, 1.2, 0.3, 0.0, -0.4, -1.0, -2.5};
  auto expected = [&](double T, int k, double p) {
    const size_t V = logits.size();
    std::vector<double> prob(V);  // unnormalised: only ratios matter until the end
    for (size_t i = 0; i < V; ++i) prob[i] = std::exp(logits[i] / T);
    std::vector<size_t> order(V);
    for (size_t i = 0; i < V; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prob[a] > prob[b]; });
    const size_t top = k > 0 ? std::min(V, size_t(k)) : V;
    double kept_total = 0;
    for (size_t r = 0; r < top; ++r) kept_total += prob[order[r]];
    std::vector<double> out(V, 0.0);
    double before = 0, total = 0;
    for (size_t r = 0; r < top && before < p * kept_total; ++r) {
      out[order[r]] = prob[order[r]];
      before += prob[order[r]];
    }
    for (const double x : out) total += x;
    for (auto& x : out) x /= total;
    return out;
  };
  const auto logits_tensor = torch::tensor(logits, torch::kFloat32);
  const int draws = 10000;
  struct Case {
    float T;
    int k;
    float p;
  };
  for (const Case c : {Case{1.0f, 0, 1.0f}, Case{0.5f, 0, 1.0f}, Case{2.0f, 0, 1.0f}, Case{1.0f, 3, 1.0f},
                       Case{1.5f, 0, 0.7f}, Case{0.8f, 5, 0.9f}}) {
    INFO("T " << c.T << ", top-k " << c.k << ", top-p " << c.p);
    const std::vector<double> want = expected(c.T, c.k, c.p);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(11);
    std::vector<int> counts(logits.size(), 0);
    for (int d = 0; d < draws; ++d) ++counts[size_t(core::sample_token(logits_tensor, {c.T, c.k, c.p, 0}, generator))];
    for (size_t i = 0; i < logits.size(); ++i) {
      INFO("token " << i << ": expected p " << want[i] << ", drawn " << counts[i] << " of " << draws);
      if (want[i] == 0) {
        CHECK(counts[i] == 0);  // truncated away: never drawn
      } else {
        // Within five standard errors of a binomial proportion.
        const double se = std::sqrt(want[i] * (1 - want[i]) / draws);
        CHECK(std::fabs(counts[i] / double(draws) - want[i]) <= 5 * se);
      }
    }
  }
}
