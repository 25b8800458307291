// Runs a script's actions in the real window, each once the previous one has settled on screen
// (a dataset run finished, the model's run drawn, captures written).
#pragma once

#include "app/document/script.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

class Workbench;

class ScriptRunner {
 public:
  ScriptRunner(std::vector<ScriptAction> actions, std::string origin);
  // Called once per frame before the views draw; may set wb.quit.
  void step(Workbench& wb);
  bool done() const { return next_ >= actions_.size(); }
  int exit_code() const { return exit_code_; }

 private:
  // An export the script started has failed (its task reports after the action): prints it and
  // fails the script. False while it runs, after a success, or when none was started.
  bool export_failed(Workbench& wb);

  std::vector<ScriptAction> actions_;
  std::string origin_;
  size_t next_ = 0;
  int exit_code_ = 0;
  std::optional<unsigned> export_serial_;  // the export job's serial when the last export action ran
  int export_index_ = 0;                   // that action's index in the script
  std::chrono::steady_clock::time_point waiting_since_;
};

}  // namespace headlab::app
