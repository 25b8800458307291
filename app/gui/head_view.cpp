#include "app/gui/head_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/layout/token_window.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <string>

namespace headlab::app {

void HeadView::keep_state(WindowState& window) const {
  if (restore_) {  // saved again before the loaded session's run came: what it brought
    window.head_view = *restore_;
    return;
  }
  window.head_view = {};
  for (int h = 0; h < static_cast<int>(hidden_heads_.size()); ++h)
    if (hidden_heads_[h]) window.head_view.hidden.push_back(h);
  window.head_view.centre = window_centre_;
}

void HeadView::restore_state(const WindowState& window, uint64_t after_generation) {
  restore_ = window.head_view;
  restore_after_ = after_generation;
}

void HeadView::drawContent(Workbench& wb) {
  if (!wb.doc().snapshot || !wb.doc().model) {
    drawNoRun(wb);
    return;
  }
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot->find(sel.stack);
  if (!maps || sel.layer >= static_cast<int>(maps->layers.size())) return;
  const StageMaps& sm = maps->layers[sel.layer].stages[static_cast<int>(Stage::U)];
  if (sm.empty()) return;
  if (sm.pooled()) {
    ImGui::TextDisabled("computing layer %d's whole maps (the run kept thumbnails of it)…", sel.layer);
    return;
  }
  const auto& qt = wb.doc().snapshot->query_tokens(sel.stack);
  const auto& kt = wb.doc().snapshot->key_tokens(sel.stack);
  refused_input_banner(wb.doc());
  label_before("layer");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  int layer = sel.layer;
  if (ImGui::SliderInt("##layer", &layer, 0, static_cast<int>(maps->layers.size()) - 1))
    wb.apply(cmd::SelectHead{std::nullopt, layer, sel.head});
  export_buttons_same_line(wb, "head-view", title());
  hidden_heads_.resize(sm.heads, 0);
  // A script's choice of heads, as clicks on their buttons would make it.
  if (wb.head_view) {
    for (int h = 0; h < sm.heads; ++h)
      hidden_heads_[h] = std::find(wb.head_view->hidden.begin(), wb.head_view->hidden.end(), h) != wb.head_view->hidden.end();
    wb.head_view.reset();
  }
  // A loaded session's hidden heads and window, once its own input has run.
  if (restore_ && wb.doc().snapshot->generation > restore_after_) {
    hidden_heads_.assign(sm.heads, 0);
    for (const int h : restore_->hidden)
      if (h >= 0 && h < sm.heads) hidden_heads_[h] = 1;
    window_centre_ = std::min(std::max(restore_->centre, 0), std::max(sm.rows - 1, 0));
    followed_query_ = sel.query;
    restore_.reset();
  }
  for (int h = 0; h < sm.heads; ++h) {
    if (h > 0) ImGui::SameLine(0, 4);
    ImGui::PushID(h);
    const ImVec4 c = ImGui::ColorConvertU32ToFloat4(head_colour(h, hidden_heads_[h] ? 0.25f : 1.0f));
    ImGui::PushStyleColor(ImGuiCol_Button, c);
    ImGui::PushStyleColor(ImGuiCol_ButtonHovered, c);
    if (ImGui::Button(std::to_string(h).c_str())) hidden_heads_[h] = !hidden_heads_[h];
    // The selected head (Heads grid, Head table …) is framed here and drawn on top below.
    if (h == sel.head)
      ImGui::GetWindowDrawList()->AddRect(ImVec2(ImGui::GetItemRectMin().x - 2, ImGui::GetItemRectMin().y - 2),
                                          ImVec2(ImGui::GetItemRectMax().x + 2, ImGui::GetItemRectMax().y + 2),
                                          IM_COL32(255, 220, 0, 255), 2.0f, 0, 2.0f);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("head %d%s: click to hide/show; double-click to show only it", h, h == sel.head ? " (selected)" : "");
    if (ImGui::IsItemHovered() && ImGui::IsMouseDoubleClicked(0))
      for (int o = 0; o < sm.heads; ++o) hidden_heads_[o] = o != h;
    ImGui::PopStyleColor(2);
    ImGui::PopID();
  }
  const bool auto_range = wb.doc().session.view.auto_range;
  const ImVec2 figure0 = ImGui::GetCursorScreenPos();
  ImGui::Text("%s — %s layer %d: queries (left) to keys (right), a colour per head", model_title(wb).c_str(),
              core::stack_name(sel.stack), sel.layer);
  ImGui::TextDisabled(auto_range ? "line opacity: weight relative to the strongest line shown (auto range)"
                                 : "line opacity: attention weight, 0 to 1");
  const float font = ImGui::GetFontSize();
  const bool long_input = sm.rows > 40 || sm.rows * font * 1.3f > ImGui::GetContentRegionAvail().y - 2;
  if (long_input)
    ImGui::TextDisabled("long input: head %d, white rows; hover a query: all heads", sel.head);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float col_w = std::min(font * 9, avail.x * 0.3f);
  const float x_left = top.x + col_w, x_right = top.x + avail.x - col_w;
  const float height = std::max(font * 4, avail.y - 2);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 mouse = ImGui::GetMousePos();
  const bool hovering_queries = ImGui::IsWindowHovered() && mouse.x < x_left && mouse.y >= top.y;

  // Long inputs: a window of readable queries (and the keys at the same positions) around the
  // focus, the other tokens compressed and faded. Hovering a faded query moves the window there.
  if (sel.query >= 0 && sel.query != followed_query_) window_centre_ = sel.query;
  followed_query_ = sel.query;
  TokenWindow qw = token_window(sm.rows, height, font * 1.3f, window_centre_);
  if (hovering_queries) {
    const int q = token_window_at(qw, mouse.y - top.y);
    if (q < qw.begin || q >= qw.end) {
      window_centre_ = q;
      qw = token_window(sm.rows, height, font * 1.3f, window_centre_);
    }
  }
  const int key_centre = sm.rows > 0 ? static_cast<int>(static_cast<long>(qw.begin + qw.end) / 2 * sm.cols / sm.rows) : 0;
  const TokenWindow kw = token_window(sm.cols, height, font * 1.3f, key_centre);
  int focus = -1;  // hovered query token: every head's lines
  if (hovering_queries) focus = token_window_at(qw, mouse.y - top.y);
  if (focus < 0 && sel.query >= 0) focus = sel.query;
  auto qy = [&](int q) { return top.y + token_window_y(qw, q) + token_window_row(qw, q) / 2; };
  auto ky = [&](int k) { return top.y + token_window_y(kw, k) + token_window_row(kw, k) / 2; };

  // Labels: every token of the window, every n-th one (faded) outside it where rows are thin.
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), faded = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  auto labels = [&](const TokenWindow& w, const std::vector<std::string>& tokens, bool left_side, int highlight) {
    const int stride = w.small > 0 ? std::max(1, static_cast<int>(std::ceil(font / w.small))) : 1;
    for (int i = 0; i < w.count; ++i) {
      const bool inside = i >= w.begin && i < w.end;
      if (!inside && i % stride != 0) continue;
      const float y = (left_side ? qy(i) : ky(i)) - font / 2;
      // Outside labels near the window would overlap its first/last row.
      if (!inside && ((i < w.begin && y + font > top.y + token_window_y(w, w.begin)) ||
                      (i >= w.end && y < top.y + token_window_y(w, w.end))))
        continue;
      const std::string l = i < static_cast<int>(tokens.size()) ? token_label(tokens[i]) : "?";
      const ImU32 c = i == highlight ? IM_COL32(255, 220, 0, 255) : inside ? text : faded;
      const float x = left_side ? x_left - ImGui::CalcTextSize(l.c_str()).x - 6 : x_right + 6;
      dl->AddText(ImVec2(x, y), c, l.c_str());
    }
  };
  labels(qw, qt.tokens, true, focus);
  labels(kw, kt.tokens, false, -1);

