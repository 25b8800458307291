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

void add_info_command(CLI::App& app, Action& action);
void add_init_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_tokenize_command(CLI::App& app, Action& action);

// Parses argv and runs the chosen command. `gui` runs when no command is given (may be null).
int cli_main(int argc, char** argv, const std::function<int(int, char**)>& gui);

}  // namespace headlab::app
