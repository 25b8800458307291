// How much of its attention maps a run keeps. The maps of every head are T × S floats per stage:
// a 32-layer, 32-head model at 512 tokens holds 1 GiB of them per stage, yet a grid of 1,024 heads
// draws each in under a hundred pixels. A run can keep every map max-pooled to a thumbnail and one
// layer — the one a view opens — at full size (core/model/map_pool.h does the pooling).
#pragma once

#include "core/controls.h"

#include <algorithm>
#include <cstdint>

namespace headlab::core {

struct MapDetail {
  // > 0: each captured map (J, L, W, U and the sink's share) is kept max-pooled to at most
  // thumbnail_side × thumbnail_side per head: blocks of ⌈T / side⌉ queries × ⌈S / side⌉ keys, each
  // cell the largest value of its block, so a single sharp key stays as bright as it is and a map's
  // maximum (its colour range) is unchanged. 0: every map at full size.
  int thumbnail_side = 0;
  // The one attention call kept at full size while the rest are pooled (its stack, layer); a
  // negative layer keeps none.
  Stack full_stack = Stack::Encoder;
  int full_layer = -1;

  bool pooled() const { return thumbnail_side > 0; }
  // True when (stack, layer)'s maps are pooled under this detail.
  bool pools(Stack stack, int layer) const { return pooled() && !(stack == full_stack && layer == full_layer); }
  bool operator==(const MapDetail& o) const {
    return thumbnail_side == o.thumbnail_side && full_stack == o.full_stack && full_layer == o.full_layer;
  }
  bool operator!=(const MapDetail& o) const { return !(*this == o); }
};

// The block a side of n cells is pooled with (⌈n / side⌉) and the pooled side's length (⌈n / block⌉,
// at most `side`); both n when side ≤ 0.
inline int64_t pooling_block(int64_t n, int side) { return side > 0 ? std::max<int64_t>(1, (n + side - 1) / side) : 1; }
inline int64_t pooled_length(int64_t n, int side) {
  const int64_t b = pooling_block(n, side);
  return (n + b - 1) / b;
}

}  // namespace headlab::core
