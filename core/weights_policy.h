// Whether a model folder's weights stay memory-mapped as stored or are copied to float32 at open
// (core/README.md, "Weights as stored"). Torch-free: `headlab info` says which before anything runs.
#pragma once

#include <cstdint>

namespace headlab::core {

// Folders whose weights, all in float32, take at most this many bytes are copied at open: at that
// size the copy costs little, and float32 weights compute faster than weights upcast in every pass.
constexpr int64_t kCopyAtMostBytes = int64_t(1) << 30;

// True when a folder holding `values` weight values stays mapped: HEADLAB_WEIGHTS=mapped or float32
// decides for every folder, otherwise the size. Throws std::invalid_argument for another
// HEADLAB_WEIGHTS value, naming it.
bool keep_weights_mapped(int64_t values);

}  // namespace headlab::core
