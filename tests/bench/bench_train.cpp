// bench_train [--steps N] [--threads T…]: training throughput (tokens/s) of the default model's
// config (4 × 256, 8 heads, RoPE, 8k vocabulary, MLM, 32 × 64 tokens a step: forward, backward,
// gradient clipping, AdamW), and the ratio to the same step in Python torch
// (tests/bench/bench_train_reference.py, run with Debian's /usr/bin/python3) when present.
#include "core/model/system_info.h"
#include "core/config.h"
#include "core/train/data.h"
#include "core/train/forward.h"
#include "core/model/transformer.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>

using namespace headlab;

namespace {

core::ModelConfig default_config() {
  const std::string assets = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default/config.json";
  if (std::filesystem::exists(assets)) return core::load_model_config(assets);
  return core::model_config_from_json(nlohmann::json::parse(R"({
    "format": "headlab-model", "format_version": 1, "kind": "encoder", "objective": "mlm", "vocab_size": 8000,
    "hidden_size": 256, "max_positions": 512, "positions": "rope", "norm": "layernorm", "norm_placement": "pre",
    "final_norm": true, "ffn": {"kind": "mlp", "inner_size": 1024, "activation": "gelu", "bias": true},
    "lm_head": {"transform": true, "tied": true, "bias": true},
    "encoder": {"layers": 4, "attention": {"heads": 8, "kv_heads": 8, "key_size": 32, "value_size": 32}}})"));
}

double bench(const core::ModelConfig& config, int threads, int steps) {
  at::set_num_threads(threads);
  core::Transformer model(config);
  core::initialize_weights(model, 0);
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-4).weight_decay(0.01));
  core::train::SpecialTokens specials;
  specials.vocab_size = config.vocab_size;
  specials.pad = 0;
  specials.mask = 4;
  specials.begin = 2;
  specials.end = 3;
  specials.specials = {0, 1, 2, 3, 4};
  std::mt19937_64 rng(1);
  std::vector<core::train::Example> examples(32);
  for (auto& e : examples) {
    e.source.push_back(2);
    for (int i = 0; i < 62; ++i) e.source.push_back(5 + int64_t(rng() % uint64_t(config.vocab_size - 5)));
    e.source.push_back(3);
  }
  std::vector<const core::train::Example*> ptrs;
  for (auto& e : examples) ptrs.push_back(&e);
  auto step = [&](int i) {
    auto batch = core::train::make_batch(ptrs, core::train::Objective::Mlm, specials, uint64_t(i));
    optimizer.zero_grad();
    auto r = core::train::batch_loss(model, batch);
    r.loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();
    return batch.tokens;
  };
  for (int i = 0; i < 3; ++i) step(i);  // warm-up
  int64_t tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) tokens += step(100 + i);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return double(tokens) / secs;
}

double python_reference(int threads, int steps) {
  const std::string script = std::string(HEADLAB_SOURCE_DIR) + "/tests/bench/bench_train_reference.py";
  if (!std::filesystem::exists("/usr/bin/python3") || !std::filesystem::exists(script)) return 0;
  const std::string cmd = "/usr/bin/python3 " + script + " --threads " + std::to_string(threads) + " --steps " +
                          std::to_string(steps) + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return 0;
  char buf[256];
  std::string out;
  while (fgets(buf, sizeof buf, pipe)) out += buf;
  if (pclose(pipe) != 0) return 0;
  try {
    return std::stod(out.substr(out.rfind("tokens/s:") + 9));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  headlab::core::use_passive_openmp(argv);  // as headlab does
  headlab::core::keep_freed_memory();
  int steps = 20;
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::stoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads.push_back(std::stoi(argv[++i]));
    else {
      std::cerr << "usage: bench_train [--steps N] [--threads T]…\n";
      return 2;
    }
  }
  if (threads.empty()) threads = {1, 2};
  const auto config = default_config();
  std::printf("training step: %s, %lld parameters, 32 x 64 tokens, MLM 15%%\n", config.name.c_str(),
              static_cast<long long>(config.parameter_count()));
  for (int t : threads) {
    const double ours = bench(config, t, steps);
    const double ref = python_reference(t, steps);
    if (ref > 0)
      std::printf("threads %d: %8.0f tokens/s   python torch %8.0f tokens/s   ratio %.2f\n", t, ours, ref, ours / ref);
    else
      std::printf("threads %d: %8.0f tokens/s   (no python torch reference)\n", t, ours);
  }
  return 0;
}
