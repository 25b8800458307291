#include "app/gui/view.h"

#include "app/gui/workbench.h"

#include <imgui_internal.h>

namespace headlab::app {

bool opens_with_workspace(const View& view, const std::string& workspace) {
  return !view.onDemand() && (view.workspace().empty() || view.workspace() == workspace);
}

float View::statusBarHeight() { return ImGui::GetFrameHeight() + ImGui::GetStyle().WindowPadding.y * 2; }

void View::draw(Workbench& wb) {
  if (!open_) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const ImVec4 r = defaultRect();
  // The menu bar's height, known from the first frame on (WorkPos only follows a frame later).
  const float top = vp->Pos.y + ImGui::GetFrameHeight();
  const float work_h = vp->Size.y - ImGui::GetFrameHeight() - statusBarHeight();
  ImVec2 pos(vp->WorkPos.x + r.x * vp->WorkSize.x, top + r.y * work_h);
  ImVec2 size(r.z * vp->WorkSize.x, r.w * work_h);
  if (pinned()) {
    pos = ImVec2(vp->WorkPos.x, top + work_h);
    size = ImVec2(vp->WorkSize.x, statusBarHeight());
  }
  ImGuiWindowSettings* saved = wb.apply_layout && !pinned() ? ImGui::FindWindowSettings(ImHashStr(title_.c_str())) : nullptr;
  if (saved) {
    ImGui::SetNextWindowPos(ImVec2(saved->Pos.x, saved->Pos.y), ImGuiCond_Always);
    ImGui::SetNextWindowSize(ImVec2(saved->Size.x, saved->Size.y), ImGuiCond_Always);
  } else {
    const ImGuiCond cond = wb.reset_layout || pinned() ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    ImGui::SetNextWindowPos(pos, cond);
    ImGui::SetNextWindowSize(size, cond);
  }
  if (wb.focus_view == title_) ImGui::SetNextWindowFocus();
  figure_marked_ = false;
  if (ImGui::Begin(title_.c_str(), &open_, windowFlags())) drawContent(wb);
  last_pos_ = ImGui::GetWindowPos();
  last_size_ = ImGui::GetWindowSize();
  if (!figure_marked_) {
    const ImVec2 min = ImGui::GetWindowContentRegionMin(), max = ImGui::GetWindowContentRegionMax();
    figure_pos_ = ImVec2(last_pos_.x + min.x, last_pos_.y + min.y);
    figure_size_ = ImVec2(max.x - min.x, max.y - min.y);
  }
  ImGui::End();
}

void View::drawNoRun(const Workbench& wb) {
  const Document& doc = wb.doc();
  if (!wb.worker_idle())
    ImGui::TextDisabled("running…");
  else if (doc.refused)
    ImGui::TextWrapped("Nothing to show: the model did not run the input (%s). Change the text in the Input view.",
                       doc.refused->reason.c_str());
  else
    ImGui::TextDisabled("no run yet: type a text in the Input view");
}

}  // namespace headlab::app
