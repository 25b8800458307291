// `headlab info --model DIR [--json]` and `headlab info --system`.
#include "app/cli/cli.h"
#include "core/asset_paths.h"
#include "core/model.h"
#include "core/system_info.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace headlab::app {
namespace {

struct InfoOptions {
  std::string model;
  bool json = false;
  bool system = false;
};

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

int print_model(const InfoOptions& options) {
  auto model = core::load_model(options.model);
  const auto& c = model->config;
  if (options.json) {
    nlohmann::json j = core::to_json(c);
    j["parameters"] = c.parameter_count();
    j["weights_dtype"] = model->weights_dtype;
    j["folder"] = options.model;
    j["tokenizer"] = model->tokenizer ? model->tokenizer->kind() : "none";
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << c.summary() << "\n  weights: " << model->weights_dtype
            << "\n  tokenizer: " << (model->tokenizer ? model->tokenizer->kind() : std::string("none")) << "\n";
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Describe a model folder, or this machine's BLAS and threads");
  cmd->add_option("--model", options->model, "Model folder (native or Hugging Face; default: the shipped default model)");
  cmd->add_flag("--json", options->json, "Print the model description as JSON");
  cmd->add_flag("--system", options->system, "Print the BLAS in use, thread counts and measured GEMM GFLOP/s");
  cmd->callback([options, &action] {
    action = [options] {
      if (options->system) return print_system();
      if (options->model.empty()) options->model = core::default_model_or_throw();
      return print_model(*options);
    };
  });
}

}  // namespace headlab::app
