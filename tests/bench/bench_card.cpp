// bench_card DIR [--device cuda] [--tokens 128,1024] [--generate 32] [--repeat 5] [--precision exact|fast]: HeadLab on a card
// (or, with --device cpu, the same measurements on the CPU), on a real-size folder
// (tests/bench/make_real_size.py) or any model folder. tests/bench/bench_card_reference.py times
// the same forward passes in Python transformers on the same card.
//
// What is measured, in this order, in one process; each time is the median of --repeat runs after
// one warm-up, with the card synchronised before the clock stops:
//   open       core::load_model and the move to the device (weights keep their stored dtype there).
//   forward T  a run of T tokens with every attention map captured (W, U and the residual stream),
//              left on the card, as the window's live runs do.
//   gate       a gate closed in the first and in the middle layer of the 128-token run: the time to
//              new maps (the run resumes from the gated layer).
//   LRP        analysis::lrp_relevance of the last position's top logit at the first T.
//   generate   --generate tokens greedily with the KV cache after a 16-token prompt: tokens/s.
//   memory     the card's memory in use after the runs (free vs total, from the CUDA runtime).
// --precision fast (core/precision.h) multiplies BF16 weights in BF16, as transformers computes a BF16
// model, and lets float32 products use TF32 (transformers leaves TF32 off); exact (the default) is float32.
#include "bench_models.h"
#include "analysis/lrp.h"
#include "core/model/device.h"
#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/precision.h"
#include "core/model/run.h"

#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace headlab::core;
using headlab::bench::now;

namespace {


void sync(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Median seconds of `repeat` calls of f after one warm-up.
double median_seconds(torch::Device device, int repeat, const std::function<void()>& f) {
  f();
  sync(device);
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = now();
    f();
    sync(device);
    times.push_back(now() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::vector<int64_t> some_ids(int64_t n, int64_t vocab) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back((i * 7919 + 13) % std::min<int64_t>(vocab, 50000));
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_card DIR [--device cuda] [--tokens 128,1024] [--generate 32] [--repeat 5] "
                         "[--precision exact|fast]\n");
    return 2;
  }
  std::string folder = argv[1], device_text = "cuda", tokens_text = "128,1024", precision_text = "exact";
  int generate_count = 32, repeat = 5;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--device") device_text = value;
    else if (key == "--tokens") tokens_text = value;
    else if (key == "--generate") generate_count = std::stoi(value);
    else if (key == "--repeat") repeat = std::stoi(value);
    else if (key == "--precision") precision_text = value;
    else {
      std::fprintf(stderr, "bench_card: unknown option %s\n", key.c_str());
      return 2;
    }
  }
  std::vector<int64_t> lengths;
  std::stringstream in(tokens_text);
  for (std::string item; std::getline(in, item, ',');) lengths.push_back(std::stoll(item));
  try {
    const torch::Device device = parse_device(device_text);
    set_precision(parse_precision(precision_text));
    double t0 = now();
    auto model = load_model(folder);
    move_to_device(*model, device);
    sync(device);
    std::printf("bench_card %s on %s (%s precision): %s, %d layers, weights %s\n", folder.c_str(), device_name(device).c_str(),
                precision_name(current_precision()),
                model->config.family.c_str(), model->module->layer_count(Stack::Decoder) + model->module->layer_count(Stack::Encoder),
                model->weights_dtype.c_str());
    std::printf("open + move      %8.3f s\n", now() - t0);
    const Stack stack = model->config.kind == StackKind::Encoder ? Stack::Encoder : Stack::Decoder;
    const int layers = model->module->layer_count(stack);
    for (const int64_t T : lengths) {
      RunRequest request;
      request.ids = some_ids(T, model->config.vocab_size);
      std::shared_ptr<const Trace> trace;
      const double forward = median_seconds(device, repeat, [&] { trace = run(*model, request); });
      std::printf("forward %5lld    %8.2f ms  (every map: %d layers × [heads, T, T] kept on the device)\n", (long long)T,
                  forward * 1e3, layers);
      if (T != lengths.front()) continue;
      for (const int layer : {0, layers / 2}) {
        const int heads = static_cast<int>(trace->main_stack().layers[layer].self.weights.size(0));
        const double gate = median_seconds(device, repeat, [&] {
          RunRequest gated = request;
          auto& gates = gated.controls.at(stack, layer).gates;
          gates.assign(static_cast<size_t>(heads), 1.0f);
          gates[0] = 0.0f;
          gated.previous = trace;
          (void)run(*model, gated);
        });
        std::printf("gate layer %-3d   %8.2f ms  (re-run from the gated layer)\n", layer, gate * 1e3);
      }
      const double lrp = median_seconds(device, std::min(repeat, 3), [&] {
        (void)headlab::analysis::lrp_relevance(*model, request.ids);
      });
      std::printf("LRP %5lld        %8.2f ms  (%.2f× the forward)\n", (long long)T, lrp * 1e3, lrp / forward);
    }
    if (generate_count > 0 && model->config.kind != StackKind::Encoder) {
      GenerateRequest g;
      g.prompt = some_ids(16, model->config.vocab_size);
      g.max_new = generate_count;
      std::vector<double> stamps;
      (void)generate(*model, g);  // warm-up
      sync(device);
      (void)generate(*model, g, [&](const GenerationStep&) {
        sync(device);
        stamps.push_back(now());
      });
      if (stamps.size() > 2)
        std::printf("generate         %8.1f tokens/s  (KV cache, after the first of %zu)\n",
                    double(stamps.size() - 1) / (stamps.back() - stamps.front()), stamps.size());
    }
    size_t free_bytes = 0, total_bytes = 0;
    if (device.is_cuda() && card_memory(device.index(), free_bytes, total_bytes))
      std::printf("card memory      %8.2f GB in use of %.2f GB\n", (total_bytes - free_bytes) / 1e9, total_bytes / 1e9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_card: %s\n", e.what());
    return 1;
  }
  return 0;
}
