// Progress on stderr, the same way for every command. On a terminal: one line rewritten in place
// (at most ten times a second) with a bar, the time so far and the time left. Otherwise — a log
// file, a pipe — plain lines: one each time the work passes another tenth, and one at the end, so a
// log holds no carriage returns and stays short.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace headlab::app {

class Progress {
 public:
  // `what` leads each line ("exact patching"; empty for none); `unit` names what is counted ("runs").
  Progress(std::string what, std::string unit);
  // The same, choosing the terminal form or the plain one (tests; commands use stderr's kind).
  Progress(std::string what, std::string unit, bool terminal);

  // `done` of `total` units, with an optional detail after the counts ("sweep 3, relative error
  // 0.0123"). Returns true (the work goes on), so it serves as a progress callback.
  bool operator()(int64_t done, int64_t total, const std::string& detail = "");
  // Ends a line left open on a terminal (work that stopped, or ended short of its total).
  void finish();

 private:
  std::string what_, unit_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
  double last_ = -1;    // seconds at the last rewrite of a terminal line
  int printed_ = -1;    // the last tenth printed as a plain line
  bool open_ = false;   // a terminal line is waiting for its end
};

}  // namespace headlab::app
