// What the GUI tests share: whether Xvfb is there to run the window, and reading a captured or
// exported PNG's colours (cairo) — how much of a picture is drawn in a colour, the check that tells
// what a view shows (a hot cell, a gate's stamp, an error's red).
#pragma once

#include "test_common.h"  // torch before Catch2 (tests/include_order_test.sh)

#include "app/layout/colormap.h"

#include <cairo.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace headlab::test {

// Whether xvfb-run is installed: a GUI test without it is reported skipped.
inline bool have_xvfb() {
  std::string out;
  return run_command("command -v xvfb-run", out) == 0;
}

// Pixels in a rectangle (fractions of the image) whose colour passes `test(r, g, b)`. REQUIREs that
// the file reads as a PNG.
template <class Test>
size_t count_pixels(const std::string& png, double x0, double y0, double x1, double y1, Test test) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
  const int stride = cairo_image_surface_get_stride(s);
  const unsigned char* data = cairo_image_surface_get_data(s);
  size_t n = 0;
  for (int y = static_cast<int>(y0 * h); y < static_cast<int>(y1 * h); ++y)
    for (int x = static_cast<int>(x0 * w); x < static_cast<int>(x1 * w); ++x) {
      const uint32_t c = reinterpret_cast<const uint32_t*>(data + y * stride)[x];
      if (test(static_cast<int>((c >> 16) & 255), static_cast<int>((c >> 8) & 255), static_cast<int>(c & 255))) ++n;
    }
  cairo_surface_destroy(s);
  return n;
}

// The share of a PNG's pixels within a small distance (the sum of the channels' differences) of `rgb`.
inline double share_near(const std::string& png, headlab::app::Rgb rgb, int tolerance = 30) {
  cairo_surface_t* s = cairo_image_surface_create_from_png(png.c_str());
  REQUIRE(cairo_surface_status(s) == CAIRO_STATUS_SUCCESS);
  const double pixels = double(cairo_image_surface_get_width(s)) * cairo_image_surface_get_height(s);
  cairo_surface_destroy(s);
  const size_t near = count_pixels(png, 0, 0, 1, 1, [&](int r, int g, int b) {
    return std::abs(r - rgb.r) + std::abs(g - rgb.g) + std::abs(b - rgb.b) < tolerance;
  });
  return double(near) / pixels;
}

}  // namespace headlab::test
