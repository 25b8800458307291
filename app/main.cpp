// headlab: the front end (app/cli/front_end.h). --help, --version, `info`, `tokenize` and
// `train-tokenizer` run here without LibTorch; every other command, and the window, run in the
// engine this program replaces itself with.
#include "app/cli/front_end.h"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!headlab::app::front_end_serves(args)) return headlab::app::exec_engine(argv);
#ifdef HEADLAB_WITH_GUI
  const bool with_gui = true;
#else
  const bool with_gui = false;
#endif
  return headlab::app::cli_main(argc, argv, headlab::app::front_end_commands(), with_gui, nullptr);
}
