// Mixer: per layer, a toggle and gate slider per head, the ablation mode, each head's share taken
// from the Patching view's counterfactual, and the h×h mixing matrices before and after the softmax
// with presets. Every change re-runs live.
#pragma once

#include "app/gui/view.h"
#include "app/document/controls_edit.h"

namespace headlab::app {

struct AttentionSummary;

class MixerView : public View {
 public:
  MixerView() : View("Mixer") {}

 protected:
  void drawContent(Workbench& wb) override;
  ImVec4 defaultRect() const override { return {0.64f, 0.0f, 0.36f, 0.52f}; }

 private:
  bool drawMatrix(Workbench& wb, const AttentionSummary& att, int layer, const char* which, int heads);
  // "take from the counterfactual" sliders (activation patching live, like a gate).
  void drawTake(Workbench& wb, const AttentionSummary& att, int layer);
  // Preset parameters: UI-only until applied (the applied matrix is in the session).
  int preset_ = 2;
  int a_ = 0, b_ = 1;
  float alpha_ = 0.5f;
  bool open_pre_ = false, open_post_ = false;  // a preset was applied: show its matrix
};

}  // namespace headlab::app
