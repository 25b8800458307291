// headlab-engine: every command and the workbench window. Started by the front end `headlab`
// (app/main.cpp) with the passive OpenMP policy already set; run directly it sets the policy itself.
#include "app/cli/cli.h"
#include "app/cli/stop_signals.h"
#include "core/model/system_info.h"
#ifdef HEADLAB_WITH_GUI
#include "app/gui/gui_main.h"
#endif

int main(int argc, char** argv) {
  headlab::core::use_passive_openmp(argv);  // re-executes once unless OMP_WAIT_POLICY is set; see system_info.h
  headlab::core::keep_freed_memory();       // training and re-runs reuse their buffers
  headlab::app::remove_temporaries_on_stop_signals();  // no half-written file stays after Ctrl-C
#ifdef HEADLAB_WITH_GUI
  const headlab::app::GuiEntry gui = headlab::app::gui_main;
#else
  const headlab::app::GuiEntry gui;
#endif
  return headlab::app::cli_main(argc, argv, headlab::app::engine_commands(gui), static_cast<bool>(gui), gui);
}
