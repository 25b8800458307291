// `headlab predict --model DIR --text "The [MASK] sat on the mat." [--top-k 5]`: the top-k fills of
// each [MASK] (masked LM) or the next token (causal LM / encoder-decoder), with probabilities.
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "core/asset_paths.h"
#include "core/model/run.h"
#include "core/model/system_info.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/token_lookup.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <cstdio>
#include <iostream>
#include <memory>

namespace headlab::app {
namespace {

struct PredictOptions {
  std::string device;  // --device
  std::string model, text, target;
  int top_k = 5;
};

void print_top_k(const core::Tokenizer& tokenizer, const torch::Tensor& logits, int k) {
  auto probs = torch::softmax(logits.to(torch::kFloat64), -1);
  auto [values, indices] = probs.topk(std::min<int64_t>(k, probs.size(0)));
  for (int64_t i = 0; i < values.size(0); ++i) {
    const int64_t id = indices[i].item<int64_t>();
    // Three significant digits: a random model's 0.004% still ranks its candidates.
    std::printf("  %-16s %8.3g%%  (id %lld)\n", core::token_name(&tokenizer, id).c_str(), 100 * values[i].item<double>(),
                static_cast<long long>(id));
  }
}

int predict_command(const PredictOptions& o) {
  core::use_batch_threads();
  auto model = load_model_on(o.model, o.device);
  if (!model->tokenizer) throw UsageError(core::no_tokenizer(o.model));
  const auto& tok = *model->tokenizer;
  core::RunRequest request;
  request.capture = core::kCaptureNone;
  const auto kind = model->config.kind;
  if (kind != core::StackKind::EncoderDecoder && !o.target.empty())
    throw UsageError("--target is an encoder-decoder's decoder text; " + o.model + " has one stack, which reads --text alone");
  if (kind == core::StackKind::Encoder) {
    request.ids = require_tokens(core::model_encoding(model->config, tok, o.text).ids, "--text");
    const auto mask = tok.mask_id();
    if (!mask) throw UsageError("the tokenizer has no mask token");
    auto trace = core::run(*model, request);
    int found = 0;
    for (size_t t = 0; t < request.ids.size(); ++t) {
      if (request.ids[t] != *mask) continue;
      std::printf("%s #%d (token %zu):\n", core::token_name(&tok, *mask).c_str(), ++found, t);
      print_top_k(tok, trace->logits[static_cast<int64_t>(t)], o.top_k);
    }
    if (!found) throw UsageError("the text has no " + core::token_name(&tok, *mask) + " token to fill");
    return 0;
  }
  if (kind == core::StackKind::Decoder) {
    request.ids = require_tokens(core::causal_prompt_ids(model->config, tok, o.text), "--text");
  } else {
    request.ids = require_tokens(core::encoder_input_ids(model->config, tok, o.text), "--text");
    auto begin = core::decoder_start_id(model->config, tok);
    if (!begin) throw UsageError("the tokenizer has no begin token for the decoder");
    request.decoder_ids = {*begin};
    const auto prefix = tok.encode(o.target, false).ids;
    request.decoder_ids.insert(request.decoder_ids.end(), prefix.begin(), prefix.end());
  }
  auto trace = core::run(*model, request);
  std::printf("next token:\n");
  print_top_k(tok, trace->logits[trace->logits.size(0) - 1], o.top_k);
  return 0;
}

}  // namespace

void add_predict_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict", command_description("predict"));
  cmd->add_option("--model", options->model, "Model folder (default: the shipped default model)");
  add_device_option(cmd, options->device);
  cmd->add_option("--text", options->text, "Input text (with [MASK] for a masked LM)")->required();
  cmd->add_option("--target", options->target, "Encoder-decoder: the decoder's text so far");
  cmd->add_option("--top-k", options->top_k, "How many candidates")->check(number_in(1, 1000));
  cmd->callback([options, &action] { action = [options] {
      require_text(options->text, "--text");
      if (options->model.empty()) options->model = core::default_model_or_throw();
      return predict_command(*options);
    }; });
}

}  // namespace headlab::app
