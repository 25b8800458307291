// Levels of detail for drawing an attention map smaller than it is. GL's own minification (a
// linear filter or ordinary mipmaps) averages: a head that puts all its weight on the previous token
// is a one-cell diagonal, and drawn at a third of its size it would show as a third of its weight,
// so a sharp head looks diffuse. These levels keep the largest value instead (max-pooling, as the
// run's thumbnails do: core/map_detail.h), so a map keeps its brightest cells at every size. The
// texture uploads them as its mipmap levels and the GL picks the level that fits the drawn size.
// Window-free and torch-free.
#pragma once

#include <cstdint>
#include <vector>

namespace headlab::app {

struct MapLevel {
  int rows = 0, cols = 0;
  std::vector<float> values;  // [rows, cols]; NaN where every cell it covers is a forbidden key
};

// Level 0 is `data` [rows, cols] with NaN where `masked` (null = none) is set; level k + 1 halves
// level k as GL sizes mipmap levels (⌊rows/2⌋ × ⌊cols/2⌋, at least 1, so the texture is complete),
// each cell the largest non-NaN value of its 2 × 2 block (an odd side's last row or column joins
// the last block; NaN when every value is), down to 1 × 1. An empty map gives no level.
std::vector<MapLevel> max_levels(const float* data, int rows, int cols, const uint8_t* masked);

// `masked` [rows, cols] (1 = a key the layer's pattern forbids) pooled as a run pools its thumbnails:
// blocks of block_rows × block_cols cells (the last ones short), a cell forbidden only when every
// key of its block is. Gives [⌈rows / block_rows⌉, ⌈cols / block_cols⌉].
std::vector<uint8_t> pool_masked(const uint8_t* masked, int rows, int cols, int block_rows, int block_cols);

}  // namespace headlab::app
