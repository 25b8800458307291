#include "app/gui/head_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <string>

namespace headlab::app {

void HeadView::drawContent(Workbench& wb) {
  if (!wb.doc().snapshot || !wb.doc().model) {
    ImGui::TextDisabled("running…");
    return;
  }
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot->find(sel.stack);
  if (!maps || sel.layer >= static_cast<int>(maps->layers.size())) return;
  const StageMaps& sm = maps->layers[sel.layer].stages[static_cast<int>(Stage::U)];
  if (sm.empty()) return;
  const auto& qt = wb.doc().snapshot->query_tokens(sel.stack);
  const auto& kt = wb.doc().snapshot->key_tokens(sel.stack);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  int layer = sel.layer;
  if (ImGui::SliderInt("layer", &layer, 0, static_cast<int>(maps->layers.size()) - 1))
    wb.apply(cmd::SelectHead{"", layer, sel.head});
  ImGui::SameLine();
  export_buttons(wb, "head-view", title());
  hidden_heads_.resize(sm.heads, 0);
  for (int h = 0; h < sm.heads; ++h) {
    if (h > 0) ImGui::SameLine(0, 4);
    ImGui::PushID(h);
    const ImVec4 c = ImGui::ColorConvertU32ToFloat4(head_colour(h, hidden_heads_[h] ? 0.25f : 1.0f));
    ImGui::PushStyleColor(ImGuiCol_Button, c);
    ImGui::PushStyleColor(ImGuiCol_ButtonHovered, c);
    if (ImGui::Button(std::to_string(h).c_str())) hidden_heads_[h] = !hidden_heads_[h];
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("head %d: click to hide/show; double-click to show only it", h);
    if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(0))
      for (int o = 0; o < sm.heads; ++o) hidden_heads_[o] = o != h;
    ImGui::PopStyleColor(2);
    ImGui::PopID();
  }
  const float font = ImGui::GetFontSize();
  if (sm.rows > 40 && sel.query < 0)
    ImGui::TextDisabled("long input: head %d's strongest keys only; hover a query token for every head", sel.head);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float row = std::max(0.25f, std::min(font * 1.3f, (avail.y - 2) / std::max(sm.rows, sm.cols)));
  const float col_w = std::min(font * 9, avail.x * 0.3f);
  const float x_left = origin.x + col_w, x_right = origin.x + avail.x - col_w;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetMousePos();
  int focus = -1;  // hovered query token: only its lines
  if (ImGui::IsWindowHovered() && mouse.x < x_left && mouse.y >= origin.y)
    focus = std::min(sm.rows - 1, static_cast<int>((mouse.y - origin.y) / row));
  if (focus < 0 && sel.query >= 0) focus = sel.query;
  const int stride = std::max(1, static_cast<int>(std::ceil(font / row)));
  for (int q = 0; q < sm.rows; q += stride) {
    const std::string l = q < static_cast<int>(qt.tokens.size()) ? token_label(qt.tokens[q]) : "?";
    const float w = ImGui::CalcTextSize(l.c_str()).x;
    dl->AddText(ImVec2(x_left - w - 6, origin.y + q * row + row / 2 - font / 2),
                q == focus ? IM_COL32(255, 220, 0, 255) : ImGui::GetColorU32(ImGuiCol_Text), l.c_str());
  }
  for (int k = 0; k < sm.cols; k += stride) {
    const std::string l = k < static_cast<int>(kt.tokens.size()) ? token_label(kt.tokens[k]) : "?";
    dl->AddText(ImVec2(x_right + 6, origin.y + k * row + row / 2 - font / 2), ImGui::GetColorU32(ImGuiCol_Text), l.c_str());
  }
  // Opacity is the weight relative to the strongest line shown, so long inputs (weights ~1/T) stay
  // visible; lines under 5% of it cost frame time and show nothing.
  float strongest = 0;
  for (int h = 0; h < sm.heads; ++h)
    for (int q = 0; q < sm.rows && !hidden_heads_[h]; ++q)
      if (focus < 0 || q == focus)
        for (int k = 0; k < sm.cols; ++k) strongest = std::max(strongest, sm.at(h, q, k));
  const float threshold = 0.05f * strongest;
  // Long inputs (software GL fills long lines slowly: ~40 µs each): without a hovered token only the
  // selected head is drawn, its strongest keys per query only; hovering shows every head.
  const bool capped = focus < 0 && sm.rows > 40;
  for (int h = 0; h < sm.heads && strongest > 0; ++h) {
    if (hidden_heads_[h] || (capped && h != sel.head)) continue;
    const ImU32 base = head_colour(h, 1.0f) & 0x00FFFFFF;
    for (int q = 0; q < sm.rows; ++q) {
      if (focus >= 0 && q != focus) continue;
      const float* row_w = sm.head(h) + static_cast<size_t>(q) * sm.cols;
      // Capped: the strongest key (two under 120 tokens).
      const int keep = sm.rows > 120 ? 1 : 2;
      int best[2] = {-1, -1};
      if (capped) {
        for (int k = 0; k < sm.cols; ++k) {
          if (!(row_w[k] > threshold)) continue;
          if (best[0] < 0 || row_w[k] > row_w[best[0]]) {
            best[1] = best[0];
            best[0] = k;
          } else if (keep > 1 && (best[1] < 0 || row_w[k] > row_w[best[1]])) {
            best[1] = k;
          }
        }
        if (keep == 1) best[1] = -1;
      }
      auto line = [&](int k) {
        const ImU32 alpha = static_cast<ImU32>(std::min(1.0f, row_w[k] / strongest) * 220.0f) << 24;
        dl->AddLine(ImVec2(x_left, origin.y + q * row + row / 2), ImVec2(x_right, origin.y + k * row + row / 2), base | alpha,
                    focus >= 0 ? 2.0f : 1.2f);
      };
      if (capped) {
        for (int b : best)
          if (b >= 0) line(b);
      } else {
        for (int k = 0; k < sm.cols; ++k)
          if (row_w[k] > threshold) line(k);
      }
    }
  }
  ImGui::Dummy(ImVec2(avail.x, std::max(sm.rows, sm.cols) * row));
}

bool HeadView::exportFile(Workbench& wb, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".pdf") return false;
  export_figure(wb, "head-view", "", path, 1);
  return true;
}

}  // namespace headlab::app
