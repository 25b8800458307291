#include "app/layout/token_window.h"

#include <algorithm>
#include <cmath>

namespace headlab::app {

TokenWindow token_window(int count, float height, float row_px, int centre, float fraction) {
  TokenWindow w;
  w.count = std::max(0, count);
  if (w.count == 0 || !(row_px > 0) || !(height > 0)) return w;
  if (w.count * row_px <= height) {
    w.begin = 0, w.end = w.count;
    w.big = w.small = row_px;
    return w;
  }
  const int size = std::min(w.count, std::max(1, static_cast<int>(height * fraction / row_px)));
  centre = std::min(std::max(centre, 0), w.count - 1);
  w.begin = std::min(std::max(0, centre - size / 2), w.count - size);
  w.end = w.begin + size;
  w.big = row_px;
  const int rest = w.count - size;
  w.small = rest > 0 ? std::max(0.0f, height - size * row_px) / rest : 0.0f;
  return w;
}

float token_window_y(const TokenWindow& w, int i) {
  i = std::min(std::max(i, 0), w.count);
  if (i <= w.begin) return i * w.small;
  if (i <= w.end) return w.begin * w.small + (i - w.begin) * w.big;
  return w.begin * w.small + (w.end - w.begin) * w.big + (i - w.end) * w.small;
}

float token_window_row(const TokenWindow& w, int i) { return i >= w.begin && i < w.end ? w.big : w.small; }

float token_window_height(const TokenWindow& w) { return token_window_y(w, w.count); }

int token_window_at(const TokenWindow& w, float y) {
  if (w.count == 0) return -1;
  const float top = w.begin * w.small, bottom = token_window_y(w, w.end);
  int i;
  if (y < top)
    i = w.small > 0 ? static_cast<int>(std::floor(y / w.small)) : 0;
  else if (y < bottom)
    i = w.begin + static_cast<int>(std::floor((y - top) / w.big));
  else
    i = w.small > 0 ? w.end + static_cast<int>(std::floor((y - bottom) / w.small)) : w.count - 1;
  return std::min(std::max(i, 0), w.count - 1);
}

}  // namespace headlab::app
