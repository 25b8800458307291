// Patching: the Input view's text against a counterfactual of the same length (activation patching,
// analysis/patching.h). One site of every head (or layer) taken from the counterfactual, one at a
// time: a layer × head heatmap of the normalised effect that fills in as the task runs, attribution
// patching's first-order estimate beside it at once, and the clean run's direct logit attribution
// per head. A click on a cell selects the head everywhere; the Mixer takes heads from the
// counterfactual live.
#pragma once

#include "app/gui/view.h"
#include "app/document/session.h"

#include <string>

namespace headlab::app {

class PatchingView : public View {
 public:
  PatchingView() : View("Patching", false) {}
  bool onDemand() const override { return true; }
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.30f, 0.08f, 0.46f, 0.62f}; }

 private:
  void drawSettings(Workbench& wb);
  // A layer × unit heatmap of normalised effects [layer][unit] (NaN: not run yet) on ±scale.
  void drawTable(Workbench& wb, const char* id, const std::vector<std::vector<float>>& table, bool heads, float scale,
                 float width);
  void drawDla(Workbench& wb, const std::vector<std::vector<float>>& dla, float width);

  PatchingSettings edit_;   // the fields
  PatchingSettings shown_;  // the session's settings the fields were last set from
};

}  // namespace headlab::app