  // Which (query, head) pairs get lines: short inputs every query and head (only the focus query
  // when one is hovered); long inputs the window's queries for the selected head (its strongest
  // keys; software GL fills long lines slowly, ~40 µs each) plus every head for the focus query.
  auto shown = [&](int q, int h) {
    if (hidden_heads_[h]) return false;
    if (!long_input) return focus < 0 || q == focus;
    if (q == focus) return true;
    return h == sel.head && q >= qw.begin && q < qw.end;
  };
  // Opacity is the weight itself (0–1, as the maps' colour scale), so a diffuse head draws faint
  // lines; with auto range, the weight relative to the strongest line shown, so long inputs (weights
  // ~1/T) stay visible. Lines too faint to see cost frame time and are skipped.
  float strongest = 1.0f;
  if (auto_range) {
    strongest = 0;
    for (int h = 0; h < sm.heads; ++h)
      for (int q = 0; q < sm.rows; ++q)
        if (shown(q, h))
          for (int k = 0; k < sm.cols; ++k) strongest = std::max(strongest, sm.at(h, q, k));
  }
  const float threshold = (auto_range ? 0.05f : 0.02f) * strongest;
  // The selected head is drawn last, on top, with wider lines.
  std::vector<int> order;
  for (int h = 0; h < sm.heads; ++h)
    if (h != sel.head) order.push_back(h);
  if (sel.head < sm.heads) order.push_back(sel.head);
  for (int h : order) {
    if (!(strongest > 0)) break;
    const ImU32 base = head_colour(h, 1.0f) & 0x00FFFFFF;
    const float width = h == sel.head ? 1.6f : 1.0f;
    for (int q = 0; q < sm.rows; ++q) {
      if (!shown(q, h)) continue;
      const float* row_w = sm.head(h) + static_cast<size_t>(q) * sm.cols;
      // Long inputs: each head's strongest keys only (a near-uniform head would otherwise fill the
      // view with hundreds of lines): 8 for the focus query, 3 (faded) for the window's others.
      const bool context = long_input && q != focus;
      const int keep = context ? 3 : 8;
      int best[8];
      std::fill(best, best + 8, -1);
      if (long_input) {
        for (int k = 0; k < sm.cols; ++k) {
          if (!(row_w[k] > threshold)) continue;
          int at = keep;
          while (at > 0 && (best[at - 1] < 0 || row_w[k] > row_w[best[at - 1]])) --at;
          if (at < keep) {
            for (int j = keep - 1; j > at; --j) best[j] = best[j - 1];
            best[at] = k;
          }
        }
      }
      auto line = [&](int k) {
        const float a = std::min(1.0f, row_w[k] / strongest) * (context ? 140.0f : 220.0f);
        dl->AddLine(ImVec2(x_left, qy(q)), ImVec2(x_right, ky(k)), base | (static_cast<ImU32>(a) << 24),
                    (q == focus ? 2.0f : 1.2f) * width);
      };
      if (long_input) {
        for (int j = 0; j < keep; ++j)
          if (best[j] >= 0) line(best[j]);
      } else {
        for (int k = 0; k < sm.cols; ++k)
          if (row_w[k] > threshold) line(k);
      }
    }
  }
  // The window's extent on both columns.
  if (qw.end - qw.begin < qw.count) {
    const ImU32 band = IM_COL32(255, 255, 255, 40);
    dl->AddRectFilled(ImVec2(x_left - 3, top.y + token_window_y(qw, qw.begin)), ImVec2(x_left - 1, top.y + token_window_y(qw, qw.end)), band);
    dl->AddRectFilled(ImVec2(x_right + 1, top.y + token_window_y(kw, kw.begin)), ImVec2(x_right + 3, top.y + token_window_y(kw, kw.end)), band);
  }
  ImGui::Dummy(ImVec2(avail.x, std::max(token_window_height(qw), token_window_height(kw))));
  markFigure(figure0, ImVec2(top.x + avail.x, ImGui::GetItemRectMax().y));
}

bool HeadView::exportFile(Workbench& wb, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".pdf") return false;
  export_head_view(wb, path, hidden_heads_);  // the heads on show
  return true;
}

}  // namespace headlab::app
