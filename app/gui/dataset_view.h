// Dataset: choose files (plain text, CoNLL-U) and measures, run `headlab analyze` on the worker
// with progress, ETA and Stop — or open an existing head_report.json. The report feeds the head
// table, the heads grid's measure colouring, the head detail and the syntax view.
#pragma once

#include "app/gui/view.h"

#include <string>

namespace headlab::app {

class DatasetView : public View {
 public:
  DatasetView() : View("Dataset", false) {}
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string workspace() const override { return "Analyse"; }
  std::string exportFormats() const override { return ".json (and .csv, .md, figures beside it)"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.0f, 0.28f, 0.5f}; }

 private:
  void drawRun(Workbench& wb);
  void drawReport(Workbench& wb);
  // UI-only: the path being typed; the chosen files, measures and limit live in the document.
  std::string file_input_;
  std::string report_input_;
  std::string export_folder_;
};

}  // namespace headlab::app
