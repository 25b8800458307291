// Paper figures without a window (cairo): the attention map, the heads grid and the head view as
// SVG, PDF or PNG (by the file's extension), with token labels, a colour bar and a title.
#pragma once

#include "app/layout/colormap.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::app {

// One map [rows, cols] (row-major) with its colour range.
struct FigureMap {
  const float* data = nullptr;
  MapRange range;
  float gate = 1.0f;  // < 1 drawn dimmed with the gate written on it
  // [rows, cols]: 1 where the layer's attention pattern forbids the key (causal, a sliding window…),
  // hatched grey as on screen, apart from weights that are merely small; null when none is.
  const uint8_t* masked = nullptr;
  bool mixed = false;  // a mixing matrix changes the head: marked "mix" in the heads grid, as on screen
  // The share of the head's output taken from the counterfactual (the Mixer): marked "cf" in the
  // heads grid, named in the caption; the map is the clean input's pattern.
  float taken = 0.0f;
  // Learned sinks (gpt-oss): [rows] each query's sink share, drawn as a column right of the keys on
  // the map's scale, so that a row reads to 1 with it; null without sinks.
  const float* sink = nullptr;
};

struct FigureTokens {
  std::vector<std::string> queries;  // rows
  std::vector<std::string> keys;     // columns
};

// `subtitle` (under the title; "" = none) says which part of the map is drawn when it is not all of it.
void write_attention_map(const std::string& path, const std::string& title, const FigureMap& map, int rows, int cols,
                         const FigureTokens& tokens, Colormap colormap, const std::string& subtitle = "");

// maps[layer][head], every map [rows, cols].
void write_heads_grid(const std::string& path, const std::string& title, const std::vector<std::vector<FigureMap>>& maps,
                      int rows, int cols, Colormap colormap);

// heads[h] [rows, cols] value weights, null for a head left out (hidden in the view; the others keep
// their colours); line opacity = the weight (0–1), or with `relative_opacity` the weight relative to
// the strongest; the `selected` head drawn on top, wider.
void write_head_view(const std::string& path, const std::string& title, const std::vector<const float*>& heads,
                     int rows, int cols, const FigureTokens& tokens, bool relative_opacity = false, int selected = -1);

}  // namespace headlab::app
