#include "app/gui/attention_map_view.h"

#include "app/document/controls_edit.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/export/shown_controls.h"

#include <imgui_internal.h>  // SetItemUsingMouseWheel

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <cstdlib>
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
  bool log_scale = v.log_scale, auto_range = v.auto_range;
  if (ImGui::Checkbox("log", &log_scale)) change.log_scale = log_scale;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("weights on a log scale over four decades (logits stay linear)");
  ImGui::SameLine();
  if (ImGui::Checkbox("auto range", &auto_range)) change.auto_range = auto_range;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("off: every weight on one scale, 0 to 1 (a uniform head looks as faint as it is)\n"
                      "on: each map from 0 to its own maximum (shows the shape of a faint head)");
  if (change.colormap || change.log_scale || change.auto_range) wb.apply(change);
}

AttentionMapView::AttentionMapView() : View("Attention map") {
  if (const char* z = std::getenv("HEADLAB_MAP_ZOOM")) start_zoom_ = std::max(1.0f, static_cast<float>(std::atof(z)));
}

void AttentionMapView::keep_state(WindowState& window) const {
  if (restore_) {  // saved again before the loaded session's run came: what it brought
    window.attention_map = *restore_;
    return;
  }
  const MapViewport& vp = restored_viewport_ ? *restored_viewport_ : viewport_;
  window.attention_map = {vp.zoom, vp.col0, vp.row0, row_range_on_ ? row_from_ : 0, row_range_on_ ? row_to_ : -1};
}

void AttentionMapView::restore_state(const WindowState& window, uint64_t after_generation) {
  restore_ = window.attention_map;
  restore_after_ = after_generation;
}

