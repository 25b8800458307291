// Include this first in every test file: torch (and its glog) before Catch2, so glog's CHECK
// macro is defined first and Catch2's CHECK wins (the [canary] test proves it).
#pragma once
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace headlab::test {

// A fresh empty directory under the system temp dir, removed when the object dies.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str(const std::string& child = "") const { return (child.empty() ? path : path / child).string(); }
};

// Max absolute difference of two tensors (as float64, on the host: either may be on a card).
double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b);

// The temporary files the atomic writer (core/atomic_file.h) has beside `target`
// (".NAME.tmp.<pid>.<random>"), sorted.
std::vector<std::string> temp_files_of(const std::string& target);

// Runs a shell command, returns its exit code; stdout+stderr go to `output`.
int run_command(const std::string& command, std::string& output);

// A test whose environment is missing (no Xvfb, …) never passes silently: under ctest
// (HEADLAB_CTEST=1) the process exits 77, which ctest reports as skipped; under CI=true, where the
// environment must be there, the test fails; run by hand, a warning. Use through SKIP_UNLESS.
void missing_environment(const std::string& why);

// Why this process cannot use a CUDA card (a build without CUDA, no card visible), or "" when it can.
std::string card_missing();
// A GPU test without a card: exit 77 under ctest (skipped) even under CI=true, since no CI machine
// has a card; run by hand, a warning. Use through SKIP_WITHOUT_CARD.
void missing_card(const std::string& why);

}  // namespace headlab::test

// Leaves the test case (skipped, failed under CI=true, or warned; see missing_environment) unless
// `available` holds.
#define SKIP_UNLESS(available, why)                 \
  do {                                              \
    if (!(available)) {                             \
      ::headlab::test::missing_environment(why);    \
      return;                                       \
    }                                               \
  } while (false)

// Leaves a GPU test case unless cuda:0 is there (see missing_card).
#define SKIP_WITHOUT_CARD()                                                         \
  do {                                                                              \
    if (const std::string why = ::headlab::test::card_missing(); !why.empty()) {     \
      ::headlab::test::missing_card(why);                                           \
      return;                                                                       \
    }                                                                               \
  } while (false)
