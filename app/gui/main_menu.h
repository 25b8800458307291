// The menu bar (File, View), the banner, the session path prompts, messages and crash recovery.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace headlab::app {

class View;
class Workbench;

class MainMenu {
 public:
  // `recover` names an autosave left by a run that did not exit cleanly ("" = none).
  explicit MainMenu(std::string recover) : recover_(std::move(recover)) {}
  // The menu bar: before the views.
  void draw(Workbench& wb, std::vector<std::unique_ptr<View>>& views);
  // Prompts, messages and the recovery offer: after the views, so a modal never opens before the
  // windows it blocks exist (ImGui 1.86 asserts otherwise).
  void drawOverlays(Workbench& wb);
  const std::string& session_path() const { return session_path_; }

 private:
  // File ▸ Open session / Save session as: the file dialog, then open or save.
  void choose_session(Workbench& wb, bool save);
  void drawMessages(Workbench& wb);
  void drawRecovery(Workbench& wb);
  std::string session_path_;  // where File ▸ Save writes ("" = ask)
  std::string recover_;
  int frames_ = 0;
};

}  // namespace headlab::app
