// `headlab init --config CFG.json --out DIR [--seed N] [--dtype F32|F16|BF16]`: a random-weight model.
#include "app/cli/cli.h"
#include "app/cli/cli_checks.h"
#include "core/weights_memory.h"
#include "core/model/model.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer_files.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace headlab::app {

void add_init_command(CLI::App& app, Action& action) {
  struct Options {
    std::string config, out, dtype = "F32", tokenizer;
    uint64_t seed = 0;
    bool force = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("init", command_description("init"));
  cmd->add_option("--config", options->config, "HeadLab config.json (see assets/configs/)")->required();
  cmd->add_option("--out", options->out, "Output folder")->required();
  cmd->add_option("--seed", options->seed, "Random seed")
      ->check(non_negative());
  cmd->add_option("--dtype", options->dtype, "Stored weight type")->check(CLI::IsMember({"F32", "F16", "BF16"}));
  cmd->add_option("--tokenizer", options->tokenizer,
                  "Tokenizer to copy into the folder: a tokenizer.json, vocab.txt or vocab.json (merges.txt beside it), "
                  "or a folder holding one; a tokenizer_config.json beside it goes along");
  cmd->add_flag("--force", options->force, "Replace a model already in --out");
  cmd->callback([options, &action] {
    action = [options] {
      check_output_folder("--out", options->out, {"config.json", "model.safetensors"}, options->force);
      const auto config = core::load_model_config(options->config);
      // The tokenizer is read before anything is written, so a bad one leaves no half-made folder
      // behind; its ids must fit the config's vocabulary.
      const std::string& tokenizer = options->tokenizer;
      if (!tokenizer.empty()) {
        const auto loaded = core::Tokenizer::load(tokenizer);
        if (loaded->vocab_size() > config.vocab_size)
          throw std::runtime_error(tokenizer + ": its " + std::to_string(loaded->vocab_size()) +
                                   " tokens do not fit the config's vocab_size " + std::to_string(config.vocab_size));
      }
      core::check_weights_memory(config, 1, "init");  // before the weights are drawn
      auto model = core::make_random_model(config, options->seed);
      // A model replaced (--force) takes its tokenizer, counts and stop tokens along, unless the new
      // one's tokenizer is the one in the folder.
      std::error_code ec;
      const std::filesystem::path from(tokenizer);
      const auto tokenizer_dir = std::filesystem::is_directory(from, ec) ? from : from.parent_path();
      if (options->force && !(!tokenizer.empty() && std::filesystem::equivalent(tokenizer_dir, options->out, ec)))
        core::remove_model_companions(options->out);
      core::save_model(*model, options->out, options->dtype, tokenizer);
      std::cout << "wrote " << options->out << " (" << config.parameter_count() << " parameters, "
                << config.encoder.value_or(config.decoder.value_or(core::StackConfig{})).attention.variant_name()
                << ")\n";
      return 0;
    };
  });
}

}  // namespace headlab::app
