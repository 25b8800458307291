#include "app/gui/draw_util.h"

#include <cmath>
#include <cstdio>

namespace headlab::app {

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
  std::string t;
  // Byte-level BPE marks a leading space with Ġ (U+0120) and a newline with Ċ (U+010A).
  for (size_t i = 0; i < token.size(); ++i) {
    if (i + 1 < token.size() && static_cast<unsigned char>(token[i]) == 0xC4 &&
        static_cast<unsigned char>(token[i + 1]) == 0xA0) {
      t += "\xC2\xB7";
      ++i;
    } else if (i + 1 < token.size() && static_cast<unsigned char>(token[i]) == 0xC4 &&
               static_cast<unsigned char>(token[i + 1]) == 0x8A) {
      t += "\xE2\x86\xB5";
      ++i;
    } else {
      t += token[i];
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

ImU32 head_colour(int head, float alpha) {
  static const ImU32 tab10[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  float r, g, b;
  if (head < 10) {
    const ImU32 c = tab10[head];
    r = ((c >> 16) & 255) / 255.0f, g = ((c >> 8) & 255) / 255.0f, b = (c & 255) / 255.0f;
  } else {
    ImGui::ColorConvertHSVtoRGB(std::fmod(head * 0.61803f, 1.0f), 0.65f, 0.9f, r, g, b);
  }
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, alpha));
}

}  // namespace headlab::app
