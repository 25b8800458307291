// Wires `headlab tokenize` (implemented in cmd_tokenize.cpp) into the command line.
#include "app/cli/cli.h"
#include "app/cli/cmd_tokenize.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace headlab::app {

void add_tokenize_command(CLI::App& app, Action& action) {
  struct Options {
    std::string tokenizer;
    bool add_special = false;
  };
  auto options = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("tokenize", command_description("tokenize"));
  cmd->add_option("--tokenizer", options->tokenizer, "tokenizer.json or a model folder")->required();
  cmd->add_flag("--add-special-tokens", options->add_special, "Add the post-processor's special tokens");
  cmd->callback([options, &action] {
    action = [options] { return run_tokenize_command(options->tokenizer, options->add_special, std::cin, std::cout); };
  });
}

}  // namespace headlab::app
