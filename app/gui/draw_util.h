// Small drawing helpers the views share: vertical text, token labels, the colour bar, head colours.
#pragma once

#include "app/state/colormap.h"

#include <imgui.h>

#include <string>

namespace headlab::app {

// Text rotated 90° counter-clockwise, reading upwards from `bottom_left`.
void text_vertical(ImDrawList* list, ImVec2 bottom_left, ImU32 colour, const std::string& text);
// A token for a label: at most `max_chars` code points, "…" when cut; GPT-2's Ġ shown as "·".
std::string token_label(const std::string& token, size_t max_chars = 14);
// A horizontal colour bar with its range written under both ends (and the middle).
void colour_bar(ImDrawList* list, ImVec2 pos, ImVec2 size, Colormap map, const MapRange& range);
// Distinct colours for heads (Tableau 10, then hue steps).
ImU32 head_colour(int head, float alpha = 1.0f);
// SameLine() when an item `width` wide still fits on the current line, else a new line.
void same_line_if_fits(float width);
// Formats a legend value: 0.25, 1e-04, -3.2.
std::string format_value(float v);

}  // namespace headlab::app
