// Runs a script's actions in the real window, each once the previous one has settled on screen.
#pragma once

#include "app/state/script.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace headlab::app {

class View;
class Workbench;

class ScriptRunner {
 public:
  ScriptRunner(std::vector<ScriptAction> actions, std::string origin);
  // Called once per frame before the views draw; may set wb.quit.
  void step(Workbench& wb, const std::vector<std::unique_ptr<View>>& views);
  bool done() const { return next_ >= actions_.size(); }
  int exit_code() const { return exit_code_; }

 private:
  void execute(const ScriptAction& a, Workbench& wb, const std::vector<std::unique_ptr<View>>& views);
  std::vector<ScriptAction> actions_;
  std::string origin_;
  size_t next_ = 0;
  int wait_frames_ = 0;
  int exit_code_ = 0;
  std::chrono::steady_clock::time_point waiting_since_;
};

}  // namespace headlab::app
