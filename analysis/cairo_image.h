// Drawing a grid of colours (an attention map, a colour bar) into a cairo figure as one embedded
// image scaled with nearest-neighbour sampling, so an SVG or PDF holds one picture rather than a
// rectangle per cell. Shared by the report figures and the window's figure export.
#pragma once

#include <cairo.h>

#include <cstdint>
#include <functional>

namespace headlab::analysis {

// pixel(row, col) gives 0xRRGGBB; the cols × rows picture fills (x, y, w, h).
void draw_pixels(cairo_t* cr, int cols, int rows, const std::function<uint32_t(int, int)>& pixel, double x, double y,
                 double w, double h);

}  // namespace headlab::analysis
