// Model: the architecture summary and an in-app folder browser with recent folders.
#pragma once

#include "app/gui/view.h"

#include <string>
#include <vector>

namespace headlab::app {

class ModelView : public View {
 public:
  ModelView() : View("Model") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.0f, 0.24f, 0.40f}; }

 private:
  void drawSummary(Workbench& wb);
  void drawBrowser(Workbench& wb);
  void listDirectory();
  // Browser state is UI-only (not a user choice a session keeps).
  std::string browse_dir_;
  char path_[1024] = {};
  struct Entry {
    std::string name;
    bool is_model = false;
  };
  std::vector<Entry> entries_;
  std::string listed_dir_;
};

}  // namespace headlab::app
