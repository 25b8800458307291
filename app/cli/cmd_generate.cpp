// `headlab generate --model DIR (--prompt "…" | --ids 1,2,3) [--max-new N] [--temperature T --top-k K
// --top-p P --seed S] [--gate L.H=V …] [--no-cache] [--out DUMP.safetensors]`: a causal model (or an
// encoder-decoder) writes token by token from the KV cache (core/model/generate.h); the text is printed as
// it comes. The dump holds generated_ids (I64 [N]), and per step s and layer l
// step_attentions.{s}.{l} (F32 [h_v, T_s], the new query's row) and step_logits.{s} ([V]); with learned
// sinks step_sink_shares.{s}.{l} (F32 [h], the query's share of the sink).
#include "app/cli/cli.h"
#include "app/cli/cli_args.h"
#include "app/cli/cli_checks.h"
#include "core/model/generate.h"
#include "core/model/model.h"
#include "core/tokenizer/framing.h"
#include "core/model/safetensors_torch.h"
#include "core/model/system_info.h"
#include "core/stop_tokens.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

namespace headlab::app {
namespace {

struct GenerateOptions {
  std::string device;  // --device
  std::string model, prompt, ids, out;
  int max_new = 20;
  float temperature = 0, top_p = 1;
  int top_k = 0;
  uint64_t seed = 0;
  std::vector<std::string> gates;
  bool no_cache = false, force = false;
  bool by_ids = false;  // --ids given (else --prompt)
};

int generate_command(const GenerateOptions& o) {
  if (!o.out.empty()) check_output_file("--out", o.out, o.force);
  core::use_batch_threads();
  auto model = load_model_on(o.model, o.device);
  const auto* tok = model->tokenizer.get();
  core::GenerateRequest request;
  request.max_new = o.max_new;
  request.sampling = {o.temperature, o.top_k, o.top_p, o.seed};
  request.use_cache = !o.no_cache;
  const bool enc_dec = model->config.kind == core::StackKind::EncoderDecoder;
  if (o.by_ids) {
    request.prompt = parse_ids(o.ids, "--ids");
  } else {
    if (!tok) throw UsageError(core::no_tokenizer(o.model) + ": give --ids instead of --prompt");
    request.prompt = require_tokens(enc_dec ? core::encoder_input_ids(model->config, *tok, o.prompt)
                                            : core::causal_prompt_ids(model->config, *tok, o.prompt),
                                    "--prompt");
  }
  if (enc_dec) {
    auto begin = tok ? core::decoder_start_id(model->config, *tok) : model->config.decoder_start_id;
    request.decoder_prompt = {begin ? *begin : 0};
  }
  request.stop_ids = core::generation_stop_ids(o.model, tok, enc_dec, model->config.vocab_size);
  apply_gates(*model, core::Stack::Decoder, o.gates, request.controls);

  // The text as it comes: the decoded suffix beyond what is printed (byte-level pieces may only
  // form a character together, so the whole generation is decoded each step).
  std::vector<int64_t> generated;
  std::string printed;
  const auto start = std::chrono::steady_clock::now();
  auto on_step = [&](const core::GenerationStep& step) {
    generated.push_back(step.token);
    if (!tok) {
      std::printf("%s%lld", generated.size() > 1 ? "," : "", static_cast<long long>(step.token));
    } else {
      const std::string text = tok->decode(generated, true);
      if (text.compare(0, printed.size(), printed) == 0) std::fputs(text.c_str() + printed.size(), stdout);
      printed = text;
    }
    std::fflush(stdout);
  };
  const auto result = core::generate(*model, request, on_step);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n");
  std::fflush(stdout);  // the text's line ends before the summary on stderr, also in a log of both
  std::fprintf(stderr, "%zu tokens (%s) in %.2f s, %.1f ms a token; KV cache %s\n", result.tokens.size(),
               result.stopped.c_str(), seconds, result.tokens.empty() ? 0.0 : 1000 * seconds / result.tokens.size(),
               !request.use_cache     ? "off"
               : result.steps.empty() ? "unused (no token written)"
                                      : (std::to_string(result.steps.back().cache_bytes / 1024) + " KB").c_str());
  for (const auto& note : result.notes) std::fprintf(stderr, "note: %s\n", note.c_str());

  if (!o.out.empty()) {
    std::vector<std::pair<std::string, torch::Tensor>> dump;
    dump.emplace_back("generated_ids", torch::tensor(result.tokens, torch::kLong));
    for (size_t s = 0; s < result.steps.size(); ++s) {
      const auto& step = result.steps[s];
      dump.emplace_back("step_logits." + std::to_string(s), step.logits);
      for (size_t l = 0; l < step.attention.size(); ++l)
        dump.emplace_back("step_attentions." + std::to_string(s) + "." + std::to_string(l), step.attention[l]);
      for (size_t l = 0; l < step.sink_share.size(); ++l)
        if (step.sink_share[l].defined())
          dump.emplace_back("step_sink_shares." + std::to_string(s) + "." + std::to_string(l), step.sink_share[l]);
      for (size_t l = 0; l < step.cross_attention.size(); ++l)
        dump.emplace_back("step_cross_attentions." + std::to_string(s) + "." + std::to_string(l), step.cross_attention[l]);
    }
    auto metadata = dump_metadata(o.model, "prompt_ids", request.prompt);
    metadata["producer"] = "headlab generate";
    core::save_safetensors(o.out, dump, core::DType::F32, metadata);
  }
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<GenerateOptions>();
  auto* cmd = app.add_subcommand("generate", command_description("generate"));
  cmd->add_option("--model", o->model, "Model folder: a causal LM or an encoder-decoder")->required();
  add_device_option(cmd, o->device);
  auto* prompt = cmd->add_option("--prompt", o->prompt, "The text to continue (an encoder-decoder's source)");
  auto* ids = cmd->add_option("--ids", o->ids, "The prompt as token ids, e.g. 1,2,3")->excludes(prompt);
  cmd->add_option("--max-new", o->max_new, "Tokens to generate at most (default 20)")->check(number_in(0, 1 << 20));
  cmd->add_option("--temperature", o->temperature, "0 = greedy (default); above 0 samples")->check(number_in(0.0, 100.0));
  cmd->add_option("--top-k", o->top_k, "Sample among the K most probable tokens (0 = all)")->check(non_negative());
  cmd->add_option("--top-p", o->top_p,
                  "Sample among the most probable tokens holding probability P (nucleus); 1 = all (default). For "
                  "greedy decoding give --temperature 0")
      ->check(number_above(0.0, 1.0));
  cmd->add_option("--seed", o->seed, "Random seed: the same seed writes the same text")
      ->check(non_negative());
  cmd->add_option("--gate", o->gates, "Gate of a decoder head, LAYER.HEAD=VALUE in [0,1] (repeatable)");
  cmd->add_flag("--no-cache", o->no_cache, "Recompute the whole sequence at every step (the cache's baseline)");
  cmd->add_option("--out", o->out, "Dump generated_ids, step_logits.S and step_attentions.S.L (safetensors)");
  cmd->add_flag("--force", o->force, "Replace an existing --out");
  cmd->callback([o, ids, prompt, cmd, &action] {
    o->by_ids = ids->count() > 0;
    const bool prompt_given = prompt->count() > 0;
    // Greedy decoding draws nothing: a sampling option given without a temperature would be ignored.
    std::string sampling_only;
    if (o->temperature == 0)
      for (const char* name : {"--top-k", "--top-p", "--seed"})
        if (cmd->count(name) > 0) sampling_only = name;
    action = [o, prompt_given, sampling_only] {
      if (!sampling_only.empty())
        throw UsageError(sampling_only + " shapes sampling, and --temperature 0 (the default) decodes greedily: give "
                         "--temperature T > 0 to sample, or leave " + sampling_only + " out");
      if (!o->by_ids && !prompt_given) throw UsageError("give --prompt or --ids");
      if (!o->by_ids) require_text(o->prompt, "--prompt");
      return generate_command(*o);
    };
  });
}

}  // namespace headlab::app
