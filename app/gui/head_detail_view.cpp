#include "app/gui/head_detail_view.h"

#include "app/export/analysis_figures.h"
#include "app/gui/export_actions.h"
#include "app/gui/report_notice.h"
#include "app/gui/plot.h"
#include "app/gui/workbench.h"
#include "analysis/measure.h"
#include "app/document/head_table.h"

#include <algorithm>

namespace headlab::app {
namespace {

constexpr ImU32 kHeadColour = IM_COL32(80, 160, 255, 255);
constexpr ImU32 kBaselineColour = IM_COL32(150, 150, 150, 255);
constexpr ImU32 kThresholdColour = IM_COL32(255, 200, 60, 255);
constexpr ImU32 kMarkerColours[] = {IM_COL32(255, 200, 60, 255), IM_COL32(255, 120, 60, 255)};

// One piece of a measure's evidence (analysis/measure.h): a line, a bar chart or a curve.
void draw_evidence(const analysis::Evidence& e, int index, float plot_h) {
  using Kind = analysis::Evidence::Kind;
  if (e.kind == Kind::text) {
    ImGui::TextWrapped("%s", e.text.c_str());
    return;
  }
  // Category names too wide for their bars are written upwards, in at most 0.3 of the chart's height
  // (app/gui/plot.cpp): the chart grows (the view scrolls) until the longest name fits whole.
  if (e.kind == Kind::bars) {
    float widest = 0;
    for (const auto& c : e.categories) widest = std::max(widest, ImGui::CalcTextSize(c.c_str()).x);
    plot_h = std::max(plot_h, std::min(widest / 0.3f, plot_h + ImGui::GetFontSize() * 14));
  }
  Plot plot;
  const std::string id = "evidence" + std::to_string(index);
  plot.begin(id.c_str(), ImVec2(-1, plot_h), e.text, {e.x_label}, {e.y_label, false, AxisRange{0, e.y_max}});
  if (e.kind == Kind::bars) {
    for (size_t s = 0; s < e.values.size(); ++s)
      plot.add_bars(e.categories, e.values[s], s == 0 ? kHeadColour : kBaselineColour,
                    s < e.series.size() ? e.series[s] : "");
    if (e.threshold) plot.add_hline(e.threshold->first, kThresholdColour, e.threshold->second);
  } else {
    plot.add_line({}, e.values.empty() ? std::vector<double>{} : e.values[0], kHeadColour, "Σσ² share");
    for (size_t m = 0; m < e.markers.size(); ++m)
      plot.add_vline(e.markers[m].first, kMarkerColours[std::min<size_t>(m, 1)], e.markers[m].second);
  }
  plot.end();
}

}  // namespace

void HeadDetailView::drawContent(Workbench& wb) {
  const auto& report = wb.doc().report;
  const auto& sel = wb.doc().session.selection;
  if (foreign_report_notice(wb)) return;
  if (!report) {
    ImGui::TextDisabled("no head report: run a dataset or open a report in the Dataset view");
    return;
  }
  const analysis::HeadEntry* head = report->find(sel.stack, sel.layer, sel.head);
  if (!head) {
    ImGui::TextDisabled("the report has no %s layer %d head %d", core::stack_name(sel.stack), sel.layer, sel.head);
    return;
  }
  const auto& h = *head;
  ImGui::Text("%s · layer %d · head %d", core::stack_name(h.stack), h.layer, h.head);
  for (const auto& b : role_badges(h)) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1.0f, 0.85f, 0.3f, 1.0f), "[%s]", b.label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", b.detail.c_str());
  }
  if (h.roles.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("no role at these thresholds");
  }
  export_buttons_same_line(wb, "head-detail", title());
  ImGui::BeginChild("evidence");
  // Every measure of the report gives its evidence (analysis/measure.h): lines, then its charts.
  const auto& set = report->settings;
  std::vector<analysis::Evidence> evidence;
  for (const analysis::Measure* m : analysis::measures_of(set))
    for (auto& e : m->evidence(h, set)) evidence.push_back(std::move(e));
  // The charts share the view's height, each at least ~12 lines (room for a title, a legend, rotated
  // category labels and the data); the view scrolls when they do not all fit.
  int plots = 0, lines = 0;
  for (const auto& e : evidence) (e.kind == analysis::Evidence::Kind::text ? lines : plots) += 1;
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float plot_h = std::max(ImGui::GetFontSize() * 12,
                                (ImGui::GetContentRegionAvail().y - lines * ImGui::GetTextLineHeightWithSpacing() -
                                 plots * spacing) / std::max(1, plots));
  for (size_t i = 0; i < evidence.size(); ++i) draw_evidence(evidence[i], int(i), plot_h);
  ImGui::EndChild();
}

bool HeadDetailView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& report = wb.doc().report;
  const auto& sel = wb.doc().session.selection;
  if (!report) throw std::runtime_error("export " + path + ": no head report yet");
  const analysis::HeadEntry* head = report->find(sel.stack, sel.layer, sel.head);
  if (!head)
    throw std::runtime_error("export " + path + ": the report has no " + core::stack_name(sel.stack) + " layer " + std::to_string(sel.layer) +
                             " head " + std::to_string(sel.head));
  const std::string title = model_title(wb) + " — " + core::stack_name(sel.stack) + " layer " +
                            std::to_string(sel.layer) + ", head " + std::to_string(sel.head);
  // `report` keeps the entry the task reads.
  wb.start_export(path, [report, head, path, title] { write_head_detail_figure(path, title, *head, report->settings); });
  return true;
}

}  // namespace headlab::app
