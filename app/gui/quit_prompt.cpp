#include "app/gui/quit_prompt.h"

#include "app/gui/workbench.h"
#include "app/tasks/quit_check.h"

#include <imgui.h>

namespace headlab::app {

void draw_quit_prompt(Workbench& wb) {
  const char* title = "Quit HeadLab?";
  if (wb.quit_question.empty()) return;
  wb.quit_question = work_stopped_by_quit(wb.tasks().active());
  if (wb.quit_question.empty()) {  // the work ended while the window asked: nothing is lost
    wb.quit = true;
    return;
  }
  if (!ImGui::IsPopupOpen(title)) ImGui::OpenPopup(title);
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted("This work is under way; quitting stops it, and what it has not written is lost:");
  for (const auto& line : wb.quit_question) ImGui::BulletText("%s", line.c_str());
  ImGui::TextDisabled("(Stop keeps a dataset analysis's partial report and a generation's tokens on screen to export.)");
  const bool quit = ImGui::Button("Quit");
  ImGui::SameLine();
  const bool keep = ImGui::Button("Keep working") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
  if (quit || keep) {
    wb.quit_question.clear();
    ImGui::CloseCurrentPopup();
    wb.quit = quit;
  }
  ImGui::EndPopup();
}

}  // namespace headlab::app
