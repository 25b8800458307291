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
#include <sstream>
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

namespace {

// Jiffies of the whole machine from /proc/stat's "cpu" line: {non-idle, all}; {0, 0} if unreadable.
std::pair<uint64_t, uint64_t> machine_jiffies() {
  std::ifstream in("/proc/stat");
  std::string label;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || label != "cpu")
    return {0, 0};
  const uint64_t busy = user + nice + system + irq + softirq + steal;
  return {busy, busy + idle + iowait};
}

// This process's own jiffies (utime + stime, /proc/self/stat fields 14 and 15); 0 if unreadable.
uint64_t own_jiffies() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  const auto close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));  // from field 3 (state) on
  std::string skipped;
  for (int field = 3; field <= 13; ++field) rest >> skipped;
  uint64_t utime = 0, stime = 0;
  return rest >> utime >> stime ? utime + stime : 0;
}

}  // namespace

int busy_cores(std::chrono::milliseconds window) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const auto [busy0, all0] = machine_jiffies();
  const uint64_t own0 = own_jiffies();
  std::this_thread::sleep_for(window);
  const auto [busy1, all1] = machine_jiffies();
  const uint64_t own1 = own_jiffies();
  if (cores < 1 || all1 <= all0) return 0;
  const double others = double(busy1 - busy0) - double(own1 - own0);
  const double per_core = double(all1 - all0) / cores;
  return std::clamp(static_cast<int>(std::lround(others / per_core)), 0, cores);
}

void use_batch_threads() {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (const char* value = std::getenv("HEADLAB_THREADS")) {
    torch::set_num_threads(std::max(1, std::atoi(value)));
    return;
  }
  // A core another process keeps busy makes every parallel region wait for its slowest thread:
  // OpenMP threads on a shared core turn a 28 ms token into 385 ms (tests/README.md, "Benchmarks").
  torch::set_num_threads(std::max(1, cores - busy_cores()));
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

int64_t process_memory(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

}  // namespace headlab::core
