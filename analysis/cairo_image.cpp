#include "analysis/cairo_image.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <cairo-pdf.h>
#include <cairo-svg.h>

namespace headlab::analysis {

namespace {

cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

cairo_surface_t* create_vector_surface_in_memory(const std::string& format, std::string& bytes, double width,
                                                 double height) {
  if (format == "pdf") return cairo_pdf_surface_create_for_stream(append_bytes, &bytes, width, height);
  return cairo_svg_surface_create_for_stream(append_bytes, &bytes, width, height);
}

cairo_status_t png_to_memory(cairo_surface_t* image, std::string& bytes) {
  return cairo_surface_write_to_png_stream(image, append_bytes, &bytes);
}

void draw_pixels(cairo_t* cr, int cols, int rows, const std::function<uint32_t(int, int)>& pixel, double x, double y,
                 double w, double h, int64_t vector_cells) {
  if (cols <= 0 || rows <= 0) return;
  const double cw = w / cols, ch = h / rows;
  if (int64_t(cols) * rows <= vector_cells) {
    // Cells as rectangles, a run of equal colours in a row as one: every viewer draws them sharp.
    // Each reaches a hair into its neighbours so antialiased edges leave no seams between them.
    const double seam = 0.02 * std::min(cw, ch);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols;) {
        const uint32_t v = pixel(r, c);
        int end = c + 1;
        while (end < cols && pixel(r, end) == v) ++end;
        cairo_set_source_rgb(cr, ((v >> 16) & 255) / 255.0, ((v >> 8) & 255) / 255.0, (v & 255) / 255.0);
        cairo_rectangle(cr, x + c * cw, y + r * ch, (end - c) * cw + (end < cols ? seam : 0),
                        ch + (r + 1 < rows ? seam : 0));
        cairo_fill(cr);
        c = end;
      }
    return;
  }
  // Larger maps as one image with each cell `f` pixels square, at least ~2 pixels per point drawn,
  // so a viewer that smooths images when scaling (most SVG viewers) blurs only a sliver of each
  // cell's edge. At most 4096 pixels a side.
  const int f = std::max(1, std::min(std::min(4096 / cols, 4096 / rows),
                                     static_cast<int>(std::ceil(2.0 * std::max(cw, ch)))));
  const int iw = cols * f, ih = rows * f;
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, iw, ih);
  cairo_surface_flush(img);
  unsigned char* px = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  for (int r = 0; r < rows; ++r) {
    uint32_t* line = reinterpret_cast<uint32_t*>(px + size_t(r) * f * stride);
    for (int c = 0; c < cols; ++c) {
      const uint32_t v = 0xFF000000u | pixel(r, c);
      for (int i = 0; i < f; ++i) line[size_t(c) * f + i] = v;
    }
    for (int i = 1; i < f; ++i) std::memcpy(px + (size_t(r) * f + i) * stride, line, size_t(iw) * 4);
  }
  cairo_surface_mark_dirty(img);
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, w / iw, h / ih);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, iw, ih);
  cairo_fill(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

}  // namespace headlab::analysis
