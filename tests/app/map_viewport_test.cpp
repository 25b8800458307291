// Heatmap zoom and pan: a 512-token map in a 250-pixel area, zoomed about the cursor, dragged,
// clamped to the map, centred from the minimap, and the pixel → cell mapping hover and clicks use.
#include "test_common.h"

#include "app/layout/map_viewport.h"

using namespace headlab::app;

namespace {

const MapArea kLong{512, 512, 250.0f, 250.0f};
constexpr float kMaxZoom = 100.0f;

}  // namespace

TEST_CASE("at zoom 1 the whole map is visible and fits the area", "[viewport]") {
  MapViewport vp;
  map_clamp(vp, kLong, kMaxZoom);
  const CellRange r = map_visible(vp, kLong);
  CHECK(r.row_begin == 0);
  CHECK(r.row_end == 512);
  CHECK(r.col_begin == 0);
  CHECK(r.col_end == 512);
  CHECK(map_cell(vp, kLong) == Approx(250.0f / 512));
  CHECK(map_drawn_width(vp, kLong) == Approx(250.0f));
  // A wide area: the map is limited by its height and drawn narrower than the area.
  const MapArea wide{100, 100, 400.0f, 200.0f};
  CHECK(map_fit_cell(wide) == Approx(2.0f));
  CHECK(map_drawn_width(vp, wide) == Approx(200.0f));
}

TEST_CASE("zooming keeps the cell under the cursor in place", "[viewport]") {
  MapViewport vp;
  int row0 = -1, col0 = -1;
  REQUIRE(map_cell_at(vp, kLong, 60.3f, 180.7f, row0, col0));
  const float col_before = vp.col0 + 60.3f / map_cell(vp, kLong);
  map_zoom_about(vp, kLong, 8.0f, 60.3f, 180.7f, kMaxZoom);
  CHECK(vp.zoom == Approx(8.0f));
  const float col_after = vp.col0 + 60.3f / map_cell(vp, kLong);
  CHECK(col_after == Approx(col_before).margin(1e-3));
  int row1 = -1, col1 = -1;
  REQUIRE(map_cell_at(vp, kLong, 60.3f, 180.7f, row1, col1));
  CHECK(row1 == row0);
  CHECK(col1 == col0);
  // Zooming back out returns to the whole map.
  map_zoom_about(vp, kLong, 1.0f / 8.0f, 60.3f, 180.7f, kMaxZoom);
  CHECK(vp.zoom == Approx(1.0f));
  CHECK(vp.col0 == Approx(0.0f));
  CHECK(vp.row0 == Approx(0.0f));
}

TEST_CASE("zoom and pan stay inside the map", "[viewport]") {
  MapViewport vp;
  map_zoom_about(vp, kLong, 1e6f, 0, 0, kMaxZoom);
  CHECK(vp.zoom == Approx(kMaxZoom));
  map_zoom_about(vp, kLong, 1e-6f, 0, 0, kMaxZoom);
  CHECK(vp.zoom == Approx(1.0f));

  vp.zoom = 4.0f;  // 128 cells visible each way
  map_pan(vp, kLong, 1e5f, 1e5f, kMaxZoom);  // dragged far right/down: the top-left corner shows
  CHECK(vp.col0 == Approx(0.0f));
  CHECK(vp.row0 == Approx(0.0f));
  map_pan(vp, kLong, -1e5f, -1e5f, kMaxZoom);
  const CellRange r = map_visible(vp, kLong);
  CHECK(r.col_end == 512);
  CHECK(r.row_end == 512);
  CHECK(r.col_begin == 384);
  CHECK(r.row_begin == 384);
  // A drag of one cell moves the view one cell.
  const float cell = map_cell(vp, kLong);
  map_pan(vp, kLong, cell, 0, kMaxZoom);
  CHECK(vp.col0 == Approx(383.0f));
}

TEST_CASE("the minimap centres the view on a cell", "[viewport]") {
  MapViewport vp;
  vp.zoom = 8.0f;  // 64 cells visible
  map_center_on(vp, kLong, 300.0f, 100.0f, kMaxZoom);
  CHECK(vp.row0 == Approx(268.0f));
  CHECK(vp.col0 == Approx(68.0f));
  map_center_on(vp, kLong, 510.0f, 2.0f, kMaxZoom);  // near the corner: clamped
  CHECK(vp.row0 == Approx(448.0f));
  CHECK(vp.col0 == Approx(0.0f));
}

TEST_CASE("hover maps pixels to the right query and key when zoomed", "[viewport]") {
  MapViewport vp;
  vp.zoom = 10.0f;
  vp.row0 = 200.0f;
  vp.col0 = 37.5f;  // half a cell cut off at the left edge
  map_clamp(vp, kLong, kMaxZoom);
  const float cell = map_cell(vp, kLong);
  int row = -1, col = -1;
  REQUIRE(map_cell_at(vp, kLong, 0.1f, 0.1f, row, col));
  CHECK(row == 200);
  CHECK(col == 37);
  REQUIRE(map_cell_at(vp, kLong, 0.6f * cell, 3.5f * cell, row, col));
  CHECK(row == 203);
  CHECK(col == 38);
  CHECK(map_x_of(vp, kLong, 38.0f) == Approx(0.5f * cell));
  CHECK(map_y_of(vp, kLong, 203.0f) == Approx(3.0f * cell));
  CHECK_FALSE(map_cell_at(vp, kLong, -1.0f, 5.0f, row, col));
  CHECK_FALSE(map_cell_at(vp, kLong, 5.0f, 250.0f, row, col));
  const CellRange r = map_visible(vp, kLong);
  CHECK(r.col_begin == 37);
  CHECK(r.row_begin == 200);
  CHECK(r.row_end - r.row_begin == Approx(250.0f / cell).margin(1.0f));
}

TEST_CASE("labels appear once cells are tall enough for text", "[viewport]") {
  const float text = 13.0f;
  MapViewport vp;
  CHECK(map_label_stride(map_cell(vp, kLong), text) == 27);  // 0.49-pixel cells
  vp.zoom = 27.0f;
  CHECK(map_label_stride(map_cell(vp, kLong), text) == 1);
  CHECK(map_label_stride(13.0f, text) == 1);
  CHECK(map_label_stride(6.5f, text) == 2);
  CHECK(map_label_stride(0.0f, text) > 512);
  CHECK(map_max_zoom(kLong, 64.0f) == Approx(64.0f / (250.0f / 512)));
  CHECK(map_max_zoom(MapArea{4, 4, 400.0f, 400.0f}, 64.0f) == Approx(1.0f));
}
