#include "app/layout/live_threads.h"

#include <algorithm>
#include <cctype>

namespace headlab::app {

bool software_renderer(const std::string& gl_renderer) {
  std::string r = gl_renderer;
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // An unknown renderer is treated as software: one thread is the safe choice.
  return r.empty() || r.find("llvmpipe") != std::string::npos || r.find("softpipe") != std::string::npos ||
         r.find("swrast") != std::string::npos;
}

int live_threads_for_renderer(const std::string& gl_renderer, unsigned hardware_threads) {
  if (software_renderer(gl_renderer)) return 1;
  return std::max(1, static_cast<int>(hardware_threads / 2));
}

}  // namespace headlab::app
