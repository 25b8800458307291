#include "app/layout/head_colours.h"

#include <cmath>
#include <cstdint>

namespace headlab::app {

Rgb head_rgb(int head) {
  static const uint32_t tab10[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  if (head >= 0 && head < 10) {
    const uint32_t c = tab10[head];
    return {static_cast<uint8_t>(c >> 16), static_cast<uint8_t>((c >> 8) & 255), static_cast<uint8_t>(c & 255)};
  }
  // HSV (hue, 0.65, 0.9) to RGB.
  const float s = 0.65f, v = 0.9f;
  const float h6 = std::fmod(std::fabs(head * 0.61803f), 1.0f) * 6.0f;
  const int i = static_cast<int>(h6) % 6;
  const float f = h6 - std::floor(h6);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  float r = v, g = t, b = p;
  switch (i) {
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    case 5: r = v, g = p, b = q; break;
    default: break;
  }
  auto byte = [](float x) { return static_cast<uint8_t>(std::lround(x * 255)); };
  return {byte(r), byte(g), byte(b)};
}

}  // namespace headlab::app
