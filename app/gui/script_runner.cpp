#include "app/gui/script_runner.h"

#include "app/gui/workbench.h"

#include <iostream>

namespace headlab::app {

ScriptRunner::ScriptRunner(std::vector<ScriptAction> actions, std::string origin)
    : actions_(std::move(actions)), origin_(std::move(origin)), waiting_since_(std::chrono::steady_clock::now()) {}

bool ScriptRunner::export_failed(Workbench& wb) {
  const auto& st = wb.doc().exporting;
  if (!export_serial_ || st.running || st.serial == *export_serial_) return false;
  export_serial_.reset();
  if (st.error.empty()) return false;
  std::cerr << "headlab gui: " << origin_ << ": action " << export_index_ << " (export): " << st.error << "\n";
  exit_code_ = 1;
  wb.quit = true;
  return true;
}

void ScriptRunner::step(Workbench& wb) {
  if (wb.quit) return;
  if (done()) {
    // The last action's export is written before the window closes, and its failure fails the script.
    if (export_serial_ && wb.doc().exporting.running) return;
    if (export_failed(wb)) return;
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
                << (wb.doc().last_error().empty() ? "" : " (" + wb.doc().last_error() + ")") << "\n";
      exit_code_ = 1;
      wb.quit = true;
    }
    return;
  }
  // An expected refusal: the last error must contain the text; it is printed and cleared.
  if (const auto* expect = std::get_if<cmd::ExpectError>(&actions_[next_].command)) {
    const int index = actions_[next_++].index;
    export_serial_.reset();  // an export's failure, if that is what was expected, is checked here
    // The previous action's message: the status line's, or the one its view shows (a dataset run's,
    // the Syntax view's sentence).
    const Command* previous = next_ >= 2 ? &actions_[next_ - 2].command : nullptr;
    const bool after_dataset = previous && std::holds_alternative<cmd::RunDataset>(*previous);
    const bool after_syntax = previous && (std::holds_alternative<cmd::SetParse>(*previous) ||
                                           std::holds_alternative<cmd::SelectSentence>(*previous));
    const std::string error = !wb.doc().last_error().empty() ? wb.doc().last_error()
                              : after_dataset             ? wb.doc().dataset.error
                              : after_syntax              ? wb.doc().syntax_job.error
                                                          : std::string();
    if (error.empty() || error.find(expect->contains) == std::string::npos) {
      std::cerr << "headlab gui: " << origin_ << ": action " << index << " (expect_error): expected an error"
                << (expect->contains.empty() ? "" : " containing '" + expect->contains + "'")
                << (error.empty() ? ", got none" : ", got: " + error) << "\n";
      exit_code_ = 1;
      wb.quit = true;
      return;
    }
    std::cout << "headlab gui: " << origin_ << ": action " << index << ": expected error: " << error << "\n";
    if (!wb.doc().last_error().empty()) wb.dismiss_newest_error();
    waiting_since_ = now;
    return;
  }
  // A dataset run that failed fails the script (unless the next action expects it).
  if (next_ > 0 && std::holds_alternative<cmd::RunDataset>(actions_[next_ - 1].command) && !wb.doc().dataset.error.empty()) {
    std::cerr << "headlab gui: " << origin_ << ": action " << actions_[next_ - 1].index
              << " (run_dataset): " << wb.doc().dataset.error << "\n";
    exit_code_ = 1;
    wb.quit = true;
    return;
  }
  if (export_failed(wb)) return;
  const ScriptAction& a = actions_[next_++];
  if (std::holds_alternative<cmd::Export>(a.command)) {
    export_serial_ = wb.doc().exporting.serial;
    export_index_ = a.index;
  }
  try {
    wb.execute(a.command);
  } catch (const std::exception& e) {
    if (next_ < actions_.size() && std::holds_alternative<cmd::ExpectError>(actions_[next_].command)) {
      wb.set_error(command_name(a.command), command_name(a.command) + ": " + e.what());  // as the window shows it; checked next
    } else {
      std::cerr << "headlab gui: " << origin_ << ": action " << a.index << " (" << command_name(a.command)
                << "): " << e.what() << "\n";
      exit_code_ = 1;
      wb.quit = true;
    }
  }
  waiting_since_ = now;
}

}  // namespace headlab::app
