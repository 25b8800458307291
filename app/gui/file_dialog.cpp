#include "app/gui/file_dialog.h"

#include "app/gui/workbench.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool wanted(const std::string& name, const std::vector<std::string>& extensions) {
  if (extensions.empty()) return true;
  const std::string ext = lower(fs::path(name).extension().string());
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

}  // namespace

void FileDialog::open(FileChoice choice) {
  choice_ = std::move(choice);
  std::error_code ec;
  const fs::path p = fs::absolute(choice_.path.empty() ? fs::path(".") : fs::path(choice_.path), ec).lexically_normal();
  if (choice_.mode == FileChoice::Mode::Folder || fs::is_directory(p, ec)) {
    folder_ = p.string();
    name_.clear();
    if (choice_.mode == FileChoice::Mode::Folder && !fs::is_directory(p, ec)) {
      folder_ = p.parent_path().string();
      name_ = p.filename().string();
    }
  } else {
    folder_ = p.parent_path().string();
    name_ = p.filename().string();
  }
  listed_.clear();
  open_ = opening_ = true;
}

void FileDialog::list(const std::string& folder) {
  listed_ = folder;
  entries_.clear();
  list_error_.clear();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, fs::directory_options::skip_permission_denied, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code ec2;
    const bool dir = e.is_directory(ec2);
    if (dir || (choice_.mode != FileChoice::Mode::Folder && wanted(name, choice_.extensions))) entries_.push_back({name, dir});
  }
  if (ec) list_error_ = folder + ": " + ec.message();
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.folder != b.folder ? a.folder : a.name < b.name;
  });
}

void FileDialog::draw(Workbench& wb) {
  const char* id = "Choose a file###file_dialog";
  if (opening_) {
    ImGui::OpenPopup(id);
    opening_ = false;
  }
  if (!open_) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowSize(ImVec2(std::min(vp->WorkSize.x * 0.8f, ImGui::GetFontSize() * 46),
                                  std::min(vp->WorkSize.y * 0.8f, ImGui::GetFontSize() * 30)),
                           ImGuiCond_Appearing);
  ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x / 2, vp->WorkPos.y + vp->WorkSize.y / 2), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
  bool keep = true;
  if (!ImGui::BeginPopupModal(id, &keep)) {
    open_ = false;
    return;
  }
  if (listed_ != folder_) list(folder_);
  ImGui::TextUnformatted(choice_.title.c_str());
  ImGui::TextDisabled("folder");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  std::string folder_edit = folder_;
  if (ImGui::InputText("##folder", &folder_edit, ImGuiInputTextFlags_EnterReturnsTrue)) {
    std::error_code ec;
    if (fs::is_directory(folder_edit, ec)) folder_ = fs::absolute(folder_edit, ec).lexically_normal().string();
  }
  const float footer = ImGui::GetFrameHeightWithSpacing() * 2.4f;
  ImGui::BeginChild("entries", ImVec2(0, -footer), true);
  if (ImGui::Selectable("..")) folder_ = fs::path(folder_).parent_path().string();
  for (const auto& e : entries_) {
    const std::string label = (e.folder ? "[folder] " : "") + e.name;
    if (ImGui::Selectable(label.c_str(), !e.folder && e.name == name_, ImGuiSelectableFlags_AllowDoubleClick)) {
      if (e.folder)
        folder_ = (fs::path(folder_) / e.name).string();
      else
        name_ = e.name;
    }
  }
  if (!list_error_.empty()) ImGui::TextDisabled("%s", list_error_.c_str());
  ImGui::EndChild();
  bool go = false;
  if (choice_.mode != FileChoice::Mode::Folder) {
    ImGui::TextDisabled(choice_.mode == FileChoice::Mode::Save ? "save as" : "file");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 10);
    go = ImGui::InputText("##name", &name_, ImGuiInputTextFlags_EnterReturnsTrue);
  } else {
    ImGui::TextDisabled("into the folder shown above%s%s", name_.empty() ? "" : ", new folder ", name_.c_str());
  }
  ImGui::SameLine();
  const char* button = choice_.mode == FileChoice::Mode::Save ? "Save" : choice_.mode == FileChoice::Mode::Open ? "Open" : "Choose";
  go |= ImGui::Button(button);
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape));
  if (!choice_.extensions.empty() && choice_.mode != FileChoice::Mode::Folder) {
    std::string kinds;
    for (const auto& e : choice_.extensions) kinds += (kinds.empty() ? "" : ", ") + e;
    ImGui::TextDisabled("%s", kinds.c_str());
  }
  if (go && (choice_.mode == FileChoice::Mode::Folder || !name_.empty())) {
    std::string name = name_;
    if (choice_.mode == FileChoice::Mode::Save && !choice_.extensions.empty() && fs::path(name).extension().empty())
      name += choice_.extensions.front();
    const std::string path = name.empty() ? folder_ : (fs::path(folder_) / name).string();
    open_ = false;
    ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    try {
      choice_.accept(path);
    } catch (const std::exception& e) {
      wb.set_error(choice_.error_kind, e.what());
    }
    return;
  }
  if (cancel || !keep) {
    open_ = false;
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace headlab::app
