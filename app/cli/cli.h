// The command line: `headlab <command> …`. Each command lives in its own cmd_*.cpp and registers
// itself through one add_*_command function; `cli_main` parses and dispatches. Two executables
// share it: the front end `headlab` (app/main.cpp, no LibTorch) serves --help, --version and the
// torch-free commands and hands every other command to the engine `headlab-engine`
// (app/engine_main.cpp), which has them all.
#pragma once

#include "app/document/window_start.h"

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace headlab::app {

// A command's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

// Thrown by commands for bad user input (exit code 2); other std::exceptions exit with 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using GuiEntry = std::function<int(const GuiOptions&)>;

// The commands `headlab --help` lists, in that order, with their one-line descriptions. Both
// executables build their command line from this table, so the front end's --help is the engine's.
struct CommandInfo {
  const char* name;
  const char* description;
};
const std::vector<CommandInfo>& command_table();
// The table's description of `name`; throws std::logic_error for a name not in it.
const char* command_description(const std::string& name);

// What `headlab info` needs beyond the torch-free description of a folder: `info --system` and
// `info --check` (every weight read), which run in the engine.
struct InfoOptions {
  std::string model;
  bool json = false;
  bool system = false;
  bool check = false;
};
using InfoEngine = std::function<int(const InfoOptions&)>;

// One command's registration: adds its subcommand (options and action) to the app.
using AddCommand = std::function<void(CLI::App&, Action&)>;

void add_gui_command(CLI::App& app, Action& action, const GuiEntry& gui);
// `engine` serves --system and --check; null in the front end, which hands those to the engine.
void add_info_command(CLI::App& app, Action& action, const InfoEngine& engine);
int info_engine(const InfoOptions& options);  // app/cli/cmd_info_engine.cpp
void add_init_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_tokenize_command(CLI::App& app, Action& action);
void add_train_command(CLI::App& app, Action& action);
void add_train_tokenizer_command(CLI::App& app, Action& action);
void add_predict_command(CLI::App& app, Action& action);
void add_evaluate_command(CLI::App& app, Action& action);
void add_analyze_command(CLI::App& app, Action& action);
void add_merge_command(CLI::App& app, Action& action);
void add_count_tokens_command(CLI::App& app, Action& action);
void add_generate_command(CLI::App& app, Action& action);
void add_convert_command(CLI::App& app, Action& action);
void add_prune_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);
void add_circuits_command(CLI::App& app, Action& action);
void add_patch_command(CLI::App& app, Action& action);

// Parses argv and runs the chosen command. Every command of the table is added through `commands`
// (by name); one missing there is listed by --help and refused if chosen (the front end hands such
// commands to the engine before parsing). `with_gui` lists the `gui` command; `gui` runs when no
// command is given, or when the first argument is an option of `gui` (`headlab --model DIR`).
int cli_main(int argc, char** argv, const std::map<std::string, AddCommand>& commands, bool with_gui,
             const GuiEntry& gui);

// The engine's commands: every command of the table (`gui` runs the window when given).
std::map<std::string, AddCommand> engine_commands(const GuiEntry& gui);

}  // namespace headlab::app
