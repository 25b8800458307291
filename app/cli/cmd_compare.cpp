// `headlab compare MODEL… --data FILE… [--analyze FILE…] --out DIR`: attention variants trained alike,
// side by side (analysis/variant_comparison.h): held-out quality, parameters, forward time, KV cache
// per token, roles, confidence, key-query spectra and the rank of the attention logit matrices
// (the low-rank bottleneck). Writes comparison.md, comparison.json, figures/ and reports/.
#include "analysis/dataset.h"
#include "analysis/variant_comparison.h"
#include "app/cli/batch_memory.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "core/model/model.h"
#include "core/model_folder.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <memory>

namespace headlab::app {
namespace {

struct CompareCliOptions {
  std::string device;  // --device
  std::vector<std::string> models;
  analysis::CompareOptions options;
  std::string out;
  int threads = 0;
  bool force = false;
};

int compare_command(CompareCliOptions& c) {
  check_output_folder("--out", c.out, {"comparison.md"}, c.force);
  if (c.threads > 0) at::set_num_threads(c.threads);
  c.options.progress = [](const std::string& model, const std::string& stage) {
    std::fprintf(stderr, "%s: %s\n", model.c_str(), stage.c_str());
  };
  const torch::Device device = device_option(c.device);  // refused before any model loads
  // Every folder and file is checked before the first model is measured (minutes each).
  for (const auto& folder : c.models) check_seq_len(core::open_model_folder(folder).config, c.options.seq_len, folder);
  try {
    analysis::expand_dataset_paths(c.options.data);
    if (!c.options.analyze_data.empty()) analysis::expand_dataset_paths(c.options.analyze_data);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  std::vector<analysis::ModelSummary> summaries;
  for (const auto& folder : c.models) {
    auto model = core::load_model(folder);
    place_model(*model, device);
    try {
      summaries.push_back(analysis::summarize_model(*model, folder, c.options));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    const auto& s = summaries.back();
    std::printf("%-40s %-28s loss %.4f  top-1 %6.2f%%  %lld parameters  %.2f ms  logit rank %.1f (max %d)\n",
                folder.c_str(), s.attention.c_str(), s.loss, 100 * s.accuracy, static_cast<long long>(s.parameters),
                s.forward_ms, s.logit_rank_mean, s.logit_rank_max);
  }
  const auto written = analysis::write_comparison(summaries, c.options, c.out);
  std::printf("wrote %s/: ", c.out.c_str());
  for (size_t i = 0; i < written.size(); ++i) std::printf("%s%s", i ? ", " : "", written[i].c_str());
  std::printf(", reports/\n");
  return 0;
}

}  // namespace

void add_compare_command(CLI::App& app, Action& action) {
  auto c = std::make_shared<CompareCliOptions>();
  auto* cmd = app.add_subcommand("compare", command_description("compare"));
  cmd->add_option("models", c->models, "Model folders (trained alike)")->required();
  cmd->add_option("--data", c->options.data, "Held-out text: quality, forward time, logit ranks")->required();
  cmd->add_option("--analyze", c->options.analyze_data,
                  "Text or CoNLL-U for the head analyses (CoNLL-U gives syntactic roles; default: --data)");
  cmd->add_option("--limit", c->options.limit, "Sentences the head analyses read (default 500, 0 = all)")
      ->check(non_negative());
  cmd->add_option("--seq-len", c->options.seq_len, "Tokens a held-out sequence (default 128)")->check(positive());
  cmd->add_option("--rank-sequences", c->options.rank_sequences,
                  "Held-out sequences whose logit matrices are measured (default 16)")
      ->check(positive());
  cmd->add_option("--timing-runs", c->options.timing_runs, "Forward passes timed (default 10)")->check(positive());
  cmd->add_option("--threads", c->threads, "Intra-op threads (default: all cores)")->check(non_negative());
  add_device_option(cmd, c->device);
  cmd->add_option("--out", c->out, "Folder for the comparison")->required();
  cmd->add_flag("--force", c->force, "Replace a comparison already in --out");
  cmd->callback([c, &action] { action = [c] { return compare_command(*c); }; });
}

}  // namespace headlab::app
