#include "app/gui/status_bar.h"

#include "app/gui/workbench.h"

namespace headlab::app {

void StatusBar::drawContent(Workbench& wb) {
  const TaskStatus st = wb.task_status();
  if (st.busy) {
    ImGui::TextUnformatted(st.task.c_str());
    ImGui::SameLine();
    ImGui::ProgressBar(st.progress, ImVec2(ImGui::GetFontSize() * 10, 0));
    ImGui::SameLine();
    if (ImGui::SmallButton("Stop")) wb.stop_run();
  } else {
    ImGui::TextDisabled("ready");
  }
  if (wb.doc().snapshot) {
    ImGui::SameLine(0, 20);
    const auto& s = *wb.doc().snapshot;
    if (s.layers_computed > 0)
      ImGui::TextDisabled("run %.1f ms (%d layers from %s %d)", s.run_ms, s.layers_computed, s.recomputed_stack.c_str(),
                          s.recomputed_from);
    else
      ImGui::TextDisabled("run %.1f ms (reused)", s.run_ms);
  }
  ImGui::SameLine(0, 20);
  ImGui::TextDisabled("frame %.1f ms · upload %.1f ms", wb.frame_ms, wb.upload_ms);
  if (!wb.doc().last_error.empty()) {
    ImGui::SameLine(0, 20);
    ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.4f, 1.0f), "%s", wb.doc().last_error.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", wb.doc().last_error.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("x")) wb.clear_error();
  }
}

}  // namespace headlab::app
