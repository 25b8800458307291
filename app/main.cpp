// headlab: with a command, the CLI; without one, the workbench window.
#include "app/cli/cli.h"
#include "core/system_info.h"
#ifdef HEADLAB_WITH_GUI
#include "app/gui/gui_main.h"
#endif

int main(int argc, char** argv) {
  headlab::core::use_passive_openmp(argv);  // may re-execute once; see system_info.h
  headlab::core::keep_freed_memory();       // training and re-runs reuse their buffers
#ifdef HEADLAB_WITH_GUI
  return headlab::app::cli_main(argc, argv, headlab::app::gui_main);
#else
  return headlab::app::cli_main(argc, argv, nullptr);
#endif
}
