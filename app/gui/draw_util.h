// Small drawing helpers the views share: vertical text, token labels, the colour bar, head colours.
#pragma once

#include "app/layout/colormap.h"
#include "app/document/document.h"

#include <imgui.h>

#include <string>

namespace headlab::app {

// Text rotated 90° counter-clockwise, reading upwards from `bottom_left`.
void text_vertical(ImDrawList* list, ImVec2 bottom_left, ImU32 colour, const std::string& text);
// A token for a label: at most `max_chars` code points, "…" when cut; the text it spells
// (core::readable_token: "ĠâĢľ" reads "·“") where the window's font draws all of it; WordPiece's
// "##und" kept visible in widget labels (see text_button).
std::string token_label(const std::string& token, size_t max_chars = 14);
// A horizontal colour bar with its range written under both ends (and the middle).
void colour_bar(ImDrawList* list, ImVec2 pos, ImVec2 size, Colormap map, const MapRange& range);
// A colour bar on the current line, its ends written beside it ("0 ▮▮▮▮ 1"), for a toolbar;
// `tooltip` explains the scale on hover.
void inline_colour_bar(Colormap map, const MapRange& range, float width, const char* tooltip);
// The scale the attention maps on show are coloured with, for the views' toolbars: a colour bar
// 0–1 for weights (or log), "each map to its own range" otherwise.
void attention_scale_legend(Colormap map, bool logits, bool auto_range, bool log_scale);
// When the last input was refused, a line saying that the view shows the last accepted input
// (the maps and predictions of the text before), not the text in the Input view.
void refused_input_banner(const Document& doc);
// When the session's gates or mixing differ from those the run on show was computed with (not run
// yet, or set on a refused input), a line saying that the maps draw the ones they ran with.
void controls_not_shown_line(const Document& doc);
// Distinct colours for heads (Tableau 10, then hue steps).
ImU32 head_colour(int head, float alpha = 1.0f);
// A field's label before it, where it is read ("layer [slider]" rather than ImGui's "[slider] layer").
void label_before(const char* text);
// SameLine() when an item `width` wide still fits on the current line, else a new line.
void same_line_if_fits(float width);
// Formats a legend value: 0.25, 1e-04, -3.2.
std::string format_value(float v);
// A probability as people read it: 0.734, 0.012, 3.1e-05 (never "0.000" for a small one).
std::string format_probability(float p);
// A signed change of probability the same way: +0.120, -0.003, +4.2e-05, 0 for none.
std::string format_probability_change(float d);
// A small button whose label is drawn as text, so a token such as WordPiece's "##und" shows
// (ImGui reads "##" in a widget label as the start of its hidden id). `id` keeps buttons apart.
bool text_button(const std::string& label, int id, bool highlighted = false);

}  // namespace headlab::app
