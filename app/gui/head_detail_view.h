// Head detail: for the selected head, the evidence behind its role in the head report — the
// histogram of argmax offsets (positional, Voita et al. 2019 §5.1), the rare-word shares (§5.3),
// relation accuracies beside their fixed-offset baselines (Clark et al. 2019 §4), relevance and
// importance across the dataset, and its key-query spectrum (Cordonnier et al. 2020).
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class HeadDetailView : public View {
 public:
  HeadDetailView() : View("Head detail", false) {}
  std::string workspace() const override { return "Analyse"; }
  // Its figure as .svg or .pdf (app/export/analysis_figures.h).
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.70f, 0.0f, 0.30f, 0.5f}; }
};

}  // namespace headlab::app
