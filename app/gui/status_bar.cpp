#include "app/gui/status_bar.h"

#include "app/gui/workbench.h"

#include <cstdio>

namespace headlab::app {
namespace {

std::string duration_text(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%d:%02d", s / 60, s % 60);
  return text;
}

}  // namespace

void StatusBar::drawContent(Workbench& wb) {
  // Every task of the task system, each with its progress and its own Stop.
  const auto tasks = wb.tasks().active();
  if (tasks.empty()) ImGui::TextDisabled("ready");
  const size_t shown = std::min<size_t>(tasks.size(), 3);
  for (size_t i = 0; i < shown; ++i) {
    const auto& task = tasks[i];
    const Task::Status s = task->status();
    if (i > 0) ImGui::SameLine(0, 16);
    std::string label = s.name;
    if (s.state == TaskState::Queued) label += " (waiting)";
    else if (!s.phase.empty() && s.phase != s.name) label += ": " + s.phase;
    ImGui::TextUnformatted(label.c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", label.c_str());
    ImGui::SameLine();
    char overlay[64] = "";
    if (s.total > 0) {
      if (s.eta_s >= 0)
        std::snprintf(overlay, sizeof overlay, "%lld/%lld · %s left", static_cast<long long>(s.done),
                      static_cast<long long>(s.total), duration_text(s.eta_s).c_str());
      else
        std::snprintf(overlay, sizeof overlay, "%lld/%lld", static_cast<long long>(s.done), static_cast<long long>(s.total));
    }
    ImGui::ProgressBar(static_cast<float>(s.fraction), ImVec2(ImGui::GetFontSize() * (s.total > 0 ? 9 : 5), 0), overlay);
    ImGui::SameLine();
    ImGui::PushID(static_cast<int>(task->id()));
    if (ImGui::SmallButton("Stop")) task->stop();
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("stop %s (it ends after the step under way)", s.name.c_str());
    ImGui::PopID();
  }
  if (tasks.size() > shown) {
    ImGui::SameLine(0, 12);
    ImGui::TextDisabled("+%zu more", tasks.size() - shown);
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      for (size_t i = shown; i < tasks.size(); ++i) ImGui::BulletText("%s", tasks[i]->status().name.c_str());
      ImGui::EndTooltip();
    }
  }
  if (wb.doc().snapshot) {
    ImGui::SameLine(0, 20);
    const auto& s = *wb.doc().snapshot;
    if (s.layers_computed > 0)
      ImGui::TextDisabled("run %.1f ms (%d layer%s from %s %d)", s.run_ms, s.layers_computed,
                          s.layers_computed == 1 ? "" : "s",
                          s.recomputed_stack ? core::stack_name(*s.recomputed_stack) : "", s.recomputed_from);
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
