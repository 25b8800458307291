#include "app/cli/cli_checks.h"

#include "app/cli/cli.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

namespace headlab::app {
namespace {

namespace fs = std::filesystem;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// 1 → "1", 1048576 → "1048576", 0.05 → "0.05".
std::string number_text(double v) {
  char buffer[32];
  if (std::abs(v) < 1e15 && v == std::floor(v))
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

// A finite interval from `low` (excluded when `low_open`) to `high` (+infinity: no upper end).
CLI::Validator interval(double low, bool low_open, double high) {
  std::string range;
  if (high == kInfinity)
    range = (low_open ? "> " : ">= ") + number_text(low);
  else
    range = std::string("in ") + (low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) + "]";
  return CLI::Validator(
      [low, low_open, high, range](std::string& input) -> std::string {
        const char* begin = input.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        if (input.empty() || end != begin + input.size()) return "'" + input + "' is not a number";
        const bool above_low = low_open ? low < v : low <= v;
        if (!(std::isfinite(v) && above_low && v <= high)) return input + " is not " + range;
        return {};
      },
      range);
}

// The nearest existing folder at or above `path` ("." for a relative path with none).
fs::path nearest_existing(const fs::path& path) {
  fs::path p = path.lexically_normal();
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) {
    const fs::path parent = p.parent_path();
    if (parent == p) break;
    p = parent;
  }
  return p.empty() ? fs::path(".") : p;
}

// UsageError unless `folder` is a folder this process can create files in.
void require_writable(const std::string& flag, const std::string& output, const fs::path& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw UsageError(flag + " " + output + ": " + folder.string() + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw UsageError(flag + " " + output + ": cannot write in " + folder.string() + " (" + std::strerror(errno) +
                     "); choose another place");
}

}  // namespace

CLI::Validator number_in(double low, double high) { return interval(low, false, high); }
CLI::Validator number_above(double low, double high) { return interval(low, true, high); }
CLI::Validator non_negative() { return interval(0, false, kInfinity); }
CLI::Validator positive() { return interval(0, true, kInfinity); }

void check_output_file(const std::string& flag, const std::string& path, bool force) {
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw UsageError(flag + " " + path + " is a folder; name the file to write");
  if (fs::exists(path, ec) && !force) throw UsageError(path + " exists; pass --force to replace it");
  const fs::path parent = fs::path(path).parent_path();
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  if (!fs::exists(folder, ec))
    throw UsageError(flag + " " + path + ": the folder " + folder.string() + " does not exist; make it first");
  require_writable(flag, path, folder);
}

void check_output_folder(const std::string& flag, const std::string& folder, const std::vector<std::string>& replaced,
                         bool force) {
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec))
    throw UsageError(flag + " " + folder + " is a file; name a folder to write into");
  if (!force)
    for (const auto& name : replaced) {
      const std::string path = (fs::path(folder) / name).string();
      if (fs::exists(path, ec)) throw UsageError(path + " exists; pass --force to replace it");
    }
  const fs::path existing = nearest_existing(folder);
  require_writable(flag, folder, existing);
}

}  // namespace headlab::app
