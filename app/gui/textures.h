// GL textures of attention maps, built on the UI thread from a RunSnapshot: one per head of every
// layer of the attention and stage on show. Only layers whose buffers changed are re-uploaded.
// Where the GL compiles HeadLab's colormap shader, each map is uploaded as raw weights (GL_R32F)
// and coloured on the GPU from a 256×1 colormap texture and the map's range; otherwise it is
// coloured on the CPU and uploaded as RGBA. Each texture carries max-pooled mipmap levels
// (app/layout/map_levels.h), so a map drawn smaller than its size (a heads-grid cell, a long input
// fitted into the map view) keeps its brightest cells instead of averaging a sharp head away.
#pragma once

#include "app/work/workbench_engine.h"
#include "app/layout/colormap.h"

#include <imgui.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace headlab::app {

struct MapStyle {
  Colormap colormap = Colormap::Viridis;
  bool log_scale = false;
  bool auto_range = false;  // weights from 0 to each map's maximum instead of over 0–1
  bool operator==(const MapStyle& o) const {
    return colormap == o.colormap && log_scale == o.log_scale && auto_range == o.auto_range;
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
  // Draws a map into `list` over [p0, p1] showing texture coordinates [uv0, uv1], coloured by the
  // GPU (a draw callback switches to the colormap shader and back) or from the RGBA texture.
  void draw(ImDrawList* list, int layer, int head, ImVec2 p0, ImVec2 p1, ImVec2 uv0 = ImVec2(0, 0),
            ImVec2 uv1 = ImVec2(1, 1));
  // True when maps are coloured on the GPU (decided at the first sync).
  bool gpu_colour() const { return gpu_colour_ == 1; }
  // Colours on the CPU from now on (tests and comparisons); call before the first sync.
  void force_cpu_colour() { gpu_colour_ = 0; }
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
  core::Stack stack_ = core::Stack::Encoder;
  Stage stage_ = Stage::U;
  MapStyle style_;
  std::vector<uint8_t> pixels_;
  double last_upload_ms_ = 0;

  // The GPU path: the program, its uniforms, the colormap texture and per-draw parameters that
  // live until the frame's draw data has been rendered (and captured).
  struct DrawParams {
    const HeadTextures* owner;
    MapRange range;
  };
  static void use_program(const ImDrawList* list, const ImDrawCmd* cmd);
  bool build_program();
  void build_lut(Colormap map);
  void read_locations() const;
  int gpu_colour_ = -1;  // -1: not tried yet
  unsigned program_ = 0, lut_ = 0;
  Colormap lut_map_ = Colormap::Viridis;
  bool lut_built_ = false;
  mutable int loc_proj_ = -1, loc_map_ = -1, loc_lut_ = -1, loc_lo_ = -1, loc_hi_ = -1, loc_log_ = -1;
  mutable int loc_imgui_proj_ = -1;
  mutable unsigned linked_for_ = 0;  // the ImGui program whose attribute locations ours matches
  std::deque<DrawParams> params_;
  int params_frame_ = -1;
};

}  // namespace headlab::app
