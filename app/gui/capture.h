// PNG captures rendered offscreen: the frame's draw data into a framebuffer object at 1×/2×/4×,
// read back with glReadPixels and written with stb_image_write (not a screen grab).
#pragma once

#include <imgui.h>

#include <string>

namespace headlab::app {

// Renders `draw_data` at `scale` and writes the rectangle (pos, size; in ImGui coordinates) as a
// PNG. Returns false with `error` set on failure.
bool capture_png(ImDrawData* draw_data, const std::string& path, int scale, ImVec2 pos, ImVec2 size, std::string& error);

}  // namespace headlab::app
