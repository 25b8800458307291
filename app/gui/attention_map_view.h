// Attention map: the selected head large, query tokens down the side, key tokens across the top,
// hover for query/key/weight, click a token to highlight its row or column everywhere. Long inputs:
// the wheel zooms about the cursor, a drag pans, a minimap shows where the view is, and a query
// range limits the rows shown.
#pragma once

#include "app/gui/view.h"
#include "app/layout/map_viewport.h"

#include <optional>

namespace headlab::app {

class AttentionMapView : public View {
 public:
  AttentionMapView();

 protected:
  void drawContent(Workbench& wb) override;
  bool exportFile(Workbench& wb, const std::string& path) override;
  std::string exportFormats() const override { return ".svg, .pdf"; }
  ImVec4 defaultRect() const override { return {0.24f, 0.52f, 0.40f, 0.48f}; }
  void keep_state(WindowState& window) const override;
  void restore_state(const WindowState& window, uint64_t after_generation) override;

 private:
  // UI-only state: zoom/pan, the query range and the selection last followed.
  MapViewport viewport_;
  bool row_range_on_ = false;
  int row_from_ = 0, row_to_ = -1;
  int followed_query_ = -1, followed_key_ = -1;
  float start_zoom_ = 1.0f;  // HEADLAB_MAP_ZOOM: the zoom the view opens with (figures, screenshots)
  int shown_rows_ = -1, shown_cols_ = -1;  // the map size the viewport was made for
  CellRange shown_;  // the rows and columns on show last frame (what an SVG/PDF export draws)
  // A loaded session's view of the map, waiting for the session's own run (snapshot generation
  // newer than restore_after_); then the viewport a new map size starts from instead of the fit.
  std::optional<MapViewState> restore_;
  uint64_t restore_after_ = 0;
  std::optional<MapViewport> restored_viewport_;
};

// Colormap, linear/log and range choices (shared with the menu).
void scale_controls(Workbench& wb);

}  // namespace headlab::app
