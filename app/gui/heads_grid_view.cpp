#include "app/gui/heads_grid_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/export/shown_controls.h"
#include "app/document/controls_edit.h"
#include "app/document/run_mapping.h"
#include "app/layout/colormap.h"
#include "analysis/measure.h"
#include "analysis/report_columns.h"
#include "analysis/report_figures.h"
#include "core/memory_budget.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

namespace headlab::app {
namespace {

// The report's numeric column of that name, looked up once per frame (its cells are then read
// straight from its cell function); nullopt for a column the report does not have.
std::optional<analysis::ReportColumn> numeric_column(const analysis::HeadReport& r, const std::string& name) {
  for (const auto& c : analysis::report_columns(r.settings))
    if (c.numeric && name == c.name) return c;
  return std::nullopt;
}

// What a column of the report was measured on, for the grid coloured by it and its figure: the
// sentences, the weights alone, or the induction probe's repeated random tokens.
std::string measure_caption(const analysis::HeadReport& r, const analysis::ReportColumn& column) {
  const std::string metric = column.metric;
  const analysis::Measure* m = metric.empty() ? nullptr : analysis::find_measure(metric);
  std::string source = "over " + std::to_string(r.sentences) + " sentences";
  if (m && !m->needs_data())
    source = metric == "induction" ? "on the induction probe (" + std::to_string(r.settings.probe_sequences) +
                                         " sequences of repeated random tokens)"
                                   : "from the weights (no data)";
  return column.name + (" " + source) + (r.partial ? " (partial)" : "");
}

}  // namespace

bool attention_selector(Workbench& wb) {
  if (!wb.doc().model) return false;
  const auto& sel = wb.doc().session.selection;
  bool changed = false;
  if (wb.doc().model->attentions.size() > 1) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    const AttentionSummary* current = wb.doc().model->find(sel.stack);
    if (ImGui::BeginCombo("##attention", current ? current->title.c_str() : "")) {
      for (const auto& a : wb.doc().model->attentions)
        if (ImGui::Selectable(a.title.c_str(), a.stack == sel.stack)) wb.apply(cmd::SelectAttention{a.stack}), changed = true;
      ImGui::EndCombo();
    }
    ImGui::SameLine();
  }
  ImGui::TextUnformatted("stage");
  const char* tips[] = {"J: raw logits per key head", "L: mixed logits (after P_l and the pre-softmax mix)",
                        "W: softmax weights", "U: mixed weights, what multiplies the values"};
  for (int s = 0; s < kStageCount; ++s) {
    ImGui::SameLine();
    if (ImGui::RadioButton(stage_name(static_cast<Stage>(s)), sel.stage == static_cast<Stage>(s))) {
      wb.apply(cmd::SelectAttention{std::nullopt, static_cast<Stage>(s)});
      changed = true;
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tips[s]);
  }
  return changed;
}

