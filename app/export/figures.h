// Paper figures without a window (cairo): the attention map, the heads grid and the head view as
// SVG, PDF or PNG (by the file's extension), with token labels, a colour bar and a title.
#pragma once

#include "app/layout/colormap.h"

#include <string>
#include <vector>

namespace headlab::app {

// One map [rows, cols] (row-major) with its colour range.
struct FigureMap {
  const float* data = nullptr;
  MapRange range;
  float gate = 1.0f;  // < 1 drawn dimmed with the gate written on it
  // Learned sinks (gpt-oss): [rows] each query's sink share, drawn as a column right of the keys on
  // the map's scale, so that a row reads to 1 with it; null without sinks.
  const float* sink = nullptr;
};

struct FigureTokens {
  std::vector<std::string> queries;  // rows
  std::vector<std::string> keys;     // columns
};

void write_attention_map(const std::string& path, const std::string& title, const FigureMap& map, int rows, int cols,
                         const FigureTokens& tokens, Colormap colormap);

// maps[layer][head], every map [rows, cols].
void write_heads_grid(const std::string& path, const std::string& title, const std::vector<std::vector<FigureMap>>& maps,
                      int rows, int cols, Colormap colormap);

// heads[h] [rows, cols] value weights; line opacity = the weight (0–1), or with `relative_opacity`
// the weight relative to the strongest; the `selected` head drawn on top, wider.
void write_head_view(const std::string& path, const std::string& title, const std::vector<const float*>& heads,
                     int rows, int cols, const FigureTokens& tokens, bool relative_opacity = false, int selected = -1);

}  // namespace headlab::app