void AttentionMapView::drawContent(Workbench& wb) {
  if (!wb.doc().model || !wb.doc().snapshot) {
    drawNoRun(wb);
    return;
  }
  wb.sync_textures();
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot->find(sel.stack);
  if (!maps || sel.layer >= static_cast<int>(maps->layers.size())) return;
  const LayerMaps& lm = maps->layers[sel.layer];
  const StageMaps& sm = lm.stages[static_cast<int>(sel.stage)];
  if (sm.empty() || sel.head >= sm.heads) {
    ImGui::TextDisabled("capturing stage %s…", stage_name(sel.stage));
    return;
  }
  if (sm.pooled()) {  // the run kept this layer as thumbnails: its whole maps are on their way
    ImGui::TextDisabled("computing layer %d's whole maps (the run kept thumbnails of it)…", sel.layer);
    return;
  }
  const auto& qt = wb.doc().snapshot->query_tokens(sel.stack);
  const auto& kt = wb.doc().snapshot->key_tokens(sel.stack);
  refused_input_banner(wb.doc());
  controls_not_shown_line(wb.doc());
  scale_controls(wb);
  export_buttons_same_line(wb, "attention-map", title());

  // A script's zoom and query range: applied as a fresh view of this map.
  if (wb.map_view) {
    start_zoom_ = wb.map_view->zoom;
    row_range_on_ = wb.map_view->query_to >= 0;
    row_from_ = wb.map_view->query_from, row_to_ = wb.map_view->query_to;
    shown_rows_ = -1;
    wb.map_view.reset();
  }
  // A loaded session's zoom, pan and query range, once its own input has run.
  if (restore_ && wb.doc().snapshot->generation > restore_after_) {
    row_range_on_ = restore_->query_to >= 0;
    row_from_ = restore_->query_from, row_to_ = restore_->query_to;
    restored_viewport_ = MapViewport{restore_->zoom, restore_->col0, restore_->row0};
    shown_rows_ = -1;
    restore_.reset();
  }
  // Zoom controls and the query range.
  const float font = ImGui::GetFontSize();
  if (ImGui::SmallButton("fit")) viewport_ = MapViewport{};
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the whole map (wheel zooms about the cursor, drag pans)");
  ImGui::SameLine();
  ImGui::TextDisabled("×%.1f", viewport_.zoom);
  ImGui::SameLine();
  ImGui::Checkbox("queries", &row_range_on_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("show only the query rows [from, to]");
  if (row_to_ < 0) row_to_ = sm.rows - 1;
  if (row_range_on_) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(font * 7);
    int range[2] = {row_from_, row_to_};
    if (ImGui::DragInt2("##rows", range, 0.5f, 0, sm.rows - 1)) row_from_ = range[0], row_to_ = range[1];
  }
  row_from_ = std::min(std::max(row_from_, 0), sm.rows - 1);
  row_to_ = std::min(std::max(row_to_, row_from_), sm.rows - 1);
  const int from = row_range_on_ ? row_from_ : 0;
  const int to = row_range_on_ ? row_to_ : sm.rows - 1;

  // The figure: a title (model, head, stage, axes), the map with its labels, the colour bar. A
  // "figure only" export captures exactly this.
  const ImVec2 figure0 = ImGui::GetCursorScreenPos();
  const bool logits = sel.stage == Stage::J || sel.stage == Stage::L;
  ImGui::Text("%s — %s layer %d, head %d (%s)", model_title(wb).c_str(), core::stack_name(sel.stack), sel.layer, sel.head,
              stage_name(sel.stage));
  ImGui::SameLine();
  ImGui::TextDisabled("rows: queries ↓ · columns: keys →");
  // Its output taken from the counterfactual (the Mixer): the map is the clean input's pattern.
  if (const float taken = shown_take(wb.doc(), sel.stack, sel.layer, sel.head, sel.stage); taken > 0.0f) {
    const std::string cf = "cf: " + (taken == 1.0f ? std::string("its output") : format_value(taken) + " of its output") +
                           " from the counterfactual";
    same_line_if_fits(ImGui::CalcTextSize(cf.c_str()).x);
    ImGui::TextColored(ImVec4(1.0f, 0.78f, 0.31f, 1.0f), "%s", cf.c_str());
  }
  // A Mixer matrix combines it with other heads: the map is the mix (marked "mix" in the grid too).
  if (const std::string mixed = head_mixed(shown_controls(wb.doc(), sel.stack, sel.layer), sel.head); !mixed.empty()) {
    const std::string mix = mixed == "pre+post" ? "mix: the pre- and post-softmax matrices combine this head with others"
                                                : "mix: the " + mixed + "-softmax matrix combines this head with others";
    same_line_if_fits(ImGui::CalcTextSize(mix.c_str()).x);
    ImGui::TextColored(ImVec4(0.43f, 0.78f, 1.0f, 1.0f), "%s", mix.c_str());
  }
  float left = 0, topw = 0;
  // Thinned labels carry their position, so every 5th token does not read as consecutive words.
  const bool numbered = map_labels_numbered(sm.rows, sm.cols);
  auto label_of = [&](const std::vector<std::string>& tokens, int i) { return map_label(tokens, i, numbered, 14); };
  for (int i = 0; i < static_cast<int>(qt.tokens.size()); ++i)
    left = std::max(left, ImGui::CalcTextSize(label_of(qt.tokens, i).c_str()).x);
  for (int i = 0; i < static_cast<int>(kt.tokens.size()); ++i)
    topw = std::max(topw, ImGui::CalcTextSize(label_of(kt.tokens, i).c_str()).x);
  // The corner between the labels holds the minimap: at least 4.5 lines each way.
  left = std::max(font * 4.5f, std::min(left, font * 8) + 8);
  topw = std::max(font * 4.5f, std::min(topw, font * 8) + 8);
  const float legend_h = font * 2.6f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + left, origin.y + topw);
  // Learned sinks (gpt-oss): each query's share of the sink in a column of its own right of the keys,
  // so that a row reads to 1 with it (the weights alone sum to 1 − the share).
  const bool sink_column = !logits && !lm.sink.empty() && sel.head < lm.sink.heads;
  const float sink_w = sink_column ? font * 1.6f : 0.0f;
  const MapArea area{to - from + 1, sm.cols, std::max(8.0f, avail.x - left - 4 - sink_w),
                     std::max(8.0f, avail.y - topw - legend_h)};
  const float max_zoom = map_max_zoom(area, font * 4);
  // A new input length starts from the whole map (or HEADLAB_MAP_ZOOM) around the selection.
  if (shown_rows_ != sm.rows || shown_cols_ != sm.cols) {
    shown_rows_ = sm.rows, shown_cols_ = sm.cols;
    if (restored_viewport_) {
      viewport_ = *restored_viewport_;
      restored_viewport_.reset();
    } else {
      viewport_ = MapViewport{};
      viewport_.zoom = start_zoom_;
      if (sel.query >= 0 || sel.key >= 0)
        map_center_on(viewport_, area, sel.query >= 0 ? sel.query - from + 0.5f : 0, sel.key >= 0 ? sel.key + 0.5f : 0, max_zoom);
    }
    followed_query_ = sel.query, followed_key_ = sel.key;
  }
  map_clamp(viewport_, area, max_zoom);
  // A token selected elsewhere comes into view.
  if (sel.query != followed_query_ || sel.key != followed_key_) {
    followed_query_ = sel.query, followed_key_ = sel.key;
    const CellRange vis = map_visible(viewport_, area);
    const bool q_out = sel.query >= 0 && (sel.query - from < vis.row_begin || sel.query - from >= vis.row_end);
    const bool k_out = sel.key >= 0 && (sel.key < vis.col_begin || sel.key >= vis.col_end);
    if (q_out || k_out) {
      const float cell = map_cell(viewport_, area);
      const float row = q_out ? sel.query - from + 0.5f : viewport_.row0 + area.height / cell / 2;
      const float col = k_out ? sel.key + 0.5f : viewport_.col0 + area.width / cell / 2;
      map_center_on(viewport_, area, row, col, max_zoom);
    }
  }

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetMousePos();
  const bool window_hovered = ImGui::IsWindowHovered();

  // The map: an invisible button over it takes the wheel, drags and clicks.
  ImGui::SetCursorScreenPos(p0);
  ImGui::InvisibleButton("##map", ImVec2(area.width, area.height));
  const bool map_hovered = ImGui::IsItemHovered();
  const bool clicked = ImGui::IsItemDeactivated() && ImGui::GetIO().MouseDragMaxDistanceSqr[0] < 9.0f && map_hovered;
  ImGui::SetItemUsingMouseWheel();
  if (map_hovered && ImGui::GetIO().MouseWheel != 0)
    map_zoom_about(viewport_, area, std::pow(1.25f, ImGui::GetIO().MouseWheel), mouse.x - p0.x, mouse.y - p0.y, max_zoom);
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(0, 2.0f)) {
    map_pan(viewport_, area, ImGui::GetIO().MouseDelta.x, ImGui::GetIO().MouseDelta.y, max_zoom);
    ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeAll);
  }
  const float cell = map_cell(viewport_, area);
  const CellRange vis = map_visible(viewport_, area);
  // What is on show, in the map's rows and columns: its SVG/PDF export draws the same part.
  shown_ = {from + vis.row_begin, from + vis.row_end, vis.col_begin, vis.col_end};
  const ImVec2 p1(p0.x + map_drawn_width(viewport_, area), p0.y + map_drawn_height(viewport_, area));
  const ImVec2 uv0(viewport_.col0 / sm.cols, (from + viewport_.row0) / sm.rows);
  const ImVec2 uv1((viewport_.col0 + (p1.x - p0.x) / cell) / sm.cols, (from + viewport_.row0 + (p1.y - p0.y) / cell) / sm.rows);
  wb.textures.draw(dl, sel.layer, sel.head, p0, p1, uv0, uv1);

  // Labels of the visible rows and columns: every n-th one while cells are shorter than a line.
  const int stride = map_label_stride(cell, font);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  dl->PushClipRect(ImVec2(origin.x, p0.y), ImVec2(p0.x, p1.y), true);
  for (int r = (vis.row_begin + stride - 1) / stride * stride; r < vis.row_end; r += stride) {
    const int q = from + r;
    const std::string label = label_of(qt.tokens, q);
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    const float y = p0.y + map_y_of(viewport_, area, r + 0.5f);
    const ImVec2 pos(p0.x - size.x - 4, y - size.y / 2);
    const bool hover = window_hovered && mouse.x >= p0.x - left && mouse.x < p0.x && mouse.y >= p0.y &&
                       mouse.y >= y - cell / 2 && mouse.y < y - cell / 2 + stride * cell;
    dl->AddText(pos, q == sel.query ? IM_COL32(255, 64, 160, 255) : hover ? IM_COL32(255, 255, 255, 255) : text, label.c_str());
    if (hover && ImGui::IsMouseClicked(0)) wb.apply(cmd::SelectToken{sel.query == q ? -1 : q, sel.key});
  }
  dl->PopClipRect();
  // Vertical labels are not clip-rected (ImGui clips glyphs before text_vertical rotates them):
  // only columns whose centre is on show get one.
  for (int k = (vis.col_begin + stride - 1) / stride * stride; k < vis.col_end; k += stride) {
    const std::string label = label_of(kt.tokens, k);
    const float x = p0.x + map_x_of(viewport_, area, k + 0.5f);
    if (x < p0.x || x > p1.x) continue;
    const bool hover = window_hovered && mouse.y >= p0.y - topw && mouse.y < p0.y && mouse.x >= p0.x &&
                       mouse.x >= x - cell / 2 && mouse.x < x - cell / 2 + stride * cell && mouse.x >= origin.x + left;
    text_vertical(dl, ImVec2(x - font / 2, p0.y - 4),
                  k == sel.key ? IM_COL32(255, 160, 0, 255) : hover ? IM_COL32(255, 255, 255, 255) : text, label);
    if (hover && ImGui::IsMouseClicked(0)) wb.apply(cmd::SelectToken{sel.query, sel.key == k ? -1 : k});
  }

  dl->PushClipRect(p0, p1, true);
  // A gated head is dimmed and stamped as in the Heads grid (and in its SVG/PDF export): the gate
  // the map on show was computed with.
  const float gate = shown_gate(wb.doc(), sel.stack, sel.layer, sel.head, sel.stage);
  if (gate < 1.0f) {
    dl->AddRectFilled(p0, p1, IM_COL32(20, 20, 20, static_cast<int>(190 * (1.0f - gate))));
    if (gate == 0.0f) {
      dl->AddLine(p0, p1, IM_COL32(255, 90, 90, 140), 2.0f);
      dl->AddLine(ImVec2(p1.x, p0.y), ImVec2(p0.x, p1.y), IM_COL32(255, 90, 90, 140), 2.0f);
    }
    const std::string g = gate == 0.0f ? "off" : "g=" + format_value(gate);
    dl->AddText(ImGui::GetFont(), font * 1.4f, ImVec2(p0.x + 6, p0.y + 4), IM_COL32(255, 90, 90, 255), g.c_str());
  }
  if (sel.query >= from && sel.query <= to) {
    const float y = p0.y + map_y_of(viewport_, area, static_cast<float>(sel.query - from));
    dl->AddRect(ImVec2(p0.x, y), ImVec2(p1.x, y + cell), IM_COL32(255, 64, 160, 255), 0, 0, 2);
  }
  if (sel.key >= 0 && sel.key < sm.cols) {
    const float x = p0.x + map_x_of(viewport_, area, static_cast<float>(sel.key));
    dl->AddRect(ImVec2(x, p0.y), ImVec2(x + cell, p1.y), IM_COL32(255, 160, 0, 255), 0, 0, 2);
  }
  // Hover: query, key and weight; a click (not a drag) highlights the cell's row and column.
  int r = -1, k = -1;
  if (map_hovered && map_cell_at(viewport_, area, mouse.x - p0.x, mouse.y - p0.y, r, k)) {
    const int q = from + r;
    const ImVec2 c0(p0.x + map_x_of(viewport_, area, static_cast<float>(k)), p0.y + map_y_of(viewport_, area, static_cast<float>(r)));
    dl->AddRect(c0, ImVec2(c0.x + cell, c0.y + cell), IM_COL32(255, 255, 255, 255));
    if (!ImGui::IsItemActive()) {
      ImGui::BeginTooltip();
      ImGui::Text("query %d  %s", q, q < static_cast<int>(qt.tokens.size()) ? qt.tokens[q].c_str() : "");
      ImGui::Text("key   %d  %s", k, k < static_cast<int>(kt.tokens.size()) ? kt.tokens[k].c_str() : "");
      ImGui::Text("%s = %.5f", sel.stage == Stage::J || sel.stage == Stage::L ? "logit" : "weight", sm.at(sel.head, q, k));
      ImGui::EndTooltip();
    }
    if (clicked) {
      const bool same = sel.query == q && sel.key == k;
      wb.apply(cmd::SelectToken{same ? -1 : q, same ? -1 : k});
    }
  }
  dl->PopClipRect();
  if (sink_column) {
    const float x0 = p1.x + font * 0.4f, x1 = p1.x + sink_w;
    const MapRange range = wb.textures.range(sel.layer, sel.head);
    const Colormap colours = colormap_from_name(wb.doc().session.view.colormap);
    text_vertical(dl, ImVec2((x0 + x1) / 2 - font / 2, p0.y - 4), IM_COL32(255, 200, 120, 255), "sink");
    dl->PushClipRect(ImVec2(x0, p0.y), ImVec2(x1, p1.y), true);
    for (int row = vis.row_begin; row < vis.row_end; ++row) {
      const float share = lm.sink.at(sel.head, from + row, 0);
      const Rgb c = colormap_rgb(colours, range.normalize(share));
      const float y = p0.y + map_y_of(viewport_, area, static_cast<float>(row));
      dl->AddRectFilled(ImVec2(x0, y), ImVec2(x1, y + cell), IM_COL32(c.r, c.g, c.b, 255));
      if (window_hovered && mouse.x >= x0 && mouse.x < x1 && mouse.y >= y && mouse.y < y + cell && mouse.y < p1.y) {
        dl->AddRect(ImVec2(x0, y), ImVec2(x1, y + cell), IM_COL32(255, 255, 255, 255));
        ImGui::SetTooltip("query %d: the learned sink's share = %.5f\n(this row's weights on the tokens sum to %.5f)",
                          from + row, share, 1.0f - share);
      }
    }
    dl->PopClipRect();
  }

  // Minimap in the corner between the labels while zoomed: the whole map (query range) with the
  // visible rectangle outlined; click or drag on it to move the view.
  if (viewport_.zoom > 1.001f) {
    const float box = std::min(left, topw) - 8;
    const float mcell = std::min(box / area.cols, box / area.rows);
    const ImVec2 m1(p0.x - 4, p0.y - 4);
    const ImVec2 m0(m1.x - mcell * area.cols, m1.y - mcell * area.rows);
    dl->AddRectFilled(ImVec2(m0.x - 2, m0.y - 2), ImVec2(m1.x + 2, m1.y + 2), ImGui::GetColorU32(ImGuiCol_WindowBg));
    wb.textures.draw(dl, sel.layer, sel.head, m0, m1, ImVec2(0, static_cast<float>(from) / sm.rows),
                     ImVec2(1, static_cast<float>(to + 1) / sm.rows));
    const ImVec2 v1(m0.x + (viewport_.col0 + (p1.x - p0.x) / cell) * mcell, m0.y + (viewport_.row0 + (p1.y - p0.y) / cell) * mcell);
    dl->AddRect(ImVec2(m0.x + viewport_.col0 * mcell, m0.y + viewport_.row0 * mcell), v1, IM_COL32(255, 255, 255, 255), 0, 0, 1.5f);
    ImGui::SetCursorScreenPos(m0);
    ImGui::InvisibleButton("##minimap", ImVec2(m1.x - m0.x, m1.y - m0.y));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("click or drag to move the view");
    if (ImGui::IsItemActive())
      map_center_on(viewport_, area, (mouse.y - m0.y) / mcell, (mouse.x - m0.x) / mcell, max_zoom);
  }

  const float bar_w = std::min(font * 16, std::max(font * 6, p1.x - p0.x));
  const ImVec2 bar0(p0.x, p0.y + area.height + font * 0.5f);
  colour_bar(dl, bar0, ImVec2(bar_w, font * 0.8f), colormap_from_name(wb.doc().session.view.colormap),
             wb.textures.range(sel.layer, sel.head));
  const char* scale = logits ? "logit (this map's range)"
                      : wb.doc().session.view.auto_range ? "attention weight (auto range: 0 to this map's max)"
                                                         : "attention weight";
  dl->AddText(ImVec2(bar0.x + bar_w + font * 2.2f, bar0.y - 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), scale);
  const float legend_right = bar0.x + bar_w + font * 2.2f + ImGui::CalcTextSize(scale).x;
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(p0.x + area.width + sink_w - origin.x, p0.y + area.height - origin.y + legend_h));
  markFigure(ImVec2(figure0.x - 2, figure0.y - 2), ImVec2(std::max(p1.x + sink_w, legend_right) + 2, p1.y + legend_h));
}

bool AttentionMapView::exportFile(Workbench& wb, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".pdf") return false;
  // The part on show (the query range, the zoom's window) of the map the view last drew; all of a
  // map it has not drawn.
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot ? wb.doc().snapshot->find(sel.stack) : nullptr;
  const StageMaps* sm = maps && sel.layer < static_cast<int>(maps->layers.size())
                            ? &maps->layers[sel.layer].stages[static_cast<int>(sel.stage)]
                            : nullptr;
  const bool drawn = sm && sm->rows == shown_rows_ && sm->cols == shown_cols_;
  export_attention_map(wb, path, drawn ? shown_ : CellRange{});
  return true;
}

}  // namespace headlab::app
