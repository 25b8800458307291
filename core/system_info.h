// What the machine gives the engine: the BLAS library LibTorch calls, threads, measured GEMM speed.
#pragma once

#include <string>

namespace headlab::core {

struct SystemInfo {
  std::string blas_library;  // resolved path of libblas.so.3 as loaded by this process
  std::string blas_kind;     // "OpenBLAS (pthread)", "reference BLAS", …
  int hardware_threads = 0;
  int torch_threads = 0;     // intra-op threads of the calling thread
  double gemm_gflops = 0;    // measured 768×768×768 float32 GEMM
  std::string torch_version;
};

// Measures a float32 GEMM of `size`³ for about `seconds` and returns GFLOP/s.
double measure_gemm_gflops(int size = 768, double seconds = 0.5);

SystemInfo system_info(bool measure = true);

// Threads for batch work (all cores) or for live re-runs beside the GUI (1: GROUND.md measured a
// 2-thread run collapsing when the UI thread needs the other core). Per calling thread.
void use_batch_threads();
void use_interactive_threads();

}  // namespace headlab::core
