// How many intra-op threads live re-runs get beside the window: software GL (llvmpipe, softpipe,
// swrast) rasterises on the CPU and competes with the model for the cores, so it keeps 1; a real
// GPU leaves the cores to the model (half of them, LibTorch's own default, the rest for the UI).
#pragma once

#include <string>

namespace headlab::app {

// True for Mesa's CPU rasterisers, by the GL_RENDERER string.
bool software_renderer(const std::string& gl_renderer);
// Threads for the live worker given GL_RENDERER and the hardware threads.
int live_threads_for_renderer(const std::string& gl_renderer, unsigned hardware_threads);

}  // namespace headlab::app
