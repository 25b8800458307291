// The zoom and pan of a heatmap drawn in a fixed area, without a display: which cells are visible,
// zooming about a point, clamping, pixel ↔ cell mapping and how often to label a row or column.
// Coordinates are in cells (fractional) from the map's top-left corner and pixels from the area's
// top-left corner.
#pragma once

namespace headlab::app {

struct MapViewport {
  float zoom = 1.0f;  // 1: the whole map fits the area
  float col0 = 0.0f;  // the key (column) coordinate at the area's left edge
  float row0 = 0.0f;  // the query (row) coordinate at the area's top edge
};

// The map's size in cells and the pixel area it is drawn in.
struct MapArea {
  int rows = 0, cols = 0;
  float width = 0, height = 0;
};

// Visible cells: [row_begin, row_end) × [col_begin, col_end), partly visible ones included.
struct CellRange {
  int row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
};

// The cell size in pixels at zoom 1 (the whole map fits both ways).
float map_fit_cell(const MapArea& area);
// The cell size in pixels at `vp.zoom`.
float map_cell(const MapViewport& vp, const MapArea& area);
// The largest zoom: cells of `max_cell_px` pixels, never below 1.
float map_max_zoom(const MapArea& area, float max_cell_px);
// Keeps the zoom in [1, max_zoom] and the visible window inside the map (a map smaller than the
// area sits at its top-left corner).
void map_clamp(MapViewport& vp, const MapArea& area, float max_zoom);
// Multiplies the zoom by `factor` keeping the cell under pixel (px, py) where it is, then clamps.
void map_zoom_about(MapViewport& vp, const MapArea& area, float factor, float px, float py, float max_zoom);
// Moves the map by (dx, dy) pixels (a drag), then clamps.
void map_pan(MapViewport& vp, const MapArea& area, float dx, float dy, float max_zoom);
// Puts the cell coordinate (row, col) at the centre of the area, then clamps (minimap clicks).
void map_center_on(MapViewport& vp, const MapArea& area, float row, float col, float max_zoom);
// The visible part of the map, in cells.
CellRange map_visible(const MapViewport& vp, const MapArea& area);
// The visible extent in pixels (smaller than the area when the map does not fill it).
float map_drawn_width(const MapViewport& vp, const MapArea& area);
float map_drawn_height(const MapViewport& vp, const MapArea& area);
// The cell under pixel (px, py); false outside the drawn map.
bool map_cell_at(const MapViewport& vp, const MapArea& area, float px, float py, int& row, int& col);
// The pixel position of cell coordinate (row, col): x from col, y from row.
float map_x_of(const MapViewport& vp, const MapArea& area, float col);
float map_y_of(const MapViewport& vp, const MapArea& area, float row);
// Label every n-th row/column so labels of `text_px` pixels do not overlap cells of `cell_px`.
int map_label_stride(float cell_px, float text_px);
// Whether a map's token labels carry their positions ("17 sea"): on a map of more than 40 queries or
// keys, on screen (where labels are thinned, and every 5th token would read as consecutive words)
// and in its figures (a part of it starts at any position).
inline bool map_labels_numbered(int rows, int cols) { return rows > 40 || cols > 40; }

}  // namespace headlab::app
