// Colormaps (viridis, perceptually uniform; gray) and the value → colour scaling the heatmaps,
// the legend and the figure export share.
#pragma once

#include <cstdint>
#include <string>

namespace headlab::app {

enum class Colormap { Viridis, Gray };
const char* colormap_name(Colormap map);
Colormap colormap_from_name(const std::string& name);  // unknown → Viridis
// Whether `name` names a colormap ("viridis", "gray"): a command or session naming another is refused.
bool is_colormap_name(const std::string& name);

struct Rgb {
  uint8_t r, g, b;
};
Rgb colormap_rgb(Colormap map, float t);  // t in [0, 1]

// How values map to [0, 1]: weights linearly over [lo, hi] or log10 over [1e-4·hi, hi]; logits
// (which may be −∞ where masked) always linearly over their finite range.
struct MapRange {
  float lo = 0, hi = 1;
  bool log = false;
  float normalize(float v) const;
};

// The range of one map. `logits` for the J and L stages: the map's own. Weights: from 0, or the map's
// most negative weight (mixed heads), to 1 with `fixed_unit` (or the largest weight beyond 1), else
// to the map's maximum; a map with a negative weight is drawn linear even when `log_scale` asks.
MapRange map_range(const float* data, size_t n, bool logits, bool log_scale, bool fixed_unit);

// Writes rows×cols RGBA pixels (row-major, alpha 255).
void colorize(const float* data, int rows, int cols, const MapRange& range, Colormap map, uint8_t* rgba);

}  // namespace headlab::app
