#include "app/cli/front_end.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace headlab::app {

namespace fs = std::filesystem;

bool front_end_serves(const std::vector<std::string>& args) {
  std::string command;
  bool help = false, needs_engine = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--memory-limit" || a == "--precision") {  // global options: their values are not the command
      ++i;
      continue;
    }
    if (a == "--help" || a == "-h" || a == "--version") help = true;
    if (a == "--system" || a == "--check" || a.rfind("--system=", 0) == 0 || a.rfind("--check=", 0) == 0)
      needs_engine = true;
    if (command.empty() && !a.empty() && a[0] != '-') command = a;
  }
  if (command.empty()) return help;  // `headlab --help`; plain `headlab` and `headlab --model DIR` open the window
  if (command == "tokenize" || command == "train-tokenizer") return true;
  if (command == "info") return !needs_engine;
  return false;
}

std::string find_engine(const std::string& self) {
  const fs::path dir = fs::path(self).parent_path();
  std::error_code ec;
  for (const fs::path& candidate : {dir / "headlab-engine", dir / ".." / "libexec" / "headlab" / "headlab-engine"})
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  return "";
}

int exec_engine(char** argv) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::string engine = ec ? "" : find_engine(self.string());
  if (engine.empty()) {
    std::cerr << "headlab: the engine (headlab-engine) is not installed beside " << (ec ? "this program" : self.string())
              << " or in ../libexec/headlab; reinstall HeadLab\n";
    return 127;
  }
  if (!std::getenv("OMP_WAIT_POLICY")) ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  ::execv(engine.c_str(), argv);
  std::cerr << "headlab: cannot start " << engine << ": " << std::strerror(errno) << "\n";
  return 127;
}

std::map<std::string, AddCommand> front_end_commands() {
  return {
      {"info", [](CLI::App& app, Action& action) { add_info_command(app, action, nullptr); }},
      {"tokenize", add_tokenize_command},
      {"train-tokenizer", add_train_tokenizer_command},
  };
}

}  // namespace headlab::app
