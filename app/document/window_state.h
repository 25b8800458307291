// What a session keeps of the window itself, so that a reopened session looks as it was saved: the
// views' places, which views are open, the Attention map's zoom, pan and query range, and the Head
// view's hidden heads. Plain data: the window (app/gui/workbench.h) fills it and applies it.
#pragma once

#include <string>
#include <vector>

namespace headlab::app {

// The Attention map's view of its map (app/layout/map_viewport.h), in cells of the rows on show.
struct MapViewState {
  float zoom = 1.0f;  // 1 = the whole map
  float col0 = 0.0f;  // the key at the left edge
  float row0 = 0.0f;  // the query at the top edge (counted from query_from when a range is on)
  int query_from = 0;
  int query_to = -1;  // -1 = every query row shown (no range)
};

struct HeadViewState {
  std::vector<int> hidden;  // heads switched off in the Head view
  int centre = 0;           // the query its readable window is centred on
};

struct WindowState {
  std::string imgui_ini;  // the views' places and sizes (ImGui::SaveIniSettingsToMemory)
  // Views by window title, against the workspace's own set (View::workspace, View::onDemand): those
  // open beyond it (Generate, Patching, Circuits …) and those of it closed by hand.
  std::vector<std::string> opened;
  std::vector<std::string> closed;
  MapViewState attention_map;
  HeadViewState head_view;
};

}  // namespace headlab::app