void HeadsGridView::drawContent(Workbench& wb) {
  if (!wb.doc().model) {
    ImGui::TextDisabled("loading a model…");
    return;
  }
  attention_selector(wb);
  ImGui::SameLine();
  // Colour by: the maps, or any numeric column of the head report.
  const std::string& measure = wb.doc().session.view.grid_measure;
  const auto& report = wb.doc().report;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  if (ImGui::BeginCombo("##measure", measure == "maps" || !report ? "attention maps" : measure.c_str())) {
    cmd::SetView v;
    if (ImGui::Selectable("attention maps", measure == "maps")) v.grid_measure = "maps";
    if (report)
      for (const auto& c : analysis::report_columns(report->settings))
        if (c.numeric && std::string(c.name) != "layer" && std::string(c.name) != "head" &&
            ImGui::Selectable(c.name, measure == c.name))
          v.grid_measure = c.name;
    if (v.grid_measure) wb.apply(v);
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(report                     ? "colour the grid by a measure of the head report"
                      : wb.doc().foreign_report ? "the report open was measured on another model (see the Dataset view)"
                                                : "run a dataset (Analyse ▸ Dataset) to colour heads by a measure");
  if (report && measure != "maps" && drawMeasure(wb, measure)) return;
  ImGui::SameLine();
  float size = wb.doc().session.view.thumbnail_size;
  const auto& sel = wb.doc().session.selection;
  ImGui::TextUnformatted("size");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::SliderFloat("##size", &size, 32.0f, 256.0f, "%.0f px")) {
    cmd::SetView v;
    v.thumbnail_size = size;
    wb.apply(v);
  }
  ImGui::SameLine(0, 16);
  const auto& view = wb.doc().session.view;
  attention_scale_legend(colormap_from_name(view.colormap), sel.stage == Stage::J || sel.stage == Stage::L,
                         view.auto_range, view.log_scale);
  wb.sync_textures();
  const AttentionSummary* att = wb.doc().model->find(sel.stack);
  const AttentionMaps* maps = wb.doc().snapshot ? wb.doc().snapshot->find(sel.stack) : nullptr;
  if (!att || !maps) {
    if (wb.doc().snapshot)
      ImGui::TextDisabled("no maps for this attention");
    else
      drawNoRun(wb);
    return;
  }
  const bool stage_missing = !maps->layers.empty() && maps->layers[0].stages[static_cast<int>(sel.stage)].empty();
  if (stage_missing) {
    ImGui::TextDisabled("capturing stage %s…", stage_name(sel.stage));
    return;
  }
  refused_input_banner(wb.doc());
  controls_not_shown_line(wb.doc());
  ImGui::BeginChild("grid", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  // The figure's title, so a "figure only" export says what it shows.
  const ImVec2 figure0 = ImGui::GetCursorScreenPos();
  ImGui::Text("%s — %s, every head (%s): layers down, heads across", model_title(wb).c_str(), att->title.c_str(),
              stage_name(sel.stage));
  if (const int side = wb.doc().snapshot->maps.thumbnail_side; side > 0) {
    ImGui::TextDisabled("(thumbnails: max-pooled to ≤ %d×%d; the selected layer exact)", side, side);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("the maps of every head at full size would take more than %s, so each is kept as the largest\n"
                        "weight of blocks of tokens; selecting a head fetches its layer's whole maps",
                        core::format_bytes(full_maps_budget()).c_str());
  }
  const float pad = 4.0f;
  const float label_w = ImGui::CalcTextSize("L00").x + pad * 2;
  const int heads = att->heads(sel.stage);
  // The size setting is an upper bound: thumbnails shrink to fit the window's width (not below 24 px).
  const float fit = (ImGui::GetContentRegionAvail().x - label_w) / std::max(1, heads) - pad;
  const float cell = std::max(24.0f, std::min(wb.doc().session.view.thumbnail_size, fit));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 origin = ImGui::GetCursorScreenPos();
  // Column headers.
  for (int h = 0; h < heads; ++h) {
    const std::string t = "H" + std::to_string(h);
    dl->AddText(ImVec2(origin.x + label_w + h * (cell + pad) + cell / 2 - ImGui::CalcTextSize(t.c_str()).x / 2, origin.y),
                ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
  }
  const float top = origin.y + ImGui::GetTextLineHeightWithSpacing();
  // The maps' own size (a thumbnail covers the same T × S in fewer cells).
  const int rows_q = maps->layers.empty() ? 0 : maps->layers[0].stages[static_cast<int>(sel.stage)].full_rows;
  const int cols_k = maps->layers.empty() ? 0 : maps->layers[0].stages[static_cast<int>(sel.stage)].full_cols;
  for (int l = 0; l < static_cast<int>(maps->layers.size()); ++l) {
    const float y = top + l * (cell + pad);
    const std::string t = "L" + std::to_string(l);
    dl->AddText(ImVec2(origin.x + pad, y + cell / 2 - ImGui::GetFontSize() / 2), ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
    // The gates and mixing the maps on show were computed with.
    const auto& controls = shown_controls(wb.doc(), sel.stack, l);
    const StageMaps& layer_maps = maps->layers[static_cast<size_t>(l)].stages[static_cast<int>(sel.stage)];
    const int side = wb.doc().snapshot->maps.thumbnail_side;
    // Learned sinks (gpt-oss): beside each thumbnail of W or U a strip of each query's sink share, as
    // the Attention map's sink column, so that a row reads to 1 with it.
    const StageMaps& sink = maps->layers[static_cast<size_t>(l)].sink;
    const bool weights_stage = sel.stage == Stage::W || sel.stage == Stage::U;
    const float strip = std::max(3.0f, std::round(cell * 0.08f));
    for (int h = 0; h < heads; ++h) {
      const bool sink_strip = weights_stage && !sink.empty() && h < sink.heads && sink.rows > 0;
      const float map_w = sink_strip ? cell - strip - 2 : cell;
      // Keep the map's aspect (cross-attention is T×S) inside the cell (less the sink strip).
      const float aspect = cols_k > 0 && rows_q > 0 ? static_cast<float>(rows_q) / cols_k : 1.0f;
      const float iw = std::min(map_w, aspect > 1 ? cell / aspect : cell), ih = aspect > 1 ? cell : iw * aspect;
      const ImVec2 cell0(origin.x + label_w + h * (cell + pad), y);
      const ImVec2 p0(cell0.x + (map_w - iw) / 2, cell0.y + (cell - ih) / 2);
      const ImVec2 p1(p0.x + iw, p0.y + ih);
      double sink_mean = 0;
      if (sink_strip) {
        const MapRange range = wb.textures.range(l, h);
        const Colormap colours = colormap_from_name(wb.doc().session.view.colormap);
        const float row_h = ih / sink.rows;
        for (int q = 0; q < sink.rows; ++q) {
          const float share = sink.at(h, q, 0);
          sink_mean += share / sink.rows;
          const Rgb c = colormap_rgb(colours, range.normalize(share));
          dl->AddRectFilled(ImVec2(p1.x + 2, p0.y + q * row_h), ImVec2(p1.x + 2 + strip, p0.y + (q + 1) * row_h),
                            IM_COL32(c.r, c.g, c.b, 255));
        }
      }
      ImGui::SetCursorScreenPos(cell0);
      ImGui::PushID(l * 4096 + h);
      if (ImGui::InvisibleButton("thumb", ImVec2(cell, cell))) wb.apply(cmd::SelectHead{std::nullopt, l, h});
      const bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      wb.textures.draw(dl, l, h, p0, p1);
      const float gate = shown_gate(wb.doc(), sel.stack, l, h, sel.stage);
      if (gate < 1.0f) {
        dl->AddRectFilled(p0, p1, IM_COL32(20, 20, 20, static_cast<int>(200 * (1.0f - gate))));
        const std::string g = gate == 0.0f ? "off" : "g=" + format_value(gate);
        dl->AddText(ImVec2(p0.x + 3, p0.y + 2), IM_COL32(255, 90, 90, 255), g.c_str());
        if (gate == 0.0f) {
          dl->AddLine(p0, p1, IM_COL32(255, 90, 90, 160), 1.5f);
          dl->AddLine(ImVec2(p1.x, p0.y), ImVec2(p0.x, p1.y), IM_COL32(255, 90, 90, 160), 1.5f);
        }
      }
      // The highlighted token's row (query) and column (key), in every thumbnail: the cell of the
      // block that holds it where the layer was pooled.
      if (sel.query >= 0 && layer_maps.rows > 0) {
        const int cell = layer_maps.pooled() ? sel.query / static_cast<int>(core::pooling_block(rows_q, side)) : sel.query;
        const float cy = ih / layer_maps.rows;
        dl->AddRect(ImVec2(p0.x, p0.y + cell * cy), ImVec2(p1.x, p0.y + (cell + 1) * cy), IM_COL32(255, 64, 160, 255));
      }
      if (sel.key >= 0 && layer_maps.cols > 0) {
        const int cell = layer_maps.pooled() ? sel.key / static_cast<int>(core::pooling_block(cols_k, side)) : sel.key;
        const float cx = iw / layer_maps.cols;
        dl->AddRect(ImVec2(p0.x + cell * cx, p0.y), ImVec2(p0.x + (cell + 1) * cx, p1.y), IM_COL32(255, 160, 0, 255));
      }
      // Heads a mixing matrix changes: marked, as gated ones are.
      const std::string mixed = head_mixed(controls, h);
      if (!mixed.empty()) {
        const ImVec2 size = ImGui::CalcTextSize("mix");
        dl->AddRectFilled(ImVec2(p0.x + 1, p1.y - size.y - 2), ImVec2(p0.x + size.x + 5, p1.y - 1), IM_COL32(20, 20, 20, 200));
        dl->AddText(ImVec2(p0.x + 3, p1.y - size.y - 1), IM_COL32(110, 200, 255, 255), "mix");
      }
      // Heads whose output comes (partly) from the counterfactual: marked too, bottom right.
      const float taken = shown_take(wb.doc(), sel.stack, l, h, sel.stage);
      if (taken > 0.0f) {
        const std::string cf = taken == 1.0f ? "cf" : "cf " + format_value(taken);
        const ImVec2 size = ImGui::CalcTextSize(cf.c_str());
        dl->AddRectFilled(ImVec2(p1.x - size.x - 5, p1.y - size.y - 2), ImVec2(p1.x - 1, p1.y - 1), IM_COL32(20, 20, 20, 200));
        dl->AddText(ImVec2(p1.x - size.x - 3, p1.y - size.y - 1), IM_COL32(255, 200, 80, 255), cf.c_str());
      }
      const bool selected = l == sel.layer && h == sel.head;
      dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1),
                  selected ? IM_COL32(255, 220, 0, 255) : hovered ? IM_COL32(255, 255, 255, 200) : IM_COL32(70, 70, 70, 255),
                  0.0f, 0, selected ? 2.5f : 1.0f);
      if (hovered) {
        char sink_text[96] = "";
        if (sink_strip)
          std::snprintf(sink_text, sizeof sink_text, "\nright strip: the learned sink's share per query (mean %.3f)",
                        sink_mean);
        ImGui::SetTooltip("layer %d, head %d (%s)%s%s%s", l, h, stage_name(sel.stage),
                          gate < 1.0f ? (" — gate " + format_value(gate)).c_str() : "",
                          mixed.empty()       ? ""
                          : mixed == "pre"    ? " — mixed before the softmax"
                          : mixed == "post"   ? " — mixed after the softmax"
                                              : " — mixed before and after the softmax",
                          sink_text);
      }
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, top + maps->layers.size() * (cell + pad)));
  ImGui::Dummy(ImVec2(label_w + heads * (cell + pad), 1));
  markFigure(ImVec2(figure0.x - 2, figure0.y - 2),
             ImVec2(origin.x + label_w + heads * (cell + pad) + 2, top + maps->layers.size() * (cell + pad) + 2));
  ImGui::EndChild();
}

bool HeadsGridView::exportFile(Workbench& wb, const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".svg" && ext != ".pdf") return false;
  // What the view shows: the maps, or the report's column it is coloured by.
  const auto& doc = wb.doc();
  const std::string& measure = doc.session.view.grid_measure;
  if (measure != "maps" && doc.report)
    if (const auto column = numeric_column(*doc.report, measure)) {
      wb.start_export(path, [report = doc.report, measure, stack = doc.session.selection.stack, path,
                             gray = colormap_from_name(doc.session.view.colormap) == Colormap::Gray,
                             title = doc.model->name + " — " + measure + ", every head",
                             caption = measure_caption(*doc.report, *column)] {
        analysis::write_column_grid(*report, measure, stack, gray, title, caption, path);
      });
      return true;
    }
  export_heads_grid(wb, path);
  return true;
}

