#include "app/gui/attention_map_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <string>

namespace headlab::app {

void scale_controls(Workbench& wb) {
  const auto& v = wb.doc().session.view;
  cmd::SetView change;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  if (ImGui::BeginCombo("##colormap", v.colormap.c_str())) {
    for (const char* name : {"viridis", "gray"})
      if (ImGui::Selectable(name, v.colormap == name)) change.colormap = name;
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  bool log_scale = v.log_scale, fixed_range = v.fixed_range;
  if (ImGui::Checkbox("log", &log_scale)) change.log_scale = log_scale;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("weights on a log scale over four decades (logits stay linear)");
  ImGui::SameLine();
  if (ImGui::Checkbox("0–1", &fixed_range)) change.fixed_range = fixed_range;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("weights over [0, 1] instead of each map's maximum");
  if (change.colormap || change.log_scale || change.fixed_range) wb.apply(change);
}

void AttentionMapView::drawContent(Workbench& wb) {
  if (!wb.doc().model || !wb.doc().snapshot) {
    ImGui::TextDisabled("running…");
    return;
  }
  wb.sync_textures();
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot->find(sel.stack);
  if (!maps || sel.layer >= static_cast<int>(maps->layers.size())) return;
  const StageMaps& sm = maps->layers[sel.layer].stages[static_cast<int>(sel.stage)];
  if (sm.empty() || sel.head >= sm.heads) {
    ImGui::TextDisabled("capturing stage %s…", stage_name(sel.stage));
    return;
  }
  const auto& qt = wb.doc().snapshot->query_tokens(sel.stack);
  const auto& kt = wb.doc().snapshot->key_tokens(sel.stack);
  ImGui::Text("%s · layer %d · head %d · %s", sel.stack.c_str(), sel.layer, sel.head, stage_name(sel.stage));
  ImGui::SameLine();
  scale_controls(wb);
  ImGui::SameLine();
  export_buttons(wb, "attention-map", title());

  const float font = ImGui::GetFontSize();
  float left = 0, topw = 0;
  for (const auto& t : qt.tokens) left = std::max(left, ImGui::CalcTextSize(token_label(t).c_str()).x);
  for (const auto& t : kt.tokens) topw = std::max(topw, ImGui::CalcTextSize(token_label(t).c_str()).x);
  left = std::min(left, font * 8) + 8;
  topw = std::min(topw, font * 8) + 8;
  const float legend_h = font * 2.6f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // Cells may be under a pixel for long inputs: the texture is then minified (GL_LINEAR).
  const float cell = std::max(0.05f, std::min((avail.x - left - 4) / sm.cols, (avail.y - topw - legend_h) / sm.rows));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + left, origin.y + topw);
  const ImVec2 p1(p0.x + cell * sm.cols, p0.y + cell * sm.rows);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (const unsigned tex = wb.textures.texture(sel.layer, sel.head))
    dl->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(tex)), p0, p1);

  // Labels: every n-th token when cells are smaller than a line of text.
  const int stride = std::max(1, static_cast<int>(std::ceil(font / cell)));
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImVec2 mouse = ImGui::GetMousePos();
  const bool window_hovered = ImGui::IsWindowHovered();
  for (int q = 0; q < sm.rows; q += stride) {
    const std::string label = q < static_cast<int>(qt.tokens.size()) ? token_label(qt.tokens[q]) : "?";
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    const ImVec2 pos(p0.x - size.x - 4, p0.y + (q + 0.5f) * cell - size.y / 2);
    const bool hover = window_hovered && mouse.x >= p0.x - left && mouse.x < p0.x && mouse.y >= p0.y + q * cell &&
                       mouse.y < p0.y + (q + stride) * cell;
    dl->AddText(pos, q == sel.query ? IM_COL32(255, 64, 160, 255) : hover ? IM_COL32(255, 255, 255, 255) : text, label.c_str());
    if (hover && ImGui::IsMouseClicked(0)) wb.apply(cmd::SelectToken{sel.query == q ? -1 : q, sel.key});
  }
  for (int k = 0; k < sm.cols; k += stride) {
    const std::string label = k < static_cast<int>(kt.tokens.size()) ? token_label(kt.tokens[k]) : "?";
    const bool hover = window_hovered && mouse.y >= p0.y - topw && mouse.y < p0.y && mouse.x >= p0.x + k * cell &&
                       mouse.x < p0.x + (k + stride) * cell;
    text_vertical(dl, ImVec2(p0.x + (k + 0.5f) * cell - font / 2, p0.y - 4),
                  k == sel.key ? IM_COL32(255, 160, 0, 255) : hover ? IM_COL32(255, 255, 255, 255) : text, label);
    if (hover && ImGui::IsMouseClicked(0)) wb.apply(cmd::SelectToken{sel.query, sel.key == k ? -1 : k});
  }
  if (sel.query >= 0 && sel.query < sm.rows)
    dl->AddRect(ImVec2(p0.x, p0.y + sel.query * cell), ImVec2(p1.x, p0.y + (sel.query + 1) * cell), IM_COL32(255, 64, 160, 255), 0, 0, 2);
  if (sel.key >= 0 && sel.key < sm.cols)
    dl->AddRect(ImVec2(p0.x + sel.key * cell, p0.y), ImVec2(p0.x + (sel.key + 1) * cell, p1.y), IM_COL32(255, 160, 0, 255), 0, 0, 2);

  // Hover: query, key and weight; click a cell to highlight its row and column.
  if (window_hovered && mouse.x >= p0.x && mouse.x < p1.x && mouse.y >= p0.y && mouse.y < p1.y) {
    const int q = std::min(sm.rows - 1, static_cast<int>((mouse.y - p0.y) / cell));
    const int k = std::min(sm.cols - 1, static_cast<int>((mouse.x - p0.x) / cell));
    dl->AddRect(ImVec2(p0.x + k * cell, p0.y + q * cell), ImVec2(p0.x + (k + 1) * cell, p0.y + (q + 1) * cell),
                IM_COL32(255, 255, 255, 255));
    ImGui::BeginTooltip();
    ImGui::Text("query %d  %s", q, q < static_cast<int>(qt.tokens.size()) ? qt.tokens[q].c_str() : "");
    ImGui::Text("key   %d  %s", k, k < static_cast<int>(kt.tokens.size()) ? kt.tokens[k].c_str() : "");
    ImGui::Text("%s = %.5f", sel.stage == Stage::J || sel.stage == Stage::L ? "logit" : "weight", sm.at(sel.head, q, k));
    ImGui::EndTooltip();
    if (ImGui::IsMouseClicked(0)) {
      const bool same = sel.query == q && sel.key == k;
      wb.apply(cmd::SelectToken{same ? -1 : q, same ? -1 : k});
    }
  }
  const float bar_w = std::min(font * 16, std::max(font * 6, p1.x - p0.x));
  colour_bar(dl, ImVec2(p0.x, p1.y + font * 0.5f), ImVec2(bar_w, font * 0.8f), colormap_from_name(wb.doc().session.view.colormap),
             wb.textures.range(sel.layer, sel.head));
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(p1.x - origin.x, p1.y - origin.y + legend_h));
  markFigure(ImVec2(origin.x - 2, origin.y - 2), ImVec2(std::max(p1.x, p0.x + bar_w + font * 2) + 2, p1.y + legend_h));
}

bool AttentionMapView::exportFile(Workbench& wb, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".pdf") return false;
  export_figure(wb, "attention-map", "", path, 1);
  return true;
}

}  // namespace headlab::app
