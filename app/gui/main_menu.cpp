#include "app/gui/main_menu.h"

#include "app/gui/export_actions.h"
#include "app/gui/view.h"
#include "app/gui/workbench.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {

void MainMenu::draw(Workbench& wb, std::vector<std::unique_ptr<View>>& views) {
  bool& open_prompt = open_prompt_;
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Open session…")) prompt_ = "open", open_prompt = true;
      if (ImGui::MenuItem("Save session", nullptr, false, true)) {
        if (session_path_.empty()) {
          prompt_ = "save", open_prompt = true;
        } else {
          try {
            wb.execute(cmd::SaveSession{session_path_});
            wb.notice("saved " + session_path_);
          } catch (const std::exception& e) {
            wb.set_error(e.what());
          }
        }
      }
      if (ImGui::MenuItem("Save session as…")) prompt_ = "save", open_prompt = true;
      ImGui::Separator();
      if (ImGui::BeginMenu("Export")) {
        for (const char* figure : {"attention-map", "heads-grid", "head-view"})
          for (const char* ext : {"svg", "pdf"}) {
            const std::string path = default_export_path(wb, figure, ext);
            if (ImGui::MenuItem(path.c_str())) {
              export_or_ask(wb, path, [&wb, figure = std::string(figure), path] {
                export_figure(wb, figure, "", path, 1);
                wb.notice("exported " + path);
              });
            }
          }
        ImGui::Separator();
        // The files `headlab analyze` writes, from the report on screen.
        const std::string report_path = (fs::path(wb.doc().session.view.export_dir.empty() ? "." : wb.doc().session.view.export_dir) /
                                         "head_report" / "head_report.json").string();
        if (ImGui::MenuItem("Head report (JSON, CSV, Markdown, figures)", nullptr, false, wb.doc().report != nullptr)) {
          export_or_ask(wb, report_path, [&wb, report_path] {
            export_view(wb, "Dataset", report_path, 1);
            wb.notice("exported " + fs::path(report_path).parent_path().string() + "/");
          });
        }
        if (ImGui::MenuItem("Whole window (PNG)"))
          export_or_ask(wb, "headlab-window.png",
                        [&wb] { wb.captures.push_back({"headlab-window.png", "", wb.doc().session.view.export_scale}); });
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit")) wb.quit = true;
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      for (auto& v : views) ImGui::MenuItem(v->title().c_str(), nullptr, &v->open());
      ImGui::Separator();
      const auto& view = wb.doc().session.view;
      cmd::SetView v;
      if (ImGui::MenuItem("Log scale", nullptr, view.log_scale)) v.log_scale = !view.log_scale;
      if (ImGui::MenuItem("Weights over 0–1", nullptr, view.fixed_range)) v.fixed_range = !view.fixed_range;
      if (v.log_scale || v.fixed_range) wb.apply(v);
      if (ImGui::BeginMenu("Colormap")) {
        for (const char* name : {"viridis", "gray"})
          if (ImGui::MenuItem(name, nullptr, view.colormap == name)) {
            cmd::SetView c;
            c.colormap = name;
            wb.apply(c);
          }
        ImGui::EndMenu();
      }
      if (ImGui::MenuItem("Reset layout")) wb.reset_layout = true;
      ImGui::Separator();
      for (const char* ws : {"Explore", "Analyse"})
        if (ImGui::MenuItem((std::string("Workspace: ") + ws).c_str(), nullptr, view.workspace == ws)) {
          cmd::SetView c;
          c.workspace = ws;
          wb.apply(c);
        }
      ImGui::EndMenu();
    }
    // The two workspaces, one click away.
    ImGui::TextDisabled("|");
    for (const char* ws : {"Explore", "Analyse"}) {
      const bool current = wb.doc().session.view.workspace == ws;
      if (current) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.85f, 0.3f, 1.0f));
      if (ImGui::MenuItem(ws) && !current) {
        cmd::SetView c;
        c.workspace = ws;
        wb.apply(c);
      }
      if (current) ImGui::PopStyleColor();
    }
    ImGui::TextDisabled("|");
    if (wb.doc().model) {
      ImGui::TextDisabled("  %s", wb.doc().model->name.c_str());
    }
    if (!wb.doc().banner.empty()) {
      ImGui::SameLine(0, 30);
      ImGui::TextColored(ImVec4(1.0f, 0.6f, 0.2f, 1.0f), "%s", wb.doc().banner.c_str());
    }
    ImGui::EndMainMenuBar();
  }
}

void MainMenu::drawOverlays(Workbench& wb) {
  ++frames_;
  if (open_prompt_) {
    open_prompt_ = false;
    path_input_ = session_path_.empty() ? (fs::current_path() / "headlab-session.json").string() : session_path_;
    ImGui::OpenPopup("Session file");
  }
  drawPrompts(wb);
  drawMessages(wb);
  if (frames_ > 2) drawRecovery(wb);
}

void MainMenu::drawPrompts(Workbench& wb) {
  if (!ImGui::BeginPopupModal("Session file", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted(prompt_ == "save" ? "Save the session to:" : "Open the session:");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30);
  const bool enter = ImGui::InputText("##path", &path_input_, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ImGui::Button(prompt_ == "save" ? "Save" : "Open") || enter) {
    try {
      if (prompt_ == "save") {
        const std::string path = path_input_;
        auto save = [this, &wb, path] {
          wb.execute(cmd::SaveSession{path});
          wb.notice("saved " + path);
          session_path_ = path;
        };
        // Saving again to the session's own file just saves; another existing file is replaced
        // only once the user says so.
        if (path == session_path_) save();
        else export_or_ask(wb, path, save);
      } else {
        wb.execute(cmd::OpenSession{path_input_});
        session_path_ = path_input_;
      }
    } catch (const std::exception& e) {
      wb.set_error(e.what());
    }
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void MainMenu::drawMessages(Workbench& wb) {
  if (wb.doc().notices.empty()) return;
  // Plain confirmations ("saved …") go to the status line; anything else asks to be read.
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + 40), ImGuiCond_Always, ImVec2(0.5f, 0));
  ImGui::SetNextWindowBgAlpha(0.92f);
  ImGui::Begin("Messages", nullptr, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoCollapse);
  for (const auto& n : wb.doc().notices) ImGui::BulletText("%s", n.c_str());
  if (ImGui::Button("OK")) wb.clear_notices();
  ImGui::End();
}

void MainMenu::drawRecovery(Workbench& wb) {
  if (recover_.empty()) return;
  if (!ImGui::IsPopupOpen("Recover session")) ImGui::OpenPopup("Recover session");
  if (!ImGui::BeginPopupModal("Recover session", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted("HeadLab did not exit cleanly last time.");
  ImGui::Text("Recover the autosaved session (%s)?", recover_.c_str());
  if (ImGui::Button("Recover")) {
    try {
      wb.execute(cmd::OpenSession{recover_});
    } catch (const std::exception& e) {
      wb.set_error(e.what());
    }
    recover_.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Discard")) {
    std::error_code ec;
    fs::remove(recover_, ec);
    recover_.clear();
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace headlab::app
