#include "app/gui/head_table_view.h"

#include "app/gui/draw_util.h"

#include "app/export/analysis_figures.h"
#include "app/gui/export_actions.h"
#include "app/gui/report_notice.h"
#include "app/gui/workbench.h"
#include "analysis/measure.h"
#include "app/document/head_table.h"
#include "app/document/session.h"

#include <filesystem>

namespace headlab::app {
namespace {

// The rows on show: the session's filter, then its sort.
std::vector<int> shown_rows(const analysis::HeadReport& report, const AnalysisChoices& a) {
  HeadFilter filter;
  try {
    filter.role = a.filter_role.empty() ? RoleFilter::any : role_filter_from_name(a.filter_role);
  } catch (const std::invalid_argument&) {
    filter.role = RoleFilter::any;
  }
  filter.layer = a.filter_layer;
  std::vector<int> rows = filtered_rows(report, filter);
  if (!a.sort_by.empty()) {
    try {
      rows = sorted_rows(report, rows, a.sort_by, a.sort_descending);
    } catch (const std::invalid_argument&) {
      // A column this report lacks (another report's sort): report order.
    }
  }
  return rows;
}

ImU32 badge_colour(RoleFilter kind) {
  switch (kind) {
    case RoleFilter::positional: return IM_COL32(60, 110, 200, 255);
    case RoleFilter::syntactic: return IM_COL32(40, 150, 90, 255);
    case RoleFilter::rare_word: return IM_COL32(190, 110, 30, 255);
    default: return IM_COL32(90, 90, 90, 255);
  }
}

void draw_badges(const analysis::HeadEntry& head) {
  const auto badges = role_badges(head);
  if (badges.empty()) {
    ImGui::TextDisabled("—");
    return;
  }
  for (size_t i = 0; i < badges.size(); ++i) {
    if (i > 0) ImGui::SameLine(0, 3);
    const ImVec2 size = ImGui::CalcTextSize(badges[i].label.c_str());
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(p, ImVec2(p.x + size.x + 8, p.y + size.y + 2), badge_colour(badges[i].kind), 4);
    ImGui::SetCursorScreenPos(ImVec2(p.x + 4, p.y + 1));
    ImGui::TextUnformatted(badges[i].label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", badges[i].detail.c_str());
    ImGui::SameLine(0, 4);
    ImGui::Dummy(ImVec2(0, 0));
  }
}

}  // namespace

void HeadTableView::drawControls(Workbench& wb) {
  const auto& a = wb.doc().session.analysis;
  const auto& r = *wb.doc().report;
  // Filter.
  const RoleFilter roles[] = {RoleFilter::any, RoleFilter::some, RoleFilter::positional, RoleFilter::syntactic,
                              RoleFilter::rare_word, RoleFilter::none};
  RoleFilter current = RoleFilter::any;
  try {
    if (!a.filter_role.empty()) current = role_filter_from_name(a.filter_role);
  } catch (const std::invalid_argument&) {
  }
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("role");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::BeginCombo("##role", role_filter_name(current))) {
    for (RoleFilter f : roles)
      if (ImGui::Selectable(role_filter_name(f), f == current))
        wb.apply(cmd::FilterHeads{f == RoleFilter::any ? "" : role_filter_name(f), a.filter_layer});
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  int layers = 0;
  for (const auto& h : r.heads) layers = std::max(layers, h.layer + 1);
  ImGui::TextUnformatted("layer");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
  const std::string layer_text = a.filter_layer < 0 ? "any" : std::to_string(a.filter_layer);
  if (ImGui::BeginCombo("##layer", layer_text.c_str())) {
    if (ImGui::Selectable("any", a.filter_layer < 0)) wb.apply(cmd::FilterHeads{a.filter_role, -1});
    for (int l = 0; l < layers; ++l)
      if (ImGui::Selectable(std::to_string(l).c_str(), a.filter_layer == l)) wb.apply(cmd::FilterHeads{a.filter_role, l});
    ImGui::EndCombo();
  }
  // Thresholds in use (the report's own until edited).
  const auto& set = r.settings;
  ImGui::TextDisabled("thresholds%s", a.thresholds_edited ? " (edited)" : "");
  ImGui::SameLine();
  float positional = static_cast<float>(set.positional_threshold), rare = static_cast<float>(set.rare_threshold),
        margin = static_cast<float>(set.syntactic_margin);
  // Each label before its slider, so "positional ≥ [0.90]" reads as the threshold it is.
  const float w = ImGui::GetFontSize() * 6;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  auto labelled = [&](const char* label, const char* id, float& value, float lo, float hi, bool first) {
    if (!first) same_line_if_fits(ImGui::CalcTextSize(label).x + gap + w);
    ImGui::TextUnformatted(label);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(w);
    return ImGui::SliderFloat(id, &value, lo, hi, "%.2f");
  };
  if (labelled("positional ≥", "##positional", positional, 0.5f, 1.0f, true))
    wb.apply(cmd::SetThresholds{positional, {}, {}});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("share of queries whose maximum is at one offset (Voita et al. 2019 §5.1)");
  if (labelled("rare >", "##rare", rare, 0.0f, 1.0f, false)) wb.apply(cmd::SetThresholds{{}, rare, {}});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("share of queries whose maximum is the rarest token (Voita et al. 2019 §5.3)");
  if (labelled("syntactic margin", "##margin", margin, 0.0f, 0.5f, false)) wb.apply(cmd::SetThresholds{{}, {}, margin});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("accuracy over the best fixed-offset baseline (Clark et al. 2019 §4)");
  // The measures' own roles (prev-token, induction, copying): one slider per threshold they declare.
  for (const auto* m : analysis::measures_of(set))
    for (const auto& t : m->role_thresholds()) {
      float value = static_cast<float>(set.*t.value);
      if (labelled(t.label, (std::string("##") + t.key).c_str(), value, float(t.lo), float(t.hi), false))
        wb.apply(cmd::SetThresholds{{}, {}, {}, false, std::string(t.key), double(value)});
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", t.tooltip);
    }
  if (a.thresholds_edited) {
    ImGui::SameLine();
    if (ImGui::SmallButton("as measured")) wb.apply(cmd::SetThresholds{{}, {}, {}, true});
  }
}

void HeadTableView::drawContent(Workbench& wb) {
  const auto& report = wb.doc().report;
  if (foreign_report_notice(wb)) return;
  if (!report) {
    ImGui::TextDisabled("no head report: run a dataset or open a report in the Dataset view");
    return;
  }
  const auto& r = *report;
  const auto& a = wb.doc().session.analysis;
  drawControls(wb);
  const std::vector<std::string> columns = head_table_columns(r);
  const std::vector<int> rows = shown_rows(r, a);
  ImGui::TextDisabled("%zu of %zu heads%s", rows.size(), r.heads.size(), r.partial ? " · partial report" : "");
  export_buttons_same_line(wb, "head-table", title());
  // The sort lives in the document (scripts and sessions set it too), so the headers are plain
  // buttons that send SortHeads rather than ImGui's own sort state.
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollX |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                ImGuiTableFlags_SizingFixedFit;
  const int n = static_cast<int>(columns.size()) + 1;
  if (n > 64 || !ImGui::BeginTable("heads", n, flags)) return;  // ImGui tables take at most 64 columns
  ImGui::TableSetupScrollFreeze(4, 1);
  ImGui::TableSetupColumn("roles", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 11);
  for (const auto& c : columns) ImGui::TableSetupColumn(c.c_str());
  ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
  ImGui::TableSetColumnIndex(0);
  ImGui::TableHeader("roles");
  for (size_t i = 0; i < columns.size(); ++i) {
    ImGui::TableSetColumnIndex(static_cast<int>(i) + 1);
    const bool sorted = columns[i] == a.sort_by;
    const std::string label = columns[i] + (sorted ? (a.sort_descending ? " ▼" : " ▲") : "");
    ImGui::TableHeader(label.c_str());
    if (ImGui::IsItemClicked()) wb.apply(cmd::SortHeads{columns[i], sorted ? !a.sort_descending : true});
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("sort by %s (click again to reverse)", columns[i].c_str());
  }
  const auto& sel = wb.doc().session.selection;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const int row = rows[i];
      const auto& head = r.heads[row];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const bool selected = head.stack == sel.stack && head.layer == sel.layer && head.head == sel.head;
      ImGui::PushID(row);
      if (ImGui::Selectable("##row", selected, ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowItemOverlap))
        wb.apply(cmd::SelectHead{head.stack, head.layer, head.head});
      ImGui::SameLine(0, 0);
      draw_badges(head);
      ImGui::PopID();
      for (const auto& c : columns) {
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(head_table_text(head_table_cell(r, row, c)).c_str());
      }
    }
  }
  ImGui::EndTable();
  markFigure(ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
}

bool HeadTableView::exportFile(Workbench& wb, const std::string& path) {
  const bool vector = is_vector_path(path);
  if (std::filesystem::path(path).extension() != ".csv" && !vector) return false;
  const auto& report = wb.doc().report;
  if (!report) throw std::runtime_error("export " + path + ": no head report yet");
  if (vector) {
    const auto& a = wb.doc().session.analysis;
    std::string title = model_title(wb) + " — head table";
    if (!a.filter_role.empty()) title += ", role " + a.filter_role;
    if (a.filter_layer >= 0) title += ", layer " + std::to_string(a.filter_layer);
    if (!a.sort_by.empty()) title += ", by " + a.sort_by + (a.sort_descending ? " ▼" : " ▲");
    wb.start_export(path, [report, path, title, rows = shown_rows(*report, a)] {
      write_head_table_figure(path, title, *report, rows);
    });
    return true;
  }
  wb.start_export(path, [report, path, rows = shown_rows(*report, wb.doc().session.analysis)] {
    write_file_atomic(path, table_to_csv(*report, rows));
  });
  return true;
}

}  // namespace headlab::app
