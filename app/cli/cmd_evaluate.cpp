// `headlab evaluate --model DIR --data FILE… [--seq-len N] [--held-out F]`: how well a model reads a
// text — the share of its tokens the tokenizer cannot spell ([UNK]), and the model's masked-LM (or
// next-token) loss and top-1 on it, measured as the trainer measures its held-out split. Both are
// counted over the same tokens: the text cut into --seq-len sequences as training cuts it, a file's
// tail shorter than one sequence left out.
#include "app/cli/batch_memory.h"
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "app/cli/progress.h"
#include "core/asset_paths.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer_files.h"
#include "core/train/data.h"
#include "core/train/trainer.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace headlab::app {
namespace {

struct EvaluateCliOptions {
  std::string device;  // --device
  std::string model;
  std::vector<std::string> data;
  // The trainer's defaults (core/train/trainer.h): with them, and the trainer's --held-out, its
  // held-out split is masked as the trainer masked it.
  int64_t seq_len = 128, batch_tokens = 4096;
  double held_out = 0;  // 0: every example; else only the trainer's held-out split at this fraction
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
};

struct FileResult {
  std::string name;
  int64_t tokens = 0, unknown = 0, examples = 0;
  core::train::EvalResult eval;
};

int evaluate_command(const EvaluateCliOptions& c) {
  if (c.threads > 0) torch::set_num_threads(c.threads);
  auto model = load_model_on(c.model, c.device);
  if (!model->tokenizer) throw UsageError(core::no_tokenizer(c.model));
  const auto& tokenizer = *model->tokenizer;
  if (model->config.encoder && model->config.decoder)
    throw UsageError(c.model + " is an encoder-decoder model; evaluate reads masked-LM and causal models");
  // A stack of decoders reads text left to right; an encoder is a masked LM.
  const auto objective = core::train::objective_of(model->config);
  const auto specials = core::train::special_tokens(tokenizer);
  const auto unk = tokenizer.unk_id();
  check_seq_len(model->config, c.seq_len, c.model);
  const int64_t batch_size = std::max<int64_t>(1, c.batch_tokens / c.seq_len);
  check_batch_memory(model->config, batch_size, c.seq_len, false, "evaluate");
  std::vector<FileResult> results;
  FileResult total{"all"};
  // Examples are counted across the files in order, as `headlab train --data` counts them, so
  // --held-out picks the very examples training on these files (in this order) held out.
  const int64_t period = core::train::held_out_period(c.held_out);
  int64_t index = 0;
  std::vector<std::vector<core::train::Example>> chosen(c.data.size());
  std::vector<core::train::Example> last;  // the last example of the last file that has one
  size_t last_file = 0;
  std::optional<core::train::TooShortForASequence> too_short;  // the first file shorter than one sequence
  size_t short_files = 0;
  for (size_t f = 0; f < c.data.size(); ++f) {
    std::vector<core::train::Example> all;
    try {
      all = core::train::load_text_dataset({c.data[f]}, tokenizer, objective, c.seq_len, 0).train;
    } catch (const core::train::TooShortForASequence& e) {  // measures nothing; said so below
      if (!too_short) too_short = e;
      ++short_files;
    }
    if (!all.empty()) last = {all.back()}, last_file = f;
    for (auto& ex : all)
      if (!period || ++index % period == 0) chosen[f].push_back(std::move(ex));
  }
  if (short_files == c.data.size()) throw *too_short;  // nothing anywhere: the reason, with what to change
  // Too few examples for one in 1/F: the trainer holds out the last one (core/train/data.cpp), and so
  // is it measured here.
  bool any = false;
  for (const auto& examples : chosen) any = any || !examples.empty();
  if (period && !any && !last.empty()) chosen[last_file] = last;
  for (size_t f = 0; f < c.data.size(); ++f) {
    const std::string& path = c.data[f];
    std::vector<core::train::Example>& examples = chosen[f];
    FileResult r{path};
    for (const auto& ex : examples)
      for (int64_t id : ex.source) {
        bool special = false;
        for (int64_t s : specials.specials) special = special || (s == id && (!unk || id != *unk));
        if (special) continue;
        ++r.tokens;
        if (unk && id == *unk) ++r.unknown;
      }
    r.examples = static_cast<int64_t>(examples.size());
    Progress progress(c.data[f], "batches");  // a large book takes minutes
    r.eval = core::train::evaluate_examples(model->module, examples, objective, specials, core::train::Masking{},
                                            c.seed, batch_size, nullptr,
                                            [&progress](int64_t done, int64_t total) { progress(done, total); });
    progress.finish();
    total.tokens += r.tokens;
    total.unknown += r.unknown;
    total.examples += r.examples;
    total.eval.loss += r.eval.loss * double(r.eval.targets);
    total.eval.accuracy += r.eval.accuracy * double(r.eval.targets);
    total.eval.targets += r.eval.targets;
    results.push_back(r);
  }
  if (total.eval.targets > 0) {
    total.eval.loss /= double(total.eval.targets);
    total.eval.accuracy /= double(total.eval.targets);
  }
  if (results.size() > 1) results.push_back(total);
  const char* what = objective == core::train::Objective::Mlm ? "masked LM (BERT masking, 15%: 80/10/10)" : "next token";
  if (c.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results)
      out.push_back({{"file", r.name}, {"tokens", r.tokens}, {"unknown", r.unknown},
                     {"unknown_share", r.tokens ? nlohmann::json(double(r.unknown) / double(r.tokens)) : nlohmann::json()},
                     {"examples", r.examples}, {"targets", r.eval.targets},
                     {"loss", r.eval.targets ? nlohmann::json(r.eval.loss) : nlohmann::json()},
                     {"top1", r.eval.targets ? nlohmann::json(r.eval.accuracy) : nlohmann::json()}});
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << c.model << ": " << what << ", " << c.seq_len << "-token sequences"
            << (c.held_out > 0 ? ", the trainer's held-out split only" : "")
            << " (tokens, [UNK] and loss over those sequences; a file's tail shorter than one is left out)\n";
  for (const auto& r : results) {
    if (!r.eval.targets) {  // nothing measured (no held-out example in this file): no number to print
      std::printf("%-60s tokens %9lld  no %s measured\n", r.name.c_str(), static_cast<long long>(r.tokens),
                  c.held_out > 0 ? "held-out example" : "target");
      continue;
    }
    char line[512];
    std::snprintf(line, sizeof line, "%-60s tokens %9lld  [UNK] %6.3f%%  loss %.3f  top-1 %5.1f%%  (%lld targets)\n",
                  r.name.c_str(), static_cast<long long>(r.tokens),
                  r.tokens ? 100.0 * double(r.unknown) / double(r.tokens) : 0.0, r.eval.loss, 100.0 * r.eval.accuracy,
                  static_cast<long long>(r.eval.targets));
    std::cout << line;
  }
  return 0;
}

}  // namespace

