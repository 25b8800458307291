// Spectra: the singular values of each head's key-query form W_Q W_Kᵀ and their cumulative energy
// (Cordonnier et al. 2020, Fig. 1) from the model's weights — the selected head beside the other
// heads of its layer, or the layer as a whole (W_Q, W_K, W_Q W_Kᵀ) — with the ranks holding
// 90/95/99% of the energy marked; and beside them the current input's T×S logit spectra, whose
// rank the key size bounds (Bhojanapalli et al. 2020), with the key size drawn as a line.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class SpectraView : public View {
 public:
  SpectraView() : View("Spectra", false) {}
  std::string workspace() const override { return "Analyse"; }
  // Its figure as .svg or .pdf (app/export/analysis_figures.h).
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.70f, 0.5f, 0.30f, 0.5f}; }

 private:
  // UI-only: how the curves are drawn.
  bool log_scale_ = true;
  bool whole_layer_ = false;  // the layer's W_Q, W_K and W_Q W_Kᵀ instead of its heads
};

}  // namespace headlab::app
