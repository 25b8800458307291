// Reading a captured or exported PNG's colours (cairo): how much of a picture is drawn in a colour,
// the check the GUI tests use to tell what a view shows — a hot cell, a gate's stamp, an error's red.
#pragma once

#include "app/layout/colormap.h"

#include <cairo.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace headlab::test {

// The share of a PNG's pixels within a small distance (the sum of the channels' differences) of `rgb`.
// REQUIREs that the file reads as a PNG.
inline double share_near(const std::string& png, headlab::app::Rgb rgb, int tolerance = 30) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  size_t n = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint32_t c = reinterpret_cast<const uint32_t*>(data + y * stride)[x];
      const int r = (c >> 16) & 255, g = (c >> 8) & 255, b = c & 255;
      if (std::abs(r - rgb.r) + std::abs(g - rgb.g) + std::abs(b - rgb.b) < tolerance) ++n;
    }
  cairo_surface_destroy(s);
  return double(n) / double(w * h);
}

}  // namespace headlab::test
