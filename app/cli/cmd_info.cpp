// `headlab info [--model DIR] [--json] [--check]` and `headlab info --system`. The description
// comes from the folder's config.json, its weight files' headers and its tokenizer — no weight is
// read, so a folder of any size is described at once (core/model_folder.h). --check reads every
// weight as a run would and --system measures the machine; both run in the engine
// (app/cli/cmd_info_engine.cpp).
#include "app/cli/cli.h"
#include "core/asset_paths.h"
#include "core/memory_budget.h"
#include "core/model_folder.h"
#include "core/tokenizer_files.h"
#include "core/weights_policy.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>
#include <stdexcept>

namespace headlab::app {
namespace {

std::string kv_text(int64_t bytes) {
  return bytes < 10 * 1024 ? std::to_string(bytes) + " bytes" : core::format_bytes(bytes);
}

int print_folder(const InfoOptions& options) {
  const core::ModelFolder folder = core::open_model_folder(options.model);
  const auto tokenizer = core::load_folder_tokenizer(options.model);
  const auto& c = folder.config;
  if (options.json) {
    nlohmann::json j = core::to_json(c);
    j["parameters"] = c.parameter_count();
    j["weights_dtype"] = folder.weights_dtype;
    j["folder"] = options.model;
    j["tokenizer"] = tokenizer ? tokenizer->kind() : "none";
    if (tokenizer) j["tokenizer_vocab_size"] = tokenizer->vocab_size();
    if (c.decoder) j["kv_cache_bytes_per_token"] = core::kv_cache_bytes_per_token(c);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const int64_t tokens = tokenizer ? static_cast<int64_t>(tokenizer->vocab_size()) : 0;
  // Without one: "none", with the reason when the folder holds a tokenizer HeadLab does not read.
  const std::string absent = tokenizer ? "" : core::no_tokenizer(options.model);
  const std::string tokenizer_line =
      !tokenizer ? (absent == options.model + " has no tokenizer" ? "none" : "none (" + absent + ")")
      : tokens <= c.vocab_size
          ? tokenizer->kind() + ", " + std::to_string(tokens) + " tokens"
          : tokenizer->kind() + ", " + std::to_string(tokens) + " tokens — more than the model's " +
                std::to_string(c.vocab_size) + ": ids from " + std::to_string(c.vocab_size) +
                " up have no embedding, so a text that uses them cannot run (not this model's tokenizer?)";
  const int64_t stored = folder.weights->bytes();
  const size_t files = folder.weights->files().size();
  const std::string residency = core::keep_weights_mapped(folder.weights->values())
                                    ? " (memory-mapped as stored when run, computed in float32)"
                                    : " (copied to float32 when run: at most 1 GiB)";
  std::cout << c.summary() << "\n  weights: " << folder.weights_dtype << ", " << core::format_bytes(stored) << " in "
            << files << (files == 1 ? " file" : " files") << residency
            << "\n  tokenizer: " << tokenizer_line << "\n";
  if (c.decoder) {
    // What generation's KV cache costs (core/memory_budget.h), against MHA with the same heads.
    std::cout << "  KV cache: " << kv_text(core::kv_cache_bytes_per_token(c)) << " a token";
    const int64_t mha = core::kv_cache_bytes_per_token_as_mha(c);
    if (mha != core::kv_cache_bytes_per_token(c)) std::cout << " (MHA with the same heads: " << kv_text(mha) << ")";
    const int64_t long_text = core::kv_cache_bytes(c, 1 << 20);
    if (long_text == core::kv_cache_bytes(c, 1 << 21))  // every layer a sliding window
      std::cout << "; at most " << kv_text(long_text) << " however long the text (sliding windows)";
    else if (long_text < core::kv_cache_bytes_per_token(c) * (int64_t(1) << 20))
      std::cout << "; its sliding-window layers stop growing at their window";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, Action& action, const InfoEngine& engine) {
  auto options = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", command_description("info"));
  cmd->add_option("--model", options->model, "Model folder (native or Hugging Face; default: the shipped default model)");
  cmd->add_flag("--json", options->json, "Print the model description as JSON");
  cmd->add_flag("--check", options->check,
                "Also read every weight as a run would (shapes, finite values): slower, proves the folder opens");
  cmd->add_flag("--system", options->system, "Print the BLAS in use, thread counts and measured GEMM GFLOP/s");
  cmd->callback([options, engine, &action] {
    action = [options, engine] {
      // --system describes this machine, not a model: a model option beside it would be ignored.
      if (options->system && (!options->model.empty() || options->json || options->check))
        throw UsageError(std::string("--system describes this machine; ") +
                         (!options->model.empty() ? "--model" : options->json ? "--json" : "--check") +
                         " describes a model folder: give them in separate calls");
      if (options->model.empty() && !options->system) options->model = core::default_model_or_throw();
      if (!options->system && !options->check) return print_folder(*options);
      if (!engine) throw std::logic_error("info --system and --check run in headlab-engine");
      if (options->check && !options->system) print_folder(*options);
      return engine(*options);
    };
  });
}

}  // namespace headlab::app
