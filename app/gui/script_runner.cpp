#include "app/gui/script_runner.h"

#include "app/gui/workbench.h"

#include <iostream>

namespace headlab::app {

ScriptRunner::ScriptRunner(std::vector<ScriptAction> actions, std::string origin)
    : actions_(std::move(actions)), origin_(std::move(origin)), waiting_since_(std::chrono::steady_clock::now()) {}

void ScriptRunner::step(Workbench& wb) {
  if (wb.quit) return;
  if (done()) {
    if (wb.captures.empty()) wb.quit = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!wb.settled() || wb.wait_frames > 0) {
    if (wb.wait_frames > 0 && wb.settled()) --wb.wait_frames;
    // A dataset run may take long; everything else settles in seconds.
    const auto limit = wb.doc().dataset.running ? std::chrono::seconds(1800) : std::chrono::seconds(180);
    if (now - waiting_since_ > limit) {
      std::cerr << "headlab gui: " << origin_ << ": timed out waiting before action " << actions_[next_].index
                << (wb.doc().last_error.empty() ? "" : " (" + wb.doc().last_error + ")") << "\n";
      exit_code_ = 1;
      wb.quit = true;
    }
    return;
  }
  // A dataset run that failed fails the script.
  if (next_ > 0 && std::holds_alternative<cmd::RunDataset>(actions_[next_ - 1].command) && !wb.doc().dataset.error.empty()) {
    std::cerr << "headlab gui: " << origin_ << ": action " << actions_[next_ - 1].index
              << " (run_dataset): " << wb.doc().dataset.error << "\n";
    exit_code_ = 1;
    wb.quit = true;
    return;
  }
  const ScriptAction& a = actions_[next_++];
  try {
    wb.execute(a.command);
  } catch (const std::exception& e) {
    std::cerr << "headlab gui: " << origin_ << ": action " << a.index << " (" << command_name(a.command)
              << "): " << e.what() << "\n";
    exit_code_ = 1;
    wb.quit = true;
  }
  waiting_since_ = now;
}

}  // namespace headlab::app
