// Attention map: the selected head large, query tokens down the side, key tokens across the top,
// hover for query/key/weight, click a token to highlight its row or column everywhere.
#pragma once

#include "app/gui/view.h"

namespace headlab::app {

class AttentionMapView : public View {
 public:
  AttentionMapView() : View("Attention map") {}

 protected:
  void drawContent(Workbench& wb) override;
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }
  ImVec4 defaultRect() const override { return {0.24f, 0.52f, 0.40f, 0.48f}; }
};

// Colormap, linear/log and range choices (shared with the menu).
void scale_controls(Workbench& wb);

}  // namespace headlab::app
