#include "core/model/system_info.h"

#include <torch/torch.h>

#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <dlfcn.h>
#include <fstream>
#include <link.h>
#include <filesystem>
#include <thread>

namespace headlab::core {
namespace {

// Finds the loaded shared object whose name contains `needle` (reads /proc/self/maps).
std::string loaded_library(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    if (path.find(needle) != std::string::npos) return path;
  }
  return "";
}

}  // namespace

double measure_gemm_gflops(int size, double seconds) {
  c10::InferenceMode guard;
  auto a = torch::randn({size, size});
  auto b = torch::randn({size, size});
  auto c = torch::matmul(a, b);  // warm-up (page faults, thread pool start)
  int runs = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    c = torch::matmul(a, b);
    ++runs;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < seconds);
  return 2.0 * double(size) * size * size * runs / elapsed / 1e9;
}

SystemInfo system_info(bool measure) {
  SystemInfo info;
  // Make sure BLAS is loaded before looking for it: a tiny GEMM goes through libblas.so.3.
  { c10::InferenceMode guard; (void)torch::matmul(torch::ones({64, 64}), torch::ones({64, 64})); }
  std::string blas = loaded_library("libblas.so");
  if (blas.empty()) blas = loaded_library("openblas");
  info.blas_library = blas;
  std::error_code ec;
  const std::string resolved = blas.empty() ? "" : std::filesystem::canonical(blas, ec).string();
  if (resolved.find("openblas-pthread") != std::string::npos) info.blas_kind = "OpenBLAS (pthread)";
  else if (resolved.find("openblas-openmp") != std::string::npos) info.blas_kind = "OpenBLAS (OpenMP)";
  else if (resolved.find("openblas") != std::string::npos) info.blas_kind = "OpenBLAS";
  else if (resolved.find("blis") != std::string::npos) info.blas_kind = "BLIS";
  else if (resolved.find("mkl") != std::string::npos) info.blas_kind = "MKL";
  else if (resolved.find("/blas/") != std::string::npos) info.blas_kind = "reference BLAS (slow: install libopenblas0-pthread)";
  else info.blas_kind = resolved.empty() ? "unknown" : resolved;
  if (!resolved.empty()) info.blas_library = resolved;
  info.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
  info.torch_threads = torch::get_num_threads();
  info.torch_version = TORCH_VERSION;
  if (measure) info.gemm_gflops = measure_gemm_gflops();
  return info;
}

void use_batch_threads() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  torch::set_num_threads(cores > 0 ? cores : 1);
}

void use_interactive_threads(int threads) {
  const char* value = std::getenv("HEADLAB_LIVE_THREADS");  // for measuring; see tests/README.md, "Benchmarks"
  torch::set_num_threads(value ? std::max(1, std::atoi(value)) : std::max(1, threads));
}

void use_passive_openmp(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY")) return;
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  ::execv("/proc/self/exe", argv);  // returns only on failure: run on with libgomp's default
}

bool keep_freed_memory() {
#ifdef __GLIBC__
  // Setting either value also turns off glibc's dynamic threshold, which would otherwise only
  // grow the mmap threshold to 32 MiB (a 512-token attention map of a 4-sequence batch is 32 MiB).
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
  return mmap_ok && trim_ok;
#else
  return false;
#endif
}

std::string openmp_wait_policy() {
  const char* value = std::getenv("OMP_WAIT_POLICY");
  return value ? value : "";
}

}  // namespace headlab::core
