// Engine benchmark (not a test). Prints, in one run:
//  - float32 GEMM GFLOP/s (768³),
//  - forward time of a GPT-2-small-shaped model (12 layers, 768 wide, 12 heads, 50257 vocab) at
//    128 tokens, with full capture vs none (target ≤ 1.05×),
//  - the same forward in Python torch (Debian python3-torch) if present, as a ratio (target ≤ 1.0×),
//  - an incremental run from layer 6 vs a full run (target ≤ 0.55×), with and without the LM head,
//    and with logits at one position (RunRequest::logit_positions, as the workbench asks)
//    (a fixed cost: 128 × 768 × 50257 multiply-adds, as much as ~5 layers).
// Run: build/tests/bench_engine [--threads N] [--repeats N]
#include "bench_models.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/system_info.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

using namespace headlab;

namespace {

double median_ms(int repeats, const std::function<void()>& work) {
  work();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

using bench::gpt2_small_config;

// Runs the Python reference and returns its median ms, or a negative number if unavailable.
double python_reference_ms(int threads, int repeats) {
  const std::string script = std::string(HEADLAB_SOURCE_DIR) + "/tests/bench/bench_engine_reference.py";
  const std::string command = "/usr/bin/python3 " + script + " --threads " + std::to_string(threads) + " --repeats " +
                              std::to_string(repeats) + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 256> line{};
  double ms = -1;
  while (std::fgets(line.data(), line.size(), pipe))
    if (std::strncmp(line.data(), "median_ms ", 10) == 0) ms = std::atof(line.data() + 10);
  ::pclose(pipe);
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  core::use_passive_openmp(argv);  // as headlab does (the Python reference inherits it)
  int threads = 0, repeats = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (arg == "--repeats" && i + 1 < argc) repeats = std::atoi(argv[++i]);
  }
  if (threads > 0) torch::set_num_threads(threads);
  else core::use_batch_threads();
  threads = torch::get_num_threads();
  const auto info = core::system_info(true);
  std::printf("BLAS: %s, %d intra-op threads\n", info.blas_kind.c_str(), threads);
  std::printf("GEMM 768^3 float32: %.1f GFLOP/s\n", info.gemm_gflops);

  auto model = core::make_random_model(gpt2_small_config(), 1);
  core::RunRequest request;
  for (int i = 0; i < 128; ++i) request.ids.push_back((i * 7919) % 50257);

  request.capture = core::kCaptureNone;
  const double none_ms = median_ms(repeats, [&] { core::run(*model, request); });
  request.capture = core::kCaptureAll;
  const double all_ms = median_ms(repeats, [&] { core::run(*model, request); });
  std::printf("forward, 12x768, 128 tokens: %.1f ms without capture, %.1f ms with every stage (ratio %.3f, target <= 1.05)\n",
              none_ms, all_ms, all_ms / none_ms);

  const double python_ms = python_reference_ms(threads, repeats);
  if (python_ms > 0)
    std::printf("Python torch same forward: %.1f ms (C++ / Python = %.3f, target <= 1.0)\n", python_ms,
                none_ms / python_ms);
  else
    std::printf("Python torch reference: unavailable (install python3-torch)\n");

  request.capture = core::kCaptureWeights | core::kCaptureMixedWeights | core::kCaptureResidual;
  auto base = core::run(*model, request);
  core::RunRequest changed = request;
  changed.previous = base;
  changed.controls.at(headlab::core::Stack::Decoder, 6).gates = std::vector<float>(12, 1.0f);
  changed.controls.at(headlab::core::Stack::Decoder, 6).gates[3] = 0.0f;
  const double full_ms = median_ms(repeats, [&] { core::run(*model, request); });
  const double incremental_ms = median_ms(repeats, [&] { core::run(*model, changed); });
  std::printf("incremental from layer 6: %.1f ms vs full %.1f ms (ratio %.3f, target <= 0.55)\n", incremental_ms,
              full_ms, incremental_ms / full_ms);
  // The LM head runs once per run whatever changed: the layers' share is the ratio without it.
  torch::Tensor hidden = base->decoder.hidden.back().unsqueeze(0);  // [1, T, D]
  const double head_ms = median_ms(repeats, [&] {
    c10::InferenceMode inference;
    model->module->head(hidden, headlab::core::Stack::Decoder);
  });
  std::printf("LM head alone: %.1f ms; layers only: incremental %.1f ms vs full %.1f ms (ratio %.3f)\n", head_ms,
              incremental_ms - head_ms, full_ms - head_ms, (incremental_ms - head_ms) / (full_ms - head_ms));
  // As the workbench runs: logits only at the position shown (the last one).
  request.logit_positions = changed.logit_positions = {127};
  const double full_one_ms = median_ms(repeats, [&] { core::run(*model, request); });
  changed.previous = core::run(*model, request);
  const double incremental_one_ms = median_ms(repeats, [&] { core::run(*model, changed); });
  std::printf("logits at one position: incremental from layer 6 %.1f ms vs full %.1f ms (ratio %.3f, target <= 0.55)\n",
              incremental_one_ms, full_one_ms, incremental_one_ms / full_one_ms);
  return 0;
}
