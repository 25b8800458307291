// `headlab gui [--model DIR | --session FILE] [--script FILE.json] [--screenshot OUT.png]`: the
// workbench window (also plain `headlab [--model DIR] [--session FILE]`).
#include "app/cli/cli.h"
#include "app/cli/cli_checks.h"

#include <CLI/CLI.hpp>

#include <memory>

namespace headlab::app {

void add_gui_command(CLI::App& app, Action& action, const GuiEntry& gui) {
  auto options = std::make_shared<GuiOptions>();
  auto* cmd = app.add_subcommand("gui", command_description("gui"));
  auto* model = cmd->add_option("--model", options->model, "Model folder (default: the shipped default model, assets/models/default)");
  cmd->add_option("--session", options->session, "Session file to open")->excludes(model);
  cmd->add_option("--script", options->script, "JSON actions to run in the window (see app/README.md, \"Scripted runs\")");
  cmd->add_option("--screenshot", options->screenshot, "Write a PNG once the first run (or the script) is drawn, then exit");
  cmd->add_flag("--force", options->force, "Replace an existing --screenshot file");
  cmd->callback([options, &action, gui] {
    action = [options, gui] {
      if (!options->screenshot.empty()) check_output_file("--screenshot", options->screenshot, options->force);
      return gui(*options);
    };
  });
}

}  // namespace headlab::app
