// The workbench window's entry point (GLFW + OpenGL 3 + Dear ImGui).
#pragma once

#include "app/document/window_start.h"

namespace headlab::app {

// Opens the window and runs until it is closed (or a script / screenshot run ends); exit code.
int gui_main(const GuiOptions& options);

}  // namespace headlab::app