bool HeadsGridView::drawMeasure(Workbench& wb, const std::string& measure) {
  const auto& r = *wb.doc().report;
  const auto& sel = wb.doc().session.selection;
  // values[layer][head], NaN where nothing was measured.
  int layers = 0, heads = 0;
  for (const auto& h : r.heads)
    if (h.stack == sel.stack) layers = std::max(layers, h.layer + 1), heads = std::max(heads, h.head + 1);
  if (layers == 0) return false;
  const auto column = numeric_column(r, measure);
  if (!column) return false;  // another report's measure
  std::vector<float> values(static_cast<size_t>(layers) * heads, std::nanf(""));
  float lo = INFINITY, hi = -INFINITY;
  for (const auto& h : r.heads) {
    if (h.stack != sel.stack) continue;
    const std::optional<double> v = column->cell(h).number();
    if (!v || !std::isfinite(*v)) continue;
    values[static_cast<size_t>(h.layer) * heads + h.head] = static_cast<float>(*v);
    lo = std::min(lo, static_cast<float>(*v)), hi = std::max(hi, static_cast<float>(*v));
  }
  // The column's own scale ([0, 1] for a share, [-1, 1] for a signed score; else the values' with
  // zero in it): a head at 0.01 is not drawn as hot as one at 1 because no head comes higher.
  const auto [scale_lo, scale_hi] = analysis::colour_scale(*column, lo, hi);
  const MapRange range{static_cast<float>(scale_lo), static_cast<float>(scale_hi), false};
  const Colormap cmap = colormap_from_name(wb.doc().session.view.colormap);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float font = ImGui::GetFontSize();
  const float label_w = ImGui::CalcTextSize("L00").x + 8;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float cell = std::max(8.0f, std::min((avail.x - label_w) / heads, (avail.y - font * 5.5f) / layers));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float top = origin.y + font * 1.3f;
  for (int h = 0; h < heads; ++h) {
    const std::string t = "H" + std::to_string(h);
    if (cell > ImGui::CalcTextSize(t.c_str()).x + 2)
      dl->AddText(ImVec2(origin.x + label_w + h * cell + cell / 2 - ImGui::CalcTextSize(t.c_str()).x / 2, origin.y),
                  ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
  }
  for (int l = 0; l < layers; ++l) {
    const std::string t = "L" + std::to_string(l);
    dl->AddText(ImVec2(origin.x, top + l * cell + cell / 2 - font / 2), ImGui::GetColorU32(ImGuiCol_Text), t.c_str());
    for (int h = 0; h < heads; ++h) {
      const float v = values[static_cast<size_t>(l) * heads + h];
      const ImVec2 p0(origin.x + label_w + h * cell, top + l * cell), p1(p0.x + cell - 1, p0.y + cell - 1);
      const Rgb c = colormap_rgb(cmap, std::isnan(v) ? 0.0f : range.normalize(v));
      dl->AddRectFilled(p0, p1, std::isnan(v) ? IM_COL32(45, 45, 45, 255) : IM_COL32(c.r, c.g, c.b, 255));
      ImGui::SetCursorScreenPos(p0);
      ImGui::PushID(l * 4096 + h);
      if (ImGui::InvisibleButton("cell", ImVec2(cell, cell))) wb.apply(cmd::SelectHead{sel.stack, l, h});
      if (ImGui::IsItemHovered()) {
        dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 220));
        if (std::isnan(v))
          ImGui::SetTooltip("layer %d, head %d: not measured", l, h);
        else
          ImGui::SetTooltip("layer %d, head %d: %s = %.4g", l, h, measure.c_str(), v);
      }
      ImGui::PopID();
      if (l == sel.layer && h == sel.head) dl->AddRect(p0, p1, IM_COL32(255, 220, 0, 255), 0, 0, 2.5f);
    }
  }
  const float bar_y = top + layers * cell + font * 0.6f;
  colour_bar(dl, ImVec2(origin.x + label_w, bar_y), ImVec2(std::min(heads * cell, font * 16), font * 0.8f), cmap, range);
  ImGui::SetCursorScreenPos(ImVec2(origin.x, bar_y + font * 2.4f));
  ImGui::TextDisabled("%s", measure_caption(r, *column).c_str());
  return true;
}

}  // namespace headlab::app
