#include "app/gui/draw_util.h"

#include "app/export/shown_controls.h"
#include "app/layout/head_colours.h"
#include "core/tokenizer/token_lookup.h"

#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>

#include <cmath>
#include <cstdio>

namespace headlab::app {

void label_before(const char* text) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(text);
  ImGui::SameLine();
}

void same_line_if_fits(float width) {
  ImGui::SameLine();
  if (ImGui::GetCursorScreenPos().x + width > ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x) ImGui::NewLine();
}

void text_vertical(ImDrawList* list, ImVec2 bottom_left, ImU32 colour, const std::string& text) {
  const int first = list->VtxBuffer.Size;
  const ImVec4 no_clip(-1e6f, -1e6f, 1e6f, 1e6f);  // CPU clipping would drop glyphs before rotation
  list->AddText(ImGui::GetFont(), ImGui::GetFontSize(), bottom_left, colour, text.c_str(), nullptr, 0.0f, &no_clip);
  for (int i = first; i < list->VtxBuffer.Size; ++i) {
    ImDrawVert& v = list->VtxBuffer[i];
    const float dx = v.pos.x - bottom_left.x, dy = v.pos.y - bottom_left.y;
    v.pos = ImVec2(bottom_left.x + dy, bottom_left.y - dx);
  }
}

std::string token_label(const std::string& token, size_t max_chars) {
  // The text the token spells where the window's font can draw all of it, else its vocabulary
  // spelling (a CJK or emoji token then stays told apart from its neighbours, not a row of '?').
  std::string readable = core::readable_token(token);
  const ImFont* font = ImGui::GetCurrentContext() ? ImGui::GetFont() : nullptr;
  for (const char* p = readable.c_str(); font && *p;) {
    unsigned int c = 0;
    p += ImTextCharFromUtf8(&c, p, nullptr);
    if (c > IM_UNICODE_CODEPOINT_MAX || !font->FindGlyphNoFallback(static_cast<ImWchar>(c))) {
      readable = core::readable_token(token, false);
      break;
    }
  }
  std::string t;
  for (size_t i = 0; i < readable.size(); ++i) {
    if (readable[i] == '#' && i + 1 < readable.size() && readable[i + 1] == '#') {
      // WordPiece's "##und": ImGui hides a widget label from "##" on, so a word joiner (U+2060,
      // zero width) goes between the two marks; the label reads the same.
      t += "#\xE2\x81\xA0";
    } else {
      t += readable[i];
    }
  }
  size_t chars = 0, cut = t.size();
  for (size_t i = 0; i < t.size(); ++i) {
    if ((static_cast<unsigned char>(t[i]) & 0xC0) != 0x80) {
      if (chars == max_chars) {
        cut = i;
        break;
      }
      ++chars;
    }
  }
  return cut < t.size() ? t.substr(0, cut) + "\xE2\x80\xA6" : t;
}

std::string format_value(float v) {
  char text[32];
  if (v != 0 && (std::fabs(v) < 1e-2f || std::fabs(v) >= 1e4f))
    std::snprintf(text, sizeof text, "%.0e", v);
  else
    std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

std::string format_probability(float p) {
  char text[32];
  if (p != 0 && std::fabs(p) < 1e-3f)
    std::snprintf(text, sizeof text, "%.1e", p);
  else
    std::snprintf(text, sizeof text, "%.3f", p);
  return text;
}

std::string format_probability_change(float d) {
  if (d == 0) return "0";
  char text[32];
  if (std::fabs(d) < 1e-3f)
    std::snprintf(text, sizeof text, "%+.1e", d);
  else
    std::snprintf(text, sizeof text, "%+.3f", d);
  return text;
}

bool text_button(const std::string& label, int id, bool highlighted) {
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  const ImVec2 text = ImGui::CalcTextSize(label.c_str(), nullptr, false);  // no "##" hiding
  const ImVec2 size(text.x + pad.x * 2, text.y + pad.y * 2 * 0.5f);
  ImGui::PushID(id);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const bool pressed = ImGui::InvisibleButton("##text_button", size);
  const bool hovered = ImGui::IsItemHovered(), held = ImGui::IsItemActive();
  ImGui::PopID();
  const ImU32 bg = ImGui::GetColorU32(held || highlighted ? ImGuiCol_ButtonActive : hovered ? ImGuiCol_ButtonHovered : ImGuiCol_Button);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), bg, ImGui::GetStyle().FrameRounding);
  dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
  return pressed;
}

