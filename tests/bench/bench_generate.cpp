// Generation benchmark (not a test): per-token latency with the KV cache against recomputing the
// whole sequence every step, at 32/128/512 tokens of context, for a GPT-2-small-shaped decoder
// (12 × 12 heads, 768 wide, 50257 vocabulary), a default-sized one (5 × 8 heads, 256 wide, 12000
// vocabulary) and the same with multi-head latent attention, random weights, on all cores. Target: with the cache a token's cost grows no faster
// than linearly in T, and at 512 tokens it is ≥ 10× cheaper than recomputing. Then the cache's bytes
// per token for MHA, MQA, GQA, a sliding window of 64 and multi-head latent attention (a latent of
// 128 and a rotated key of 16 beside 8 heads of 32), measured against the formula
// (core::kv_cache_bytes). Run: build/tests/bench_generate [--steps N (default 8)]
#include "core/model/generate.h"
#include "core/memory_budget.h"
#include "core/model/system_info.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace headlab;

namespace {

// latent > 0: multi-head latent attention with a key/value latent of that width and a rotated key of
// half a head (DeepSeek-V2's proportions: d_c = 4·d_h, d_R = d_h/2), the heads' widths unchanged.
core::ModelConfig decoder(int layers, int heads, int kv_heads, int hidden, int vocab, int window = 0, int latent = 0) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  auto c = nlohmann::json::parse(in);
  c["kind"] = "decoder";
  c["objective"] = "causal";
  c["vocab_size"] = vocab;
  c["hidden_size"] = hidden;
  c["max_positions"] = 1024;
  c["ffn"]["inner_size"] = hidden * 4;
  auto stack = c["encoder"];
  c.erase("encoder");
  stack["layers"] = layers;
  stack["attention"]["heads"] = heads;
  stack["attention"]["kv_heads"] = kv_heads;
  stack["attention"]["key_size"] = hidden / heads;
  stack["attention"]["value_size"] = hidden / heads;
  if (latent > 0) {
    stack["attention"]["latent"] = {{"kv_rank", latent}, {"q_rank", 0}, {"rope_size", hidden / heads / 2}};
    c["positions"] = "rope";
  }
  if (window > 0) stack["attention"]["pattern"] = {{"window", window}, {"dilation", 1}, {"global_tokens", nlohmann::json::array()}};
  c["decoder"] = stack;
  return core::model_config_from_json(c);
}

// Milliseconds a generated token takes after a prompt of T - 1 tokens (the first step, which feeds
// the prompt, is left out for the cache; every step of the baseline runs all T tokens).
double ms_per_token(core::Model& model, int T, int steps, bool cache) {
  core::GenerateRequest r;
  for (int i = 0; i < T - 1; ++i) r.prompt.push_back(1 + (i * 7919) % 997);
  r.max_new = steps + 1;
  r.use_cache = cache;
  std::vector<double> times;
  auto last = std::chrono::steady_clock::now();
  core::generate(model, r, [&](const core::GenerationStep&) {
    const auto now = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(now - last).count());
    last = now;
  });
  times.erase(times.begin());  // the prompt
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 8;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[++i]);
  core::use_batch_threads();
  std::printf("per-token latency, median of %d steps (ms): with the cache | recomputing | ratio\n", steps);
  struct Shape {
    const char* name;
    int layers, heads, hidden, vocab;
  };
  for (const Shape& s : {Shape{"GPT-2-small-shaped", 12, 12, 768, 50257}, Shape{"default-sized", 5, 8, 256, 12000},
                         Shape{"default-sized MLA", 5, 8, 256, 12000}}) {
    const bool mla = std::strstr(s.name, "MLA") != nullptr;
    auto model = core::make_random_model(decoder(s.layers, s.heads, s.heads, s.hidden, s.vocab, 0, mla ? 4 * s.hidden / s.heads : 0), 1);
    for (int T : {32, 128, 512}) {
      const double cached = ms_per_token(*model, T, steps, true);
      const double full = ms_per_token(*model, T, std::max(2, steps / 2), false);
      std::printf("%-20s T=%-4d %8.2f | %8.2f | %6.1f×\n", s.name, T, cached, full, full / cached);
    }
  }
  std::printf("\nKV cache bytes per token, default-sized decoder (5 layers, 8 heads of 32), after 512 tokens:\n");
  struct Variant {
    const char* name;
    int kv_heads, window, latent;
  };
  for (const Variant& v : {Variant{"MHA", 8, 0, 0}, Variant{"MQA", 1, 0, 0}, Variant{"GQA (2 groups)", 2, 0, 0},
                           Variant{"sliding window 64", 8, 64, 0}, Variant{"MLA (latent 128)", 8, 0, 128}}) {
    const auto config = decoder(5, 8, v.kv_heads, 256, 12000, v.window, v.latent);
    auto model = core::make_random_model(config, 1);
    core::GenerateRequest r;
    for (int i = 0; i < 511; ++i) r.prompt.push_back(1 + i % 997);
    r.max_new = 2;  // feeds the 511-token prompt, then one token: 512 in the cache
    const auto out = core::generate(*model, r);
    const int64_t measured = out.steps.back().cache_bytes;
    std::printf("%-18s %9lld bytes = %6.0f a token (formula %lld bytes: %s)\n", v.name, static_cast<long long>(measured),
                measured / 512.0, static_cast<long long>(core::kv_cache_bytes(config, 512)),
                measured == core::kv_cache_bytes(config, 512) ? "equal" : "DIFFERENT");
  }
  return 0;
}
