// Head-analysis benchmark (not a test). On a CoNLL-U file (default: UD EWT dev beside the checkout)
// and the shipped default model, prints:
//  - the bare forward time over the sentences (maps captured, LM head at one position) and the time
//    of `analyze` with confidence + positional + rare + syntactic (target ≤ 1.3× the forward),
//  - LRP per sentence against a forward per sentence (target ≤ 3×),
//  - peak memory (VmHWM) after the pass: run with --limit 500 and --limit 2000 (two processes) to
//    see that it stays flat in the dataset size.
// Run: build/tests/bench_analyze [--model DIR] [--data FILE] [--limit N] [--threads N] [--lrp-sentences N]
#include "analysis/analyze.h"
#include "analysis/dataset.h"
#include "analysis/lrp.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/system_info.h"
#include "shared_data.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

using namespace headlab;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string peak_memory() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return line.substr(6);
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  core::use_passive_openmp(argv);
  CLI::App app{"Head-analysis benchmark"};
  std::string model_dir = std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default";
  std::string data = (test::shared_data_dir() / "ud" / "en_ewt-ud-dev.conllu").string();
  int64_t limit = 0;
  int threads = 1, lrp_sentences = 200;
  app.add_option("--model", model_dir, "Model folder");
  app.add_option("--data", data, "CoNLL-U or text file");
  app.add_option("--limit", limit, "Sentences (0 = all)");
  app.add_option("--threads", threads, "Intra-op threads");
  app.add_option("--lrp-sentences", lrp_sentences, "Sentences for the LRP timing");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  auto model = core::load_model(model_dir);

  // The sentences as analyze tokenizes them.
  std::vector<analysis::TokenizedSentence> sentences;
  {
    analysis::DatasetReader reader(analysis::expand_dataset_paths({data}));
    for (analysis::DatasetSentence s; reader.next(s);) {
      if (limit > 0 && static_cast<int64_t>(sentences.size()) >= limit) break;
      auto ts = analysis::tokenize_sentence(model->config, *model->tokenizer, s);
      if (static_cast<int64_t>(ts.ids.size()) <= model->config.max_positions) sentences.push_back(std::move(ts));
    }
  }
  auto forward = [&](const analysis::TokenizedSentence& ts) {
    core::RunRequest request;
    request.ids = ts.ids;
    request.capture = core::kCaptureMixedWeights;
    request.logit_positions = {0};
    return core::run(*model, request);
  };
  for (int i = 0; i < 20 && i < static_cast<int>(sentences.size()); ++i) forward(sentences[i]);  // warm-up

  auto start = std::chrono::steady_clock::now();
  for (const auto& ts : sentences) forward(ts);
  const double bare = seconds_since(start);

  analysis::AnalyzeOptions o;
  o.data = {data};
  o.settings.metrics = {"confidence", "positional", "rare", "syntactic"};
  o.settings.limit = limit;
  o.examples = 0;
  start = std::chrono::steady_clock::now();
  const auto result = analysis::analyze(*model, o);
  const double measured = seconds_since(start);

  const int n_lrp = std::min<int>(lrp_sentences, static_cast<int>(sentences.size()));
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < n_lrp; ++i) forward(sentences[i]);
  const double forward_some = seconds_since(start);
  start = std::chrono::steady_clock::now();
  double worst = 0;
  for (int i = 0; i < n_lrp; ++i) {
    analysis::LrpTarget target;
    target.position = static_cast<int64_t>(sentences[i].ids.size()) - 2;
    worst = std::max(worst, analysis::lrp_relevance(*model, sentences[i].ids, target).relative_residual());
  }
  const double lrp = seconds_since(start);

  std::printf("model %s, %d thread(s), %zu sentences (%lld measured, %lld skipped)\n", model_dir.c_str(), threads,
              sentences.size(), static_cast<long long>(result.report.sentences),
              static_cast<long long>(result.report.skipped));
  std::printf("bare forward over the sentences     %8.2f s\n", bare);
  std::printf("analyze conf+pos+rare+syntactic     %8.2f s   ratio %.2f (target <= 1.3; includes reading and tokenizing)\n",
              measured, measured / bare);
  std::printf("LRP per sentence (%d sentences)     %8.2f ms  forward %.2f ms  ratio %.2f (target <= 3); worst residual %.2e\n",
              n_lrp, 1000 * lrp / n_lrp, 1000 * forward_some / n_lrp, lrp / forward_some, worst);
  std::printf("peak memory (VmHWM)                %s\n", peak_memory().c_str());
  return 0;
}
