// bench_real_size DIR [--tokens 64] [--generate 32] [--skip-lrp] [--kv-at 0]: HeadLab on a real-size
// folder (tests/bench/make_real_size.py: Llama-3.1-8B, 3.2-1B or 3.2-3B shapes, random BF16 weights).
//
// What is measured, in this order, in one process (threads: HEADLAB_THREADS or every idle core):
//   open       core::load_model: config, headers, the module with placeholders, every matrix mapped.
//   forward    a run of --tokens tokens with every attention map captured (W, U, O and the residual
//              stream), best of two, against the machine's physical limit: FLOPs ÷ the GEMM rate
//              measured here (a [T, 4096]·[4096, 4096] product in float32, as the model's GEMMs) plus
//              the weights' bytes streamed once at the memory bandwidth measured here (a 512 MiB read).
//   gates      a gate closed in the last, the middle and the first layer: the time to new maps (the
//              run resumes from the gated layer).
//   LRP        analysis::lrp_relevance of the last position's top logit, ÷ the forward time.
//   generate   --generate tokens greedily with the KV cache: seconds per token after the first.
//   KV at N    (--kv-at N) one token from a cache of N tokens ÷ recomputing N + 1 tokens.
//   memory     VmHWM (peak resident), and RssAnon / RssFile now: the mapped files' pages are page
//              cache (RssFile), shared and evictable; the process's own memory is RssAnon.
#include "bench_models.h"
#include "analysis/lrp.h"
#include "core/memory_budget.h"
#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/system_info.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace headlab::core;
using headlab::bench::now;

