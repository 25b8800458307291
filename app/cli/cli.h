// The command-line front end: `headlab <command> …`. Each command lives in its own cmd_*.cpp and
// registers itself through one add_*_command function; `cli_main` dispatches.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

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

// Refuses (UsageError) to replace `path` when it exists unless `force` (--force): "OUT exists; pass
// --force to replace it". Commands call it before any long work.
void refuse_overwrite(const std::string& path, bool force);

// What `headlab gui` (or plain `headlab [--model DIR] [--session FILE]`) asks the window for.
struct GuiOptions {
  std::string model;       // model folder ("" = the newest in assets/models, else random weights)
  std::string session;     // session file to open
  std::string script;      // JSON list of actions to run in the window
  std::string screenshot;  // PNG written once the first run (or the script) is drawn; then exit
  bool force = false;      // --force: the screenshot may replace an existing file
};
using GuiEntry = std::function<int(const GuiOptions&)>;

void add_gui_command(CLI::App& app, Action& action, const GuiEntry& gui);
void add_info_command(CLI::App& app, Action& action);
void add_init_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_tokenize_command(CLI::App& app, Action& action);
void add_train_command(CLI::App& app, Action& action);
void add_train_tokenizer_command(CLI::App& app, Action& action);
void add_predict_command(CLI::App& app, Action& action);
void add_evaluate_command(CLI::App& app, Action& action);
void add_analyze_command(CLI::App& app, Action& action);  // analyze and merge

// Parses argv and runs the chosen command. `gui` runs when no command is given, or when the first
// argument is an option of `gui` (`headlab --model DIR`); may be null.
int cli_main(int argc, char** argv, const GuiEntry& gui);

}  // namespace headlab::app
