// Live re-run threads: software GL keeps one intra-op thread, a real GPU gets half the cores.
#include "test_common.h"

#include "app/layout/live_threads.h"

using namespace headlab::app;

TEST_CASE("software GL keeps one live thread, a real GPU gets half the cores", "[app]") {
  CHECK(software_renderer("llvmpipe (LLVM 15.0.6, 256 bits)"));
  CHECK(software_renderer("Mesa softpipe"));
  CHECK(software_renderer("Software Rasterizer (swrast)"));
  CHECK(software_renderer(""));
  CHECK_FALSE(software_renderer("NVIDIA H100 80GB HBM3/PCIe/SSE2"));
  CHECK(live_threads_for_renderer("llvmpipe (LLVM 15.0.6, 256 bits)", 16) == 1);
  CHECK(live_threads_for_renderer("NVIDIA GeForce RTX 3080/PCIe/SSE2", 16) == 8);
  CHECK(live_threads_for_renderer("AMD Radeon RX 6800", 2) == 1);
  CHECK(live_threads_for_renderer("Mesa Intel(R) UHD Graphics 620", 1) == 1);
}
