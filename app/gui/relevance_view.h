// Relevance: why the model predicts what it does on the current input — each token shaded by its
// LRP relevance for a target the user picks (a position, and its top-1 or any token), or by
// attention rollout / flow into that position; the per-head LRP of this input as a layer × head
// grid; the conservation residual. Gating or mixing a head re-runs it with the new controls.
#pragma once

#include "app/gui/view.h"

#include <string>

namespace headlab::app {

class RelevanceView : public View {
 public:
  RelevanceView() : View("Relevance", false) {}
  std::string workspace() const override { return "Analyse"; }
  // Its figure as .svg or .pdf (app/export/analysis_figures.h).
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.5f, 0.28f, 0.5f}; }

 private:
  void drawTarget(Workbench& wb);
  void drawTokens(Workbench& wb);
  void drawHeads(Workbench& wb);
};

}  // namespace headlab::app