void add_evaluate_command(CLI::App& app, Action& action) {
  auto c = std::make_shared<EvaluateCliOptions>();
  auto* cmd = app.add_subcommand("evaluate", command_description("evaluate"));
  cmd->add_option("--model", c->model, "Model folder with a tokenizer (default: the shipped default model)");
  add_device_option(cmd, c->device);
  cmd->add_option("--data", c->data, "Plain-text files (each reported on its own, then together)")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--seq-len", c->seq_len, "Tokens per sequence, as in training (default 128, train's)")
      ->check(number_in(4, 100000));
  cmd->add_option("--batch-tokens", c->batch_tokens,
                  "Tokens per batch, which sets which examples share a mask draw (default 4096, train's)")
      ->check(positive());
  cmd->add_option("--held-out", c->held_out,
                  "Only the examples `headlab train --held-out F` holds out of these files, given in the same order (default: all)")
      ->check(number_in(0.0, 0.5));
  cmd->add_option("--seed", c->seed,
                  "Mask seed (default 0, train's: with train's --seq-len, --batch-tokens and --held-out it masks the "
                  "held-out split as train did; train scores at most --eval-batches batches of it)")
      ->check(non_negative());
  cmd->add_option("--threads", c->threads, "Intra-op threads (default: all cores)")->check(non_negative());
  cmd->add_flag("--json", c->json, "Print JSON instead of a table");
  cmd->callback([c, &action] { action = [c] {
      if (c->model.empty()) c->model = core::default_model_or_throw();
      return evaluate_command(*c);
    }; });
}

}  // namespace headlab::app
