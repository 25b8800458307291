// GL textures of attention maps, built on the UI thread from a RunSnapshot: one per head of every
// layer of the attention and stage on show. Only layers whose buffers changed are re-uploaded.
#pragma once

#include "app/engine/workbench_engine.h"
#include "app/state/colormap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::app {

struct MapStyle {
  Colormap colormap = Colormap::Viridis;
  bool log_scale = false;
  bool fixed_range = false;
  bool operator==(const MapStyle& o) const {
    return colormap == o.colormap && log_scale == o.log_scale && fixed_range == o.fixed_range;
  }
};

class HeadTextures {
 public:
  HeadTextures() = default;
  ~HeadTextures();
  HeadTextures(const HeadTextures&) = delete;
  HeadTextures& operator=(const HeadTextures&) = delete;

  // Brings the textures up to date with `maps` at `stage`; returns the number of maps uploaded.
  int sync(const AttentionMaps* maps, Stage stage, const MapStyle& style);
  // 0 when absent.
  unsigned texture(int layer, int head) const;
  // The range a map was coloured with (for the legend).
  MapRange range(int layer, int head) const;
  double last_upload_ms() const { return last_upload_ms_; }
  void clear();

 private:
  struct Entry {
    unsigned texture = 0;
    int width = 0, height = 0;
    MapRange range;
  };
  struct Layer {
    uint64_t version = 0;
    std::vector<Entry> heads;
  };
  std::vector<Layer> layers_;
  std::string stack_;
  Stage stage_ = Stage::U;
  MapStyle style_;
  std::vector<uint8_t> pixels_;
  double last_upload_ms_ = 0;
};

}  // namespace headlab::app
