// The engine's half of `headlab info`: --system (BLAS, threads, measured GEMM) and --check (every
// weight loaded as a run loads it).
#include "app/cli/cli.h"
#include "core/memory_budget.h"
#include "core/model/model.h"
#include "core/model/system_info.h"

#include <iostream>

namespace headlab::app {
namespace {

int print_system() {
  core::use_batch_threads();
  const auto info = core::system_info(true);
  std::cout << "LibTorch      " << info.torch_version << "\n"
            << "BLAS          " << info.blas_kind << "\n"
            << "BLAS library  " << (info.blas_library.empty() ? "(not found)" : info.blas_library) << "\n"
            << (info.blas_kind == "OpenBLAS (pthread)"
                    ? "              — its own threads ignore HeadLab's thread count; libopenblas0-openmp shares them\n"
                    : "")
            << "OpenMP wait   " << (core::openmp_wait_policy().empty() ? "libgomp default (spinning)" : core::openmp_wait_policy())
            << "\n"
            << "threads       " << info.torch_threads << " intra-op (batch work) of " << info.hardware_threads
            << " hardware; live re-runs beside the GUI use 1\n"
            << "GEMM 768³ f32 " << static_cast<int>(info.gemm_gflops + 0.5) << " GFLOP/s"
            << (info.gemm_gflops < 20 ? "  — slow: check the BLAS above, and whether other processes are busy" : "")
            << "\n";
  return 0;
}

}  // namespace

int info_engine(const InfoOptions& options) {
  if (options.system) return print_system();
  const auto model = core::load_model(options.model);  // throws one line naming the file
  // A folder over core::kFiniteScanBytes opens without reading its mapped values; --check reads them.
  torch::NoGradGuard no_grad;
  for (const auto& item : model->module->named_parameters())
    core::require_finite(item.value(), options.model, item.key());
  if (!options.json)
    std::cout << "  checked: every weight read; shapes match the config, values finite"
              << (model->mapped_bytes > 0 ? " (" + core::format_bytes(model->mapped_bytes) + " read from the mapped files)" : "")
              << "\n";
  return 0;
}

}  // namespace headlab::app
