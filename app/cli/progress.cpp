#include "app/cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace headlab::app {

Progress::Progress(std::string what, std::string unit)
    : Progress(std::move(what), std::move(unit), isatty(fileno(stderr)) != 0) {}

Progress::Progress(std::string what, std::string unit, bool terminal)
    : what_(std::move(what)), unit_(std::move(unit)), terminal_(terminal), start_(std::chrono::steady_clock::now()) {}

bool Progress::operator()(int64_t done, int64_t total, const std::string& detail) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = total > 0 ? double(done) / double(total) : 1.0;
  // No time left to tell before the first unit is done (not "ETA 0s").
  char eta[32] = "–";
  if (done > 0) std::snprintf(eta, sizeof eta, "%.0fs", seconds / double(done) * double(total - done));
  const std::string lead = what_.empty() ? "" : what_ + ": ";
  const std::string tail = detail.empty() ? "" : "; " + detail;
  const auto count = [&] {
    return std::to_string(done) + "/" + std::to_string(total) + (unit_.empty() ? "" : " " + unit_);
  };
  if (terminal_) {
    if (done != total && last_ >= 0 && seconds - last_ < 0.1) return true;
    last_ = seconds;
    const int width = 30, filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "\r%s[%s%s] %s  %.0fs, ETA %s%s   ", lead.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), count().c_str(), seconds, eta, tail.c_str());
    open_ = done != total;
    if (!open_) std::fprintf(stderr, "\n");
  } else {
    const int tenth = static_cast<int>(fraction * 10);
    if (tenth > printed_) {
      printed_ = tenth;
      std::fprintf(stderr, "%s%s (%.0f%%), %.0fs, ETA %s%s\n", lead.c_str(), count().c_str(), 100 * fraction,
                   seconds, eta, tail.c_str());
    }
  }
  std::fflush(stderr);
  return true;
}

void Progress::finish() {
  if (open_) std::fprintf(stderr, "\n");
  open_ = false;
}

}  // namespace headlab::app
