// Shared by the libFuzzer targets (tests/fuzz/README.md): a scratch file in /dev/shm (or /tmp) for
// parsers that read files, and the rule every target enforces — a parser either returns or throws a
// std::exception with a message; anything else (a crash, a sanitizer report, another exception
// type, an empty message) is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace headlab::fuzz {

inline std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    auto d = base / ("headlab-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const auto path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  return path.string();
}

// Runs `parse`; a std::exception must carry a message.
template <class F>
void expect_clean(F&& parse) {
  try {
    parse();
  } catch (const std::exception& e) {
    if (std::string_view(e.what()).empty()) {
      std::fprintf(stderr, "exception without a message\n");
      std::abort();
    }
  }
}

}  // namespace headlab::fuzz
