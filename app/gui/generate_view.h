// Generate: a causal model (or an encoder-decoder) writes from a prompt, token by token, with the
// Mixer's gates and mixing applied. Each generated token can be picked to see the query's attention
// row in every head of a layer (heads × keys, the newest row of each map), the alternatives it was
// drawn against, and what the KV cache holds against MHA with the same heads.
#pragma once

#include "app/gui/view.h"
#include "app/document/session.h"

#include <string>

namespace headlab::app {

class GenerateView : public View {
 public:
  GenerateView() : View("Generate", false) {}
  bool onDemand() const override { return true; }  // a floating window over the Explore layout

 protected:
  void drawContent(Workbench& wb) override;
  // Over the Head view (beside the map, not over it), leaving the Mixer in sight for live gating.
  ImVec4 defaultRect() const override { return {0.64f, 0.52f, 0.36f, 0.48f}; }

 private:
  void drawStep(Workbench& wb);
  void drawMap(Workbench& wb);

  GenerationSettings edit_{"The"};  // the fields
  GenerationSettings shown_;         // the session's settings the fields were last set from
  int selected_ = -1;  // the step shown (-1 = the newest)
  int layer_ = 0;
  bool as_map_ = false;  // the selected head's map over every step, instead of one step's rows
  int head_ = 0;
};

}  // namespace headlab::app
