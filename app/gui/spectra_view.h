// Spectra: the singular values of each head's key-query form W_Q W_Kᵀ and their cumulative energy
// (Cordonnier et al. 2020, Fig. 1), for the selected head beside the other heads of its layer and
// the layer as a whole, with the ranks holding 90/95/99% of the energy marked.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class SpectraView : public View {
 public:
  SpectraView() : View("Spectra", false) {}
  std::string workspace() const override { return "Analyse"; }

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.70f, 0.5f, 0.30f, 0.5f}; }

 private:
  bool log_scale_ = true;   // UI-only: how the curves are drawn
  bool whole_layer_ = true;
};

}  // namespace headlab::app
