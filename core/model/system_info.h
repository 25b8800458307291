// What the machine gives the engine: the BLAS library LibTorch calls, threads, measured GEMM speed.
#pragma once

#include <chrono>
#include <cstdint>
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

// Cores other processes keep busy: their share of the machine's CPU time over `window` (from
// /proc/stat, this process's own time taken out), in whole cores; 0 where /proc cannot be read.
int busy_cores(std::chrono::milliseconds window = std::chrono::milliseconds(60));

// Threads for batch work: the cores no other process keeps busy, measured as the work starts (at
// least 1; HEADLAB_THREADS overrides it) — or, below, for live re-runs beside the GUI (1: a 2-thread
// run was measured collapsing when the UI thread needs the other core). Per calling thread.
void use_batch_threads();
// `threads` for live re-runs (the window passes more than 1 on a real GPU); HEADLAB_LIVE_THREADS
// overrides it.
void use_interactive_threads(int threads = 1);

// libgomp (LibTorch's intra-op pool) spins after every parallel region unless OMP_WAIT_POLICY says
// otherwise. On a 2-vCPU virtual machine the spinning threads starve the working ones: a
// GPT-2-small forward at 128 tokens with 2 threads took 580–900 ms spinning and 218 ms passive
// (1 thread: 370 ms). libgomp reads the variable when it loads, before main(), so this sets
// OMP_WAIT_POLICY=PASSIVE and re-executes the program once (argv must be main's). A value the user
// set is kept. Returns only if no re-execution happened.
void use_passive_openmp(char** argv);

// glibc hands freed blocks above 128 KiB back to the kernel (munmap, heap trim), so every training
// step or re-run faulted in and zeroed its activation buffers again: a 512-token MLM step on one
// core spent ~30% of its time in page faults and ran at ~350 tokens/s instead of ~2,300. This keeps
// freed memory in the process for reuse (mallopt: mmap threshold 1 GiB, no trimming). Returns false
// when the C library is not glibc or refused the setting.
bool keep_freed_memory();

// A memory field of /proc/self/status in bytes ("VmRSS", "VmHWM", "RssAnon", "RssFile"), or -1 where
// it cannot be read. Memory-mapped weights are RssFile (page cache); what the process owns is RssAnon.
int64_t process_memory(const std::string& field);

// The OpenMP wait policy this process started with ("" when unset).
std::string openmp_wait_policy();

}  // namespace headlab::core
