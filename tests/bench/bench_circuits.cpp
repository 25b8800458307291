// Circuits and patching benchmark (not a test). Prints, in one run, on a GPT-2-small-shaped model
// (12 layers, 768 wide, 12 heads, 50257 vocab, random weights) at 64 tokens:
//  - `circuits`: composition scores of every pair of heads and every OV spectrum from the weights
//    (target ≤ 10 s);
//  - exact patching of every head's z against one full forward (target ≤ 8×), with the floor that
//    incremental re-runs can reach: a patch in layer l re-runs layers l … 11 and the LM head at one
//    position, Σ_l 12 · (12 − l) / 12 = 78 forwards' worth of layers for 144 heads;
//  - attribution patching of every head at once against one full forward (target ≤ 3×).
// Run: build/tests/bench_circuits [--threads N]
#include "analysis/composition.h"
#include "analysis/patching.h"
#include "bench_models.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/system_info.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

using namespace headlab;

namespace {

double seconds(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

using bench::gpt2_small_config;

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  if (threads > 0) at::set_num_threads(threads);
  else core::use_batch_threads();
  std::printf("threads: %d\n", at::get_num_threads());
  auto model = core::make_random_model(gpt2_small_config(), 1);

  const double circuits = seconds([&] { analysis::composition_scores(*model); });
  std::printf("circuits (Q/K/V composition of 144 × 144 heads, OV spectra): %.2f s (target ≤ 10 s)\n", circuits);

  std::vector<int64_t> clean(64), corrupt(64);
  for (int t = 0; t < 64; ++t) clean[t] = corrupt[t] = 1000 + 37 * t;
  corrupt[20] = 4242;
  core::RunRequest forward;
  forward.ids = clean;
  forward.capture = core::kCaptureNone;
  core::run(*model, forward);  // warm-up
  double one = 1e9;
  for (int i = 0; i < 3; ++i) one = std::min(one, seconds([&] { core::run(*model, forward); }));
  std::printf("one full forward at 64 tokens: %.1f ms\n", one * 1e3);

  analysis::PatchRequest r;
  r.clean = clean;
  r.corrupt = corrupt;
  r.answer = 11;
  r.wrong = 12;
  r.exact = false;
  const double attribution = seconds([&] { analysis::patch_activations(*model, r); });
  std::printf("attribution patching, every head's z at once: %.1f ms = %.2f× one forward (target ≤ 3×; the corrupted "
              "forward, and one differentiable clean run with its backward that also gives the clean metric)\n",
              attribution * 1e3, attribution / one);
  r.exact = true;
  r.attribution = false;
  analysis::PatchResult result;
  const double exact = seconds([&] { result = analysis::patch_activations(*model, r); });
  const double floor = double(result.layers_run) / 12.0;
  std::printf("exact patching, 144 heads' z one at a time: %.2f s = %.1f× one forward (target ≤ 8×); the re-runs "
              "computed %lld layers = %.0f forwards' worth, so %.2f× of that floor\n",
              exact, exact / one, static_cast<long long>(result.layers_run), floor, exact / one / floor);
  return 0;
}
