// The front end `headlab`: a small program without LibTorch (loading it costs ~0.4 s before main).
// It serves --help, --version and the commands that need no tensors itself, and replaces itself
// with the engine `headlab-engine` (same arguments, OpenMP's passive wait policy set) for the rest.
#pragma once

#include "app/cli/cli.h"

#include <map>
#include <string>
#include <vector>

namespace headlab::app {

// Whether the front end serves `args` (argv without the program name) itself: --help or --version
// with no command, and `tokenize`, `train-tokenizer` and `info` (without --system or --check).
// Everything else — no arguments (the window), `--model DIR`, a command's own --help included for
// engine commands — goes to the engine.
bool front_end_serves(const std::vector<std::string>& args);

// The engine beside the front end at `self` (its resolved path): `DIR/headlab-engine` in a build
// tree, `DIR/../libexec/headlab/headlab-engine` in an install. "" when neither exists.
std::string find_engine(const std::string& self);

// Replaces this process with the engine, keeping argv; sets OMP_WAIT_POLICY=PASSIVE unless the
// user set it (core/model/system_info.h says why), so the engine never re-executes itself. Returns only
// when that fails, with the exit code to use (127) after printing why.
int exec_engine(char** argv);

// The commands the front end adds itself (the rest of the table is listed for --help only).
std::map<std::string, AddCommand> front_end_commands();

}  // namespace headlab::app
