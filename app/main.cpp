// headlab: with a command, the CLI; without one, the workbench window.
#include "app/cli/cli.h"
#ifdef HEADLAB_WITH_GUI
#include "app/gui/gui_main.h"
#endif

int main(int argc, char** argv) {
#ifdef HEADLAB_WITH_GUI
  return headlab::app::cli_main(argc, argv, headlab::app::gui_main);
#else
  return headlab::app::cli_main(argc, argv, nullptr);
#endif
}
