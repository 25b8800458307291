// headlab: with a command, the CLI; without one, the workbench window.
#include "app/cli/cli.h"
#include "core/system_info.h"
#ifdef HEADLAB_WITH_GUI
#include "app/gui/gui_main.h"
#endif

#include <cstring>
#include <string>

namespace {

// Commands that do no parallel tensor work — help, version, tokenizing, describing a model,
// counting tokens, merging reports — start without the passive OpenMP policy, so they pay for
// LibTorch's load once instead of twice (use_passive_openmp re-executes the program to set it).
bool needs_passive_openmp(int argc, char** argv) {
  std::string command;
  bool system = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h") || !std::strcmp(a, "--version")) return false;
    if (!std::strcmp(a, "--system")) system = true;
    if (!std::strcmp(a, "--memory-limit")) {
      ++i;  // its value is not the command
      continue;
    }
    if (command.empty() && a[0] != '-') command = a;
  }
  if (command == "info") return system;  // --system measures GEMM throughput
  return !(command == "tokenize" || command == "train-tokenizer" || command == "count-tokens" || command == "merge");
}

}  // namespace

int main(int argc, char** argv) {
  if (needs_passive_openmp(argc, argv)) headlab::core::use_passive_openmp(argv);  // may re-execute once; see system_info.h
  headlab::core::keep_freed_memory();       // training and re-runs reuse their buffers
#ifdef HEADLAB_WITH_GUI
  return headlab::app::cli_main(argc, argv, headlab::app::gui_main);
#else
  return headlab::app::cli_main(argc, argv, nullptr);
#endif
}
