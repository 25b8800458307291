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
  // What failed, newest first; each stays until the same kind of action succeeds or it is closed.
  const auto& errors = wb.doc().errors;
  if (!errors.empty()) {
    const ErrorMessage& newest = errors.back();
    ImGui::SameLine(0, 20);
    ImGui::TextColored(ImVec4(1.0f, 0.4f, 0.4f, 1.0f), "%s", newest.text.c_str());
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40);
      for (size_t i = errors.size(); i-- > 0;) ImGui::BulletText("%s", errors[i].text.c_str());
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
    if (errors.size() > 1) {
      ImGui::SameLine();
      ImGui::TextDisabled("(+%zu more)", errors.size() - 1);
    }
    ImGui::SameLine();
    if (ImGui::SmallButton("x")) wb.clear_error(newest.kind);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("close this message");
  }
}

}  // namespace headlab::app
