// Workbench live-path benchmark (not a test): a Mixer slider move re-runs the model from the changed
// layer (WorkbenchEngine, 1 intra-op thread as beside the GUI) and re-colours the recomputed maps
// for upload (the CPU half of HeadTextures::sync; the GL upload itself is measured in the window,
// HEADLAB_FRAME_STATS=1). Targets: slider move → maps uploaded ≤ 16 ms median on the
// default model. Shapes: the default model (4 layers × 8 heads, 256 wide, 8000 vocab) at 32/128/512
// tokens, and BERT-base (12 × 12, 768 wide, 30522 vocab) at 128 tokens.
// Run: build/tests/bench_gui_live [--repeats N] [--threads N (default: the worker's)] [--tokens T (one length,
// default-shaped model only)]
#include "app/work/workbench_engine.h"
#include "app/layout/colormap.h"
#include "app/document/controls_edit.h"
#include "core/model/system_info.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace headlab;

namespace {

std::string write_config(const std::string& name, int layers, int heads, int hidden, int vocab) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/mha.json");
  auto c = nlohmann::json::parse(in);
  c["name"] = name;
  c["vocab_size"] = vocab;
  c["hidden_size"] = hidden;
  c["max_positions"] = 512;
  c["ffn"]["inner_size"] = hidden * 4;
  c["encoder"]["layers"] = layers;
  c["encoder"]["attention"]["heads"] = heads;
  c["encoder"]["attention"]["kv_heads"] = heads;
  c["encoder"]["attention"]["key_size"] = hidden / heads;
  c["encoder"]["attention"]["value_size"] = hidden / heads;
  const auto path = std::filesystem::temp_directory_path() / ("bench_gui_" + name + ".json");
  std::ofstream(path) << c.dump(1);
  return path.string();
}

std::string words(int n) {
  std::string text;
  for (int i = 0; i < n - 1; ++i) text += "w" + std::to_string(i * 7919 % 997) + " ";
  return text + "[MASK]";
}

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void bench(const std::string& name, int layers, int heads, int hidden, int vocab, int tokens, int repeats) {
  app::WorkbenchEngine engine;
  auto summary = engine.load_random(write_config(name, layers, heads, hidden, vocab), 1);
  app::RunInput in;
  in.text = words(tokens);
  auto first = engine.run(in, nullptr, {});
  std::vector<uint8_t> rgba;
  for (int layer : {layers - 1, layers / 2, 0}) {
    std::vector<double> run_ms, colour_ms, model_ms;
    for (int r = 0; r < repeats; ++r) {
      app::set_gate(in.controls, headlab::core::Stack::Encoder, layer, 1, r % 2 ? 0.25f : 0.75f, heads);  // a slider step
      const auto t0 = std::chrono::steady_clock::now();
      auto snap = engine.run(in, nullptr, {});
      const auto t1 = std::chrono::steady_clock::now();
      // Re-colour every recomputed layer's maps, as the UI thread does before glTexSubImage2D.
      const auto& maps = snap->attentions[0];
      for (int l = snap->recomputed_from; l < layers; ++l) {
        const auto& sm = maps.layers[l].stages[static_cast<int>(app::Stage::U)];
        rgba.resize(static_cast<size_t>(sm.rows) * sm.cols * 4);
        for (int h = 0; h < sm.heads; ++h) {
          auto range = app::map_range(sm.head(h), static_cast<size_t>(sm.rows) * sm.cols, false, false, false);
          app::colorize(sm.head(h), sm.rows, sm.cols, range, app::Colormap::Viridis, rgba.data());
        }
      }
      const auto t2 = std::chrono::steady_clock::now();
      run_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      model_ms.push_back(snap->model_ms);
      colour_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }
    std::printf("%-18s T=%-3d gate in layer %-2d  run %7.1f ms (forward %7.1f)  colour %5.1f ms  total %7.1f ms (median of %d)\n",
                name.c_str(), tokens, layer, median(run_ms), median(model_ms), median(colour_ms),
                median(run_ms) + median(colour_ms), repeats);
  }
  (void)first;
  (void)summary;
}

}  // namespace

int main(int argc, char** argv) {
  core::use_passive_openmp(argv);  // as headlab does
  int repeats = 9, threads = 0, only_tokens = 0;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--tokens") == 0) only_tokens = std::atoi(argv[i + 1]);
  }
  core::use_interactive_threads();
  if (threads > 0) torch::set_num_threads(threads);  // to compare with the worker's setting
  const auto info = core::system_info(true);
  std::printf("BLAS %s, GEMM %.0f GFLOP/s, %d intra-op thread(s)\n", info.blas_kind.c_str(), info.gemm_gflops, info.torch_threads);
  // As deep as the shipped default (5 layers).
  std::ifstream shipped(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default/config.json");
  const int layers = nlohmann::json::parse(shipped).at("encoder").at("layers").get<int>();
  if (only_tokens > 0) {
    bench("default-shaped", layers, 8, 256, 8000, only_tokens, repeats);
    return 0;
  }
  for (int tokens : {32, 128, 512}) bench("default-shaped", layers, 8, 256, 8000, tokens, repeats);
  bench("bert-base-shaped", 12, 12, 768, 30522, 128, repeats);
  return 0;
}