namespace {



std::string gb(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
  return text;
}

// GFLOP/s of the model's own GEMM shape: [T, K]·[K, K] float32.
double gemm_rate(int64_t T, int64_t K) {
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({T, K}), b = torch::randn({K, K});
  (void)torch::mm(a, b);
  int reps = 0;
  const double t0 = now();
  while (now() - t0 < 1.0) {
    (void)torch::mm(a, b);
    ++reps;
  }
  return 2.0 * T * K * K * reps / (now() - t0) / 1e9;
}

// Bytes/s of reading 512 MiB once (summing it), after a warm-up pass.
double read_bandwidth() {
  torch::NoGradGuard no_grad;
  const auto big = torch::ones({int64_t(1) << 27});  // 512 MiB of float32
  (void)big.sum();
  const double t0 = now();
  (void)big.sum().item<float>();
  return double(big.numel() * 4) / (now() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  use_passive_openmp(argv);
  keep_freed_memory();
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_real_size DIR [--tokens 64] [--generate 32] [--skip-lrp] [--kv-at N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int64_t tokens = 64, new_tokens = 32, kv_at = 0;
  bool lrp = true;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tokens" && i + 1 < argc) tokens = std::atoll(argv[++i]);
    else if (a == "--generate" && i + 1 < argc) new_tokens = std::atoll(argv[++i]);
    else if (a == "--kv-at" && i + 1 < argc) kv_at = std::atoll(argv[++i]);
    else if (a == "--skip-lrp") lrp = false;
  }
  use_batch_threads();
  std::printf("threads %d\n", at::get_num_threads());

  double t0 = now();
  auto model = load_model(dir);
  const double open_s = now() - t0;
  const auto& c = model->config;
  const auto& stack = *c.decoder;
  std::printf("open          %.2f s  (%s, %.2f B parameters, %s mapped, RssAnon %s)\n", open_s, c.name.c_str(),
              c.parameter_count() / 1e9, gb(model->mapped_bytes).c_str(), gb(process_memory("RssAnon")).c_str());

  std::vector<int64_t> ids;
  for (int64_t i = 0; i < tokens; ++i) ids.push_back(100 + (i * 7919) % 30000);
  RunRequest request;
  request.ids = ids;
  request.capture = kCaptureWeights | kCaptureMixedWeights | kCaptureHeadOutputs | kCaptureResidual;
  double forward_s = 1e9;
  std::shared_ptr<const Trace> trace;
  for (int i = 0; i < 2; ++i) {
    t0 = now();
    trace = run(*model, request);
    forward_s = std::min(forward_s, now() - t0);
  }
  // Measured before anything else allocates (the bandwidth measurement reads a buffer of its own).
  const int64_t peak_after_forward = process_memory("VmHWM"), anon = process_memory("RssAnon"), file = process_memory("RssFile");
  // FLOPs: every projection (2·T per weight; an untied model's token table is a lookup, a tied one's
  // is also the LM head) + scores and U·V (2·2·T²·heads·d per layer, causal: half).
  const double matmul_params =
      double(c.parameter_count()) - (c.lm_head.tied ? 0.0 : double(c.vocab_size) * c.hidden_size);
  const double flops = 2.0 * tokens * matmul_params +
                       2.0 * tokens * tokens * stack.attention.heads * stack.attention.key_size * stack.layers;
  const double rate = gemm_rate(tokens, c.hidden_size) * 1e9;
  const double bandwidth = read_bandwidth();
  const double limit = flops / rate + double(model->mapped_bytes) / bandwidth;
  std::printf("forward       %.2f s at %lld tokens, every map captured; limit %.2f s (%.2f TFLOP at %.0f GFLOP/s + %s "
              "at %.1f GB/s) → %.2f× the limit\n",
              forward_s, static_cast<long long>(tokens), limit, flops / 1e12, rate / 1e9, gb(model->mapped_bytes).c_str(),
              bandwidth / 1e9, forward_s / limit);
  std::printf("memory        VmHWM %s, RssAnon %s, RssFile %s after the forward (weights %s)\n", gb(peak_after_forward).c_str(),
              gb(anon).c_str(), gb(file).c_str(), gb(model->mapped_bytes).c_str());

  for (const int layer : {stack.layers - 1, stack.layers / 2, 0}) {
    RunRequest gated = request;
    gated.previous = trace;
    gated.controls.at(Stack::Decoder, layer).gates.assign(size_t(stack.attention.output_heads()), 1.0f);
    gated.controls.at(Stack::Decoder, layer).gates[0] = 0.0f;
    t0 = now();
    (void)run(*model, gated);
    std::printf("gate L%-3d     %.2f s to new maps\n", layer, now() - t0);
  }

  if (lrp) {
    t0 = now();
    const auto r = headlab::analysis::lrp_relevance(*model, ids);
    const double lrp_s = now() - t0;
    std::printf("LRP           %.2f s = %.2f× forward (relative residual %.1e); VmHWM now %s\n", lrp_s, lrp_s / forward_s,
                r.relative_residual(), gb(process_memory("VmHWM")).c_str());
  }

  if (new_tokens > 0) {
    GenerateRequest g;
    g.prompt = std::vector<int64_t>(ids.begin(), ids.begin() + std::min<int64_t>(16, tokens));
    g.max_new = static_cast<int>(new_tokens);
    std::vector<double> at;
    g.progress = [&](int done, int total) {
      if (done == total) at.push_back(now());
      return true;
    };
    t0 = now();
    const auto out = generate(*model, g);
    const double total_s = now() - t0;
    const double per_token = at.size() > 1 ? (at.back() - at.front()) / double(at.size() - 1) : total_s;
    std::printf("generate      %zu tokens in %.2f s: %.3f s a token from the KV cache (weights %s; streaming them "
                "once: %.3f s)\n",
                out.tokens.size(), total_s, per_token, gb(model->mapped_bytes).c_str(),
                double(model->mapped_bytes) / bandwidth);
  }

  if (kv_at > 0) {
    std::vector<int64_t> long_ids;
    for (int64_t i = 0; i < kv_at; ++i) long_ids.push_back(100 + (i * 104729) % 30000);
    GenerateRequest g;
    g.prompt = long_ids;
    g.max_new = 2;
    std::vector<double> at;
    g.progress = [&](int done, int total) {
      if (done == total) at.push_back(now());
      return true;
    };
    (void)generate(*model, g);
    const double cached = at.size() > 1 ? at[1] - at[0] : 0;
    RunRequest full;
    full.ids = long_ids;
    full.ids.push_back(7);
    full.capture = kCaptureNone;
    full.logit_positions = {kv_at};
    t0 = now();
    (void)run(*model, full);
    const double recompute = now() - t0;
    std::printf("KV at %-6lld  %.3f s a token from the cache vs %.2f s recomputing %lld tokens: %.3f×\n",
                static_cast<long long>(kv_at), cached, recompute, static_cast<long long>(kv_at + 1), cached / recompute);
  }
  std::printf("peak          VmHWM %s (with the bandwidth measurement's 512 MiB)\n", gb(process_memory("VmHWM")).c_str());
  return 0;
}
