// Output: top-k predictions at the chosen position (each [MASK] for masked LMs, the next token for
// causal ones) with p, Δp against the unmodified model and the KL divergence.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class OutputView : public View {
 public:
  OutputView() : View("Output") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.0f, 0.65f, 0.24f, 0.35f}; }
};

}  // namespace headlab::app
