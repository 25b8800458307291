// Circuits: the open model's weight circuits (analysis/composition.h), no data needed — the Q-, K-
// or V-composition scores of every head of an earlier layer (rows, senders) into every head of a
// later one (columns, receivers) as a heatmap on a fixed 0–1 scale, the selected head's row and
// column framed; the heads that write most into the selected one; its OV eigenvalues and copying
// score. A click on a cell selects the receiver everywhere, a right-click the sender.
#pragma once

#include "app/gui/view.h"

#include <string>

namespace headlab::app {

class CircuitsView : public View {
 public:
  CircuitsView() : View("Circuits", false) {}
  bool onDemand() const override { return true; }
  std::string workspace() const override { return "Analyse"; }
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.25f, 0.05f, 0.5f, 0.7f}; }

 private:
  int kind_ = 1;  // 0 Q, 1 K, 2 V
};

}  // namespace headlab::app