void colour_bar(ImDrawList* list, ImVec2 pos, ImVec2 size, Colormap map, const MapRange& range) {
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    const Rgb c = colormap_rgb(map, (i + 0.5f) / steps);
    const float x0 = pos.x + size.x * i / steps, x1 = pos.x + size.x * (i + 1) / steps + 0.5f;
    list->AddRectFilled(ImVec2(x0, pos.y), ImVec2(x1, pos.y + size.y), IM_COL32(c.r, c.g, c.b, 255));
  }
  list->AddRect(pos, ImVec2(pos.x + size.x, pos.y + size.y), IM_COL32(128, 128, 128, 255));
  const float lo = range.log ? range.hi * 1e-4f : range.lo;
  const float mid = range.log ? range.hi * 1e-2f : (range.lo + range.hi) / 2;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const float y = pos.y + size.y + 2;
  const std::string a = format_value(lo), b = format_value(mid), c = format_value(range.hi);
  list->AddText(ImVec2(pos.x, y), text, a.c_str());
  list->AddText(ImVec2(pos.x + size.x / 2 - ImGui::CalcTextSize(b.c_str()).x / 2, y), text, b.c_str());
  list->AddText(ImVec2(pos.x + size.x - ImGui::CalcTextSize(c.c_str()).x, y), text, c.c_str());
  if (range.log) list->AddText(ImVec2(pos.x + size.x + 6, pos.y), text, "log");
}

void inline_colour_bar(Colormap map, const MapRange& range, float width, const char* tooltip) {
  const float lo = range.log ? range.hi * 1e-4f : range.lo;
  ImGui::TextDisabled("%s", format_value(lo).c_str());
  ImGui::SameLine(0, 4);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = ImGui::GetTextLineHeight() * 0.8f, y = p.y + (ImGui::GetTextLineHeight() - h) / 2;
  ImGui::Dummy(ImVec2(width, ImGui::GetTextLineHeight()));
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int steps = 32;
  for (int i = 0; i < steps; ++i) {
    const Rgb c = colormap_rgb(map, (i + 0.5f) / steps);
    dl->AddRectFilled(ImVec2(p.x + width * i / steps, y), ImVec2(p.x + width * (i + 1) / steps + 0.5f, y + h),
                      IM_COL32(c.r, c.g, c.b, 255));
  }
  dl->AddRect(ImVec2(p.x, y), ImVec2(p.x + width, y + h), IM_COL32(128, 128, 128, 255));
  ImGui::SameLine(0, 4);
  ImGui::TextDisabled("%s%s", format_value(range.hi).c_str(), range.log ? " log" : "");
  if ((hovered || ImGui::IsItemHovered()) && tooltip) ImGui::SetTooltip("%s", tooltip);
}

void attention_scale_legend(Colormap map, bool logits, bool auto_range, bool log_scale) {
  if (logits) {
    ImGui::TextDisabled("logits: each map over its own range");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("raw and mixed logits have no common scale; the Attention map's bar gives one map's range");
  } else if (auto_range) {
    ImGui::TextDisabled("weights: each map 0 to its own max");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("auto range: colours do not compare across maps (a diffuse head looks as bright as a sharp one);\n"
                        "turn it off in the Attention map or View menu for one 0–1 scale");
  } else {
    MapRange r;
    r.log = log_scale;
    inline_colour_bar(map, r, ImGui::GetFontSize() * 5, "every map on one scale: attention weight 0 to 1");
  }
}

void refused_input_banner(const Document& doc) {
  if (!doc.refused) return;
  const std::string shown = doc.snapshot ? doc.snapshot->input.text : std::string();
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.25f, 1.0f));
  ImGui::TextWrapped("Showing the last accepted input (\"%s\"), not the text in the Input view: %s",
                     token_label(shown, 40).c_str(), doc.refused->reason.c_str());
  ImGui::PopStyleColor();
}

void controls_not_shown_line(const Document& doc) {
  // A live gate's run usually ends within a few frames: the "running" note waits a quarter second,
  // so the views under it do not jump a line at every step of a dragged slider. A refused input's
  // note (the gates will not run) shows at once.
  static double differs_since = -1;
  const std::string note = controls_not_shown(doc);
  if (note.empty()) {
    differs_since = -1;
    return;
  }
  if (differs_since < 0) differs_since = ImGui::GetTime();
  if (!doc.refused && ImGui::GetTime() - differs_since < 0.25) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.25f, 1.0f));
  ImGui::TextWrapped("%s", note.c_str());
  ImGui::PopStyleColor();
}

ImU32 head_colour(int head, float alpha) {
  const Rgb c = head_rgb(head);
  return IM_COL32(c.r, c.g, c.b, static_cast<int>(std::lround(std::clamp(alpha, 0.0f, 1.0f) * 255)));
}

}  // namespace headlab::app
