#include "app/gui/head_detail_view.h"

#include "app/export/analysis_figures.h"
#include "app/gui/export_actions.h"
#include "app/gui/report_notice.h"
#include "app/gui/plot.h"
#include "app/gui/workbench.h"
#include "app/state/head_detail.h"
#include "app/state/head_table.h"

#include <algorithm>

namespace headlab::app {
namespace {

constexpr ImU32 kHeadColour = IM_COL32(80, 160, 255, 255);
constexpr ImU32 kBaselineColour = IM_COL32(150, 150, 150, 255);

void offsets_plot(const analysis::HeadEntry& head, const analysis::ReportSettings& settings, float height) {
  const auto bars = offset_histogram(head, 5);
  if (bars.empty()) return;
  std::vector<std::string> names;
  std::vector<double> shares;
  for (const auto& b : bars) {
    const std::string o = (b.offset > 0 ? "+" : "") + std::to_string(b.offset);
    names.push_back(b.beyond ? (b.offset < 0 ? "≤" : "≥") + o : o);  // short labels stay upright
    shares.push_back(b.share);
  }
  Plot plot;
  plot.begin("offsets", ImVec2(-1, height), "where the maximum attention goes (key − query)", {"offset"},
             {"share of queries", false, AxisRange{0, 1}});
  plot.add_bars(names, shares, kHeadColour, "this head");
  plot.add_hline(settings.positional_threshold, IM_COL32(255, 200, 60, 255), "positional ≥");
  plot.end();
}

void relations_plot(const analysis::HeadEntry& head, float height) {
  auto bars = relation_bars(head, true);
  if (bars.empty()) return;
  if (bars.size() > 8) bars.resize(8);  // the largest gains over the baseline
  std::vector<std::string> names;
  std::vector<double> accuracy, baseline;
  for (const auto& b : bars) names.push_back(b.label), accuracy.push_back(b.accuracy), baseline.push_back(b.baseline);
  Plot plot;
  plot.begin("relations", ImVec2(-1, height), "relations: this head against the best fixed offset", {""},
             {"accuracy", false, AxisRange{0, 1}});
  plot.add_bars(names, accuracy, kHeadColour, "head");
  plot.add_bars(names, baseline, kBaselineColour, "baseline");
  plot.end();
}

void spectrum_plot(const analysis::Spectrum& s, float height) {
  if (!s.applicable || s.singular_values.empty()) return;
  Plot plot;
  plot.begin("spectrum", ImVec2(-1, height), "key-query spectrum: cumulative energy", {"rank"},
             {"energy", false, AxisRange{0, 1.02}});
  plot.add_line({}, s.cumulative_energy, kHeadColour, "Σσ² share");
  plot.add_vline(s.rank90, IM_COL32(255, 200, 60, 255), "90%");
  plot.add_vline(s.rank99, IM_COL32(255, 120, 60, 255), "99%");
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
    ImGui::TextDisabled("the report has no %s layer %d head %d", sel.stack.c_str(), sel.layer, sel.head);
    return;
  }
  const auto& h = *head;
  ImGui::Text("%s · layer %d · head %d", h.stack.c_str(), h.layer, h.head);
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
  const auto& set = report->settings;
  // The plots share the view's height (each at least ~8 lines), so the relation chart is not
  // below the fold of the default layout.
  const int plots = int(set.has("positional")) + int(set.has("syntactic")) + int(h.spectrum.has_value());
  const int lines = int(set.has("confidence")) + int(set.has("rare")) + int(set.has("lrp")) + int(set.has("importance"));
  const float spacing = ImGui::GetStyle().ItemSpacing.y;
  const float plot_h = std::max(ImGui::GetFontSize() * 8,
                                (ImGui::GetContentRegionAvail().y - lines * ImGui::GetTextLineHeightWithSpacing() -
                                 plots * spacing) / std::max(1, plots));
  if (set.has("confidence") && h.queries > 0)
    ImGui::TextWrapped("confidence %.3f (%.3f over every key) over %lld queries", h.confidence, h.confidence_all_keys,
                static_cast<long long>(h.queries));
  if (set.has("positional")) offsets_plot(h, set, plot_h);
  if (set.has("rare")) {
    if (h.rare_queries > 0)
      ImGui::TextWrapped("rare word: %.1f%% of %lld queries attend most to the rarest token (%.1f%% to one of the two rarest)",
                  100 * h.rare_share, static_cast<long long>(h.rare_queries), 100 * h.rare_share_two);
    else
      ImGui::TextDisabled("rare word: no sentence had a token rarer than rank %lld", static_cast<long long>(set.rare_min_rank));
  }
  if (set.has("syntactic")) relations_plot(h, plot_h);
  if (set.has("lrp"))
    ImGui::Text("LRP relevance %.4g (%.3f of its layer, Voita et al. 2019 §5)", h.lrp_raw, h.lrp_normalized);
  if (set.has("importance")) ImGui::Text("importance |∂L/∂g| %.4g (Michel et al. 2019)", h.importance);
  if (h.spectrum) spectrum_plot(*h.spectrum, plot_h);
  ImGui::EndChild();
}

bool HeadDetailView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& report = wb.doc().report;
  const auto& sel = wb.doc().session.selection;
  if (!report) throw std::runtime_error("export " + path + ": no head report yet");
  const analysis::HeadEntry* head = report->find(sel.stack, sel.layer, sel.head);
  if (!head)
    throw std::runtime_error("export " + path + ": the report has no " + sel.stack + " layer " + std::to_string(sel.layer) +
                             " head " + std::to_string(sel.head));
  write_head_detail_figure(path,
                           model_title(wb) + " — " + sel.stack + " layer " + std::to_string(sel.layer) + ", head " +
                               std::to_string(sel.head),
                           *head, report->settings);
  return true;
}

}  // namespace headlab::app
