// Drawing a grid of colours (an attention map, a colour bar) into a cairo figure: up to 64 × 64
// cells as vector rectangles (sharp in every viewer), larger grids as one embedded image with each
// cell several pixels square (so a viewer that smooths images does not blur the cells into each
// other); and surfaces whose bytes land in memory, so a figure file is written whole through
// core::write_file_atomic. Shared by the report figures and the window's figure export.
#pragma once

#include <cairo.h>

#include <cstdint>
#include <functional>
#include <string>

namespace headlab::analysis {

// Grids of at most this many cells are drawn as rectangles.
inline constexpr int64_t kVectorCells = 64 * 64;

// A figure of many maps draws them all as images once their cells together pass this many: a grid
// of an 8B model's 1,024 heads as rectangles was a 396 MB SVG.
inline constexpr int64_t kFigureVectorCells = int64_t(1) << 18;

// pixel(row, col) gives 0xRRGGBB; the cols × rows picture fills (x, y, w, h). At most
// `vector_cells` cells are drawn as rectangles, more as one image.
void draw_pixels(cairo_t* cr, int cols, int rows, const std::function<uint32_t(int, int)>& pixel, double x, double y,
                 double w, double h, int64_t vector_cells = kVectorCells);

// An SVG ("svg") or PDF ("pdf") surface of width × height points whose bytes are appended to
// `bytes` (which must outlive the surface) as cairo writes them; check cairo_surface_status.
cairo_surface_t* create_vector_surface_in_memory(const std::string& format, std::string& bytes, double width,
                                                 double height);

// An image surface encoded as PNG into `bytes`.
cairo_status_t png_to_memory(cairo_surface_t* image, std::string& bytes);

}  // namespace headlab::analysis
