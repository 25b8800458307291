#include "app/layout/map_viewport.h"

#include <algorithm>
#include <cmath>

namespace headlab::app {

float map_fit_cell(const MapArea& area) {
  if (area.rows <= 0 || area.cols <= 0 || area.width <= 0 || area.height <= 0) return 1.0f;
  return std::min(area.width / area.cols, area.height / area.rows);
}

float map_cell(const MapViewport& vp, const MapArea& area) { return map_fit_cell(area) * vp.zoom; }

float map_max_zoom(const MapArea& area, float max_cell_px) {
  return std::max(1.0f, max_cell_px / map_fit_cell(area));
}

void map_clamp(MapViewport& vp, const MapArea& area, float max_zoom) {
  if (!std::isfinite(vp.zoom)) vp.zoom = 1.0f;
  vp.zoom = std::min(std::max(vp.zoom, 1.0f), std::max(1.0f, max_zoom));
  const float cell = map_cell(vp, area);
  const float max_col0 = std::max(0.0f, area.cols - area.width / cell);
  const float max_row0 = std::max(0.0f, area.rows - area.height / cell);
  if (!std::isfinite(vp.col0)) vp.col0 = 0;
  if (!std::isfinite(vp.row0)) vp.row0 = 0;
  vp.col0 = std::min(std::max(vp.col0, 0.0f), max_col0);
  vp.row0 = std::min(std::max(vp.row0, 0.0f), max_row0);
}

void map_zoom_about(MapViewport& vp, const MapArea& area, float factor, float px, float py, float max_zoom) {
  const float before = map_cell(vp, area);
  const float col = vp.col0 + px / before, row = vp.row0 + py / before;
  vp.zoom *= factor;
  vp.zoom = std::min(std::max(vp.zoom, 1.0f), std::max(1.0f, max_zoom));
  const float after = map_cell(vp, area);
  vp.col0 = col - px / after;
  vp.row0 = row - py / after;
  map_clamp(vp, area, max_zoom);
}

void map_pan(MapViewport& vp, const MapArea& area, float dx, float dy, float max_zoom) {
  const float cell = map_cell(vp, area);
  vp.col0 -= dx / cell;
  vp.row0 -= dy / cell;
  map_clamp(vp, area, max_zoom);
}

void map_center_on(MapViewport& vp, const MapArea& area, float row, float col, float max_zoom) {
  const float cell = map_cell(vp, area);
  vp.col0 = col - area.width / cell / 2;
  vp.row0 = row - area.height / cell / 2;
  map_clamp(vp, area, max_zoom);
}

CellRange map_visible(const MapViewport& vp, const MapArea& area) {
  const float cell = map_cell(vp, area);
  CellRange r;
  r.col_begin = std::max(0, static_cast<int>(std::floor(vp.col0)));
  r.row_begin = std::max(0, static_cast<int>(std::floor(vp.row0)));
  r.col_end = std::min(area.cols, static_cast<int>(std::ceil(vp.col0 + area.width / cell - 1e-4f)));
  r.row_end = std::min(area.rows, static_cast<int>(std::ceil(vp.row0 + area.height / cell - 1e-4f)));
  r.col_end = std::max(r.col_end, r.col_begin);
  r.row_end = std::max(r.row_end, r.row_begin);
  return r;
}

float map_drawn_width(const MapViewport& vp, const MapArea& area) {
  return std::max(0.0f, std::min(area.width, (area.cols - vp.col0) * map_cell(vp, area)));
}

float map_drawn_height(const MapViewport& vp, const MapArea& area) {
  return std::max(0.0f, std::min(area.height, (area.rows - vp.row0) * map_cell(vp, area)));
}

bool map_cell_at(const MapViewport& vp, const MapArea& area, float px, float py, int& row, int& col) {
  if (px < 0 || py < 0 || px >= map_drawn_width(vp, area) || py >= map_drawn_height(vp, area)) return false;
  const float cell = map_cell(vp, area);
  col = std::min(area.cols - 1, static_cast<int>(std::floor(vp.col0 + px / cell)));
  row = std::min(area.rows - 1, static_cast<int>(std::floor(vp.row0 + py / cell)));
  return row >= 0 && col >= 0;
}

float map_x_of(const MapViewport& vp, const MapArea& area, float col) { return (col - vp.col0) * map_cell(vp, area); }
float map_y_of(const MapViewport& vp, const MapArea& area, float row) { return (row - vp.row0) * map_cell(vp, area); }

int map_label_stride(float cell_px, float text_px) {
  if (!(cell_px > 0)) return 1 << 30;
  return std::max(1, static_cast<int>(std::ceil(text_px / cell_px - 1e-4f)));
}

}  // namespace headlab::app
