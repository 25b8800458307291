#include "app/gui/main_menu.h"

#include "app/gui/export_actions.h"
#include "app/gui/view.h"
#include "app/gui/workbench.h"

#include <imgui.h>
#include <imgui_internal.h>  // BringWindowToDisplayFront
#include <imgui_stdlib.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {

void MainMenu::draw(Workbench& wb, std::vector<std::unique_ptr<View>>& views) {
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Open session…")) choose_session(wb, false);
      if (ImGui::MenuItem("Save session", nullptr, false, true)) {
        if (session_path_.empty()) {
          choose_session(wb, true);
        } else {
          try {
            wb.execute(cmd::SaveSession{session_path_});
            wb.notice("saved " + session_path_);
          } catch (const std::exception& e) {
            wb.set_error("save_session", e.what());
          }
        }
      }
      if (ImGui::MenuItem("Save session as…")) choose_session(wb, true);
      ImGui::Separator();
      if (ImGui::BeginMenu("Export")) {
        const std::pair<const char*, const char*> figures[] = {
            {"attention-map", "Attention map"}, {"heads-grid", "Heads grid"}, {"head-view", "Head view"}};
        for (const auto& [figure, name] : figures)
          for (const char* ext : {"svg", "pdf"}) {
            const std::string label = std::string(name) + " (" + (ext == std::string("svg") ? "SVG" : "PDF") + ")…";
            if (ImGui::MenuItem(label.c_str(), nullptr, false, wb.doc().snapshot != nullptr))
              choose_export_path(wb, "Export the " + std::string(name) + " figure", default_export_path(wb, figure, ext),
                                 std::string(".") + ext, [&wb, figure = std::string(figure)](const std::string& path) {
                                   export_figure(wb, figure, "", path, 1);  // "wrote …" once written
                                 });
          }
        ImGui::Separator();
        // The files `headlab analyze` writes, from the report on screen, into a folder of the user's choice.
        if (ImGui::MenuItem("Head report (JSON, CSV, Markdown, figures)…", nullptr, false, wb.doc().report != nullptr)) {
          FileChoice choice;
          choice.title = "Export the head report into a folder (head_report.json, .csv, .md, figures/)";
          choice.mode = FileChoice::Mode::Folder;
          choice.path = (fs::path(wb.doc().session.view.export_dir.empty() ? "." : wb.doc().session.view.export_dir) /
                         "head_report").string();
          choice.accept = [&wb](const std::string& folder) {
            const std::string report_path = (fs::path(folder) / "head_report.json").string();
            export_or_ask(wb, report_path, [&wb, report_path] {
              export_view(wb, "Dataset", report_path, 1);  // "wrote …" once written
            });
          };
          wb.file_dialog.open(std::move(choice));
        }
        if (ImGui::MenuItem("Whole window (PNG)…"))
          choose_export_path(wb, "Export the whole window as PNG",
                             (fs::path(wb.doc().session.view.export_dir.empty() ? "." : wb.doc().session.view.export_dir) /
                              "headlab-window.png").string(),
                             ".png", [&wb](const std::string& path) {
                               wb.captures.push_back({path, "", wb.doc().session.view.export_scale});
                             });
        ImGui::EndMenu();
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Quit")) wb.request_quit();
      ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
      for (auto& v : views) ImGui::MenuItem(v->title().c_str(), nullptr, &v->open());
      ImGui::Separator();
      const auto& view = wb.doc().session.view;
      cmd::SetView v;
      if (ImGui::MenuItem("Log scale", nullptr, view.log_scale)) v.log_scale = !view.log_scale;
      if (ImGui::MenuItem("Weights: each map to its own maximum", nullptr, view.auto_range)) v.auto_range = !view.auto_range;
      if (v.log_scale || v.auto_range) wb.apply(v);
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
  drawMessages(wb);
  if (frames_ > 2) drawRecovery(wb);
}

void MainMenu::choose_session(Workbench& wb, bool save) {
  FileChoice choice;
  choice.title = save ? "Save the session" : "Open a session";
  choice.mode = save ? FileChoice::Mode::Save : FileChoice::Mode::Open;
  choice.extensions = {".json"};
  choice.path = session_path_.empty() ? (fs::current_path() / "headlab-session.json").string() : session_path_;
  choice.error_kind = save ? "save_session" : "open_session";
  choice.accept = [this, &wb, save](const std::string& path) {
    if (!save) {
      wb.execute(cmd::OpenSession{path});
      session_path_ = path;
      return;
    }
    auto write = [this, &wb, path] {
      wb.execute(cmd::SaveSession{path});
      wb.notice("saved " + path);
      session_path_ = path;
    };
    // Saving again to the session's own file just saves; another existing file is replaced only
    // once the user says so.
    if (path == session_path_)
      write();
    else
      export_or_ask(wb, path, write, "save_session");
  };
  wb.file_dialog.open(std::move(choice));
}

void MainMenu::drawMessages(Workbench& wb) {
  if (wb.doc().notices.empty()) return;
  // Messages ("saved …", "exported …", session warnings) are drawn above every view, where they are
  // read, until OK; they do not take the keyboard from the view being used.
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + 40), ImGuiCond_Always, ImVec2(0.5f, 0));
  ImGui::SetNextWindowBgAlpha(0.95f);
  ImGui::SetNextWindowSizeConstraints(ImVec2(0, 0), ImVec2(vp->WorkSize.x * 0.8f, vp->WorkSize.y * 0.6f));
  ImGui::Begin("Messages", nullptr,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoCollapse |
                   ImGuiWindowFlags_NoFocusOnAppearing);
  ImGui::BringWindowToDisplayFront(ImGui::GetCurrentWindow());
  ImGui::PushTextWrapPos(vp->WorkSize.x * 0.75f);
  for (const auto& n : wb.doc().notices) ImGui::BulletText("%s", n.c_str());
  ImGui::PopTextWrapPos();
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
      wb.set_error("open_session", e.what());
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
