// Heads grid (the "model view"): layers × heads thumbnails of every attention map as GL textures —
// or, coloured by a measure of the head report (confidence, relevance, a share…), a layer × head
// heatmap with a colour bar; hover shows the value, a click selects the head.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class HeadsGridView : public View {
 public:
  HeadsGridView() : View("Heads grid") {}

 protected:
  void drawContent(Workbench& wb) override;
  // The measure heatmap; false when the report lacks the measure (the maps are drawn instead).
  bool drawMeasure(Workbench& wb, const std::string& measure);
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }
  ImVec4 defaultRect() const override { return {0.24f, 0.0f, 0.40f, 0.52f}; }
};

// The attention / stage selector shared by the grid and the map: returns true when it changed.
bool attention_selector(Workbench& wb);

}  // namespace headlab::app
