// Where the test data that is not in the repository lives: ../shared/data beside the checkout
// (CI has it; a checkout without it still builds and passes, the tests that need it only warn).
// Header-only, no torch or Catch2, so the benchmark programs can use it too.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace headlab::test {

inline std::filesystem::path shared_data_dir() {
  return std::filesystem::path(HEADLAB_SOURCE_DIR) / ".." / "shared" / "data";
}

// The public-domain Gutenberg books (training text and token frequencies), sorted by name; empty
// when the folder is absent.
inline std::vector<std::string> gutenberg_books() {
  std::vector<std::string> books;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(shared_data_dir() / "text" / "gutenberg", ec))
    if (e.path().extension() == ".txt") books.push_back(e.path().string());
  std::sort(books.begin(), books.end());
  return books;
}

}  // namespace headlab::test
