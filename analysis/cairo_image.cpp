#include "analysis/cairo_image.h"

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
                 double w, double h) {
  if (cols <= 0 || rows <= 0) return;
  cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
  cairo_surface_flush(img);
  unsigned char* px = cairo_image_surface_get_data(img);
  const int stride = cairo_image_surface_get_stride(img);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) reinterpret_cast<uint32_t*>(px + size_t(r) * stride)[c] = 0xFF000000u | pixel(r, c);
  cairo_surface_mark_dirty(img);
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, w / cols, h / rows);
  cairo_set_source_surface(cr, img, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, cols, rows);
  cairo_fill(cr);
  cairo_restore(cr);
  cairo_surface_destroy(img);
}

}  // namespace headlab::analysis
