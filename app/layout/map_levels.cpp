#include "app/layout/map_levels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace headlab::app {

namespace {

MapLevel halve(const MapLevel& in) {
  MapLevel out;
  out.rows = std::max(1, in.rows / 2);  // GL's level sizes: ⌊n/2⌋, at least 1
  out.cols = std::max(1, in.cols / 2);
  out.values.assign(static_cast<size_t>(out.rows) * out.cols, std::numeric_limits<float>::quiet_NaN());
  for (int r = 0; r < in.rows; ++r)
    for (int c = 0; c < in.cols; ++c) {
      const float v = in.values[static_cast<size_t>(r) * in.cols + c];
      if (std::isnan(v)) continue;
      // An odd side's last row (column) joins the last block.
      float& o = out.values[static_cast<size_t>(std::min(r / 2, out.rows - 1)) * out.cols + std::min(c / 2, out.cols - 1)];
      if (std::isnan(o) || v > o) o = v;
    }
  return out;
}

}  // namespace

std::vector<MapLevel> max_levels(const float* data, int rows, int cols, const uint8_t* masked) {
  std::vector<MapLevel> levels;
  if (rows <= 0 || cols <= 0) return levels;
  MapLevel base;
  base.rows = rows;
  base.cols = cols;
  base.values.assign(data, data + static_cast<size_t>(rows) * cols);
  if (masked)
    for (size_t i = 0; i < base.values.size(); ++i)
      if (masked[i]) base.values[i] = std::numeric_limits<float>::quiet_NaN();
  levels.push_back(std::move(base));
  while (levels.back().rows > 1 || levels.back().cols > 1) levels.push_back(halve(levels.back()));
  return levels;
}

std::vector<uint8_t> pool_masked(const uint8_t* masked, int rows, int cols, int block_rows, int block_cols) {
  block_rows = std::max(1, block_rows), block_cols = std::max(1, block_cols);
  const int out_rows = (rows + block_rows - 1) / block_rows, out_cols = (cols + block_cols - 1) / block_cols;
  std::vector<uint8_t> out(static_cast<size_t>(out_rows) * out_cols, 1);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      if (!masked[static_cast<size_t>(r) * cols + c]) out[static_cast<size_t>(r / block_rows) * out_cols + c / block_cols] = 0;
  return out;
}

}  // namespace headlab::app
