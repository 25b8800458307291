// The Relevance view's cost (not a test): the window's run of a 128-token input on the shipped
// default model with and without the explanation (LRP input and head relevance, rollout, flow),
// after a gate change — what a user waits for while dragging a gate with the Relevance view open.
// Target: the explanation ≤ 100 ms at 128 tokens, 1 intra-op thread (flow, shown on request, too).
// Run: build/tests/bench_relevance [--model DIR] [--tokens N] [--repeats N] [--threads N]
#include "app/work/workbench_engine.h"
#include "app/document/controls_edit.h"
#include "core/model/system_info.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace headlab;

int main(int argc, char** argv) {
  core::use_passive_openmp(argv);
  CLI::App app{"Relevance-view benchmark"};
  std::string model_dir = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  int tokens = 128, repeats = 10, threads = 1;
  app.add_option("--model", model_dir, "Model folder");
  app.add_option("--tokens", tokens, "Input length in tokens (about)");
  app.add_option("--repeats", repeats, "Runs per measurement");
  app.add_option("--threads", threads, "Intra-op threads");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  app::WorkbenchEngine engine;
  const auto summary = engine.load(model_dir);
  const std::string words[] = {"the", "cat", "sat", "on", "a", "warm", "mat", "while", "old", "dogs", "slept", "."};
  app::RunInput in;
  while (static_cast<int>(engine.tokenize(in.text).ids.size()) < tokens - 1) in.text += words[in.text.size() % 12] + std::string(" ");
  in.text += "[MASK] .";
  const int heads = summary.attentions.at(0).output_heads;
  auto median_ms = [&](bool explain, double* explain_ms) {
    std::vector<double> runs, parts;
    for (int r = 0; r < repeats; ++r) {
      in.relevance.enabled = explain;
      app::set_gate(in.controls, headlab::core::Stack::Encoder, 0, 1, r % 2 ? 0.0f : 0.5f, heads);  // a gate change each run
      auto snap = engine.run(in, nullptr, {});
      runs.push_back(snap->run_ms);
      if (snap->relevance) parts.push_back(snap->relevance->ms);
    }
    std::sort(runs.begin(), runs.end());
    std::sort(parts.begin(), parts.end());
    if (explain_ms) *explain_ms = parts.empty() ? 0 : parts[parts.size() / 2];
    return runs[runs.size() / 2];
  };
  median_ms(true, nullptr);  // warm-up
  double explain = 0;
  const double plain = median_ms(false, nullptr);
  const double with = median_ms(true, &explain);
  in.relevance.flow = true;
  double explain_flow = 0;
  const double with_flow = median_ms(true, &explain_flow);
  std::printf("%zu tokens, %d thread(s), median of %d runs after a layer-0 gate change\n",
              engine.tokenize(in.text).ids.size(), threads, repeats);
  std::printf("run without relevance: %.1f ms\nrun with relevance:    %.1f ms (the explanation: %.1f ms; target <= 100 ms)\n",
              plain, with, explain);
  std::printf("with attention flow too: %.1f ms (the explanation: %.1f ms)\n", with_flow, explain_flow);
  return 0;
}
