// Head table: one row per head of the report — every column of head_report.csv and role badges —
// sorted by any column, filtered by role and layer; a click selects the head everywhere. The role
// thresholds in use are shown and editable (roles re-derived from the stored counts, no re-run).
#pragma once

#include "app/gui/view.h"

#include <string>

namespace headlab::app {

class HeadTableView : public View {
 public:
  HeadTableView() : View("Head table", false) {}
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string workspace() const override { return "Analyse"; }
  std::string exportFormats() const override { return ".csv, .svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.28f, 0.0f, 0.42f, 0.5f}; }

 private:
  void drawControls(Workbench& wb);
};

}  // namespace headlab::app
