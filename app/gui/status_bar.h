// Status bar: the running task with a progress bar and a stop button, timings, the last error.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class StatusBar : public View {
 public:
  StatusBar() : View("Status") {}

 protected:
  void drawContent(Workbench& wb) override;
  std::string workspace() const override { return ""; }
  ImVec4 defaultRect() const override { return {0, 0, 1, 0}; }
  bool pinned() const override { return true; }
  ImGuiWindowFlags windowFlags() const override {
    return ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
           ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
  }
};

}  // namespace headlab::app
