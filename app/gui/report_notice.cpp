#include "app/gui/report_notice.h"

#include "app/gui/workbench.h"

#include <imgui.h>

#include <filesystem>

namespace headlab::app {

bool foreign_report_notice(Workbench& wb) {
  const auto& report = wb.doc().foreign_report;
  if (!report) return false;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.25f, 1.0f));
  ImGui::TextWrapped("Report of %s — not the open model.", report->model.c_str());
  ImGui::PopStyleColor();
  ImGui::TextWrapped("It was %s. A report is never applied to another model's heads.", wb.doc().foreign_reason.c_str());
  std::error_code ec;
  if (!report->model.empty() && std::filesystem::is_regular_file(std::filesystem::path(report->model) / "config.json", ec)) {
    if (ImGui::Button("Open its model")) wb.apply(cmd::OpenModel{report->model});
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("opens %s; the report applies again", report->model.c_str());
    ImGui::SameLine();
  }
  if (ImGui::Button("Close report")) wb.apply(cmd::CloseReport{});
  return true;
}

}  // namespace headlab::app
