#include "app/state/file_hash.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

constexpr uint64_t kOffset = 1469598103934665603ull;
constexpr uint64_t kPrime = 1099511628211ull;

uint64_t hash_into(uint64_t h, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(buffer[i])) * kPrime;
  }
  return h;
}

std::string hex(uint64_t h) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

}  // namespace

std::string hash_file(const std::string& path) { return hex(hash_into(kOffset, path)); }

std::string hash_weight_files(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const auto ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".safetensors" || ext == ".bin")) files.push_back(entry.path().string());
  }
  if (files.empty()) return "";
  std::sort(files.begin(), files.end());
  uint64_t h = kOffset;
  for (const auto& f : files) h = hash_into(h, f);
  return hex(h);
}

}  // namespace headlab::app
