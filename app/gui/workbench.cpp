#include "app/gui/workbench.h"

#include "app/gui/export_actions.h"
#include "app/gui/view.h"
#include "app/layout/colormap.h"
#include "app/tasks/quit_check.h"

#include <imgui.h>

#include <filesystem>

namespace headlab::app {

std::string window_of(const std::string& view) {
  if (view == "attention-map" || view == "attention_map") return "Attention map";
  if (view == "heads-grid" || view == "heads_grid") return "Heads grid";
  if (view == "head-view" || view == "head_view") return "Head view";
  if (view == "head-table" || view == "head_table") return "Head table";
  if (view == "head-detail" || view == "head_detail") return "Head detail";
  if (view == "dataset") return "Dataset";
  if (view == "relevance") return "Relevance";
  if (view == "syntax") return "Syntax";
  if (view == "spectra") return "Spectra";
  if (view == "window" || view.empty()) return "";
  return view;
}

View* Workbench::find_view(const std::string& title) const {
  for (const auto& v : views_)
    if (v->title() == title) return v.get();
  return nullptr;
}

void Workbench::apply(const Command& command) {
  try {
    execute(command);
  } catch (const std::exception& e) {
    set_error(command_name(command), command_name(command) + ": " + e.what());
  }
}

void Workbench::execute(const Command& command) {
  frames_since_change = 0;
  if (!is_window_command(command)) {
    Controller::execute(command);
    return;
  }
  execute_window_command(command);
  if (!std::holds_alternative<cmd::ExpectError>(command)) clear_error(command_name(command));
}

void Workbench::execute_window_command(const Command& command) {
  auto view_of = [&](const std::string& name) {
    View* v = find_view(window_of(name));
    if (!v) throw std::runtime_error("no view '" + name + "'");
    return v;
  };
  // A script says "overwrite", or "ask" and then answers the window's "Replace file?" (answer_dialog).
  auto refuse_existing = [](const std::string& path, bool overwrite) {
    std::error_code ec;
    if (!overwrite && std::filesystem::exists(path, ec))
      throw std::runtime_error(path + " exists; add \"overwrite\": true to replace it");
  };
  if (const auto* c = std::get_if<cmd::Export>(&command)) {
    if (c->ask && !c->overwrite) {
      const cmd::Export e = *c;
      export_or_ask(*this, e.path, [this, e] { export_view(*this, e.view, e.path, e.scale, e.figure_only); });
    } else {
      refuse_existing(c->path, c->overwrite);
      export_view(*this, c->view, c->path, c->scale, c->figure_only);
    }
  } else if (const auto* c = std::get_if<cmd::AnswerDialog>(&command)) {
    if (!pending_overwrite) throw std::runtime_error("no dialog is open to answer '" + c->button + "'");
    if (c->button != "Replace" && c->button != "Cancel")
      throw std::runtime_error("the \"Replace file?\" dialog has no button '" + c->button + "' (Replace, Cancel)");
    dialog_answer = c->button;
  } else if (const auto* c = std::get_if<cmd::Screenshot>(&command)) {
    refuse_existing(c->path, c->overwrite);
    captures.push_back({c->path, "", c->scale});
  } else if (const auto* c = std::get_if<cmd::ShowView>(&command)) {
    view_of(c->view)->open() = c->open;
  } else if (const auto* c = std::get_if<cmd::SelectView>(&command)) {
    View* v = view_of(c->view);
    // A view of the other workspace brings its workspace along.
    if (!v->workspace().empty() && v->workspace() != doc().session.view.workspace) {
      cmd::SetView change;
      change.workspace = v->workspace();
      Controller::execute(change);
      sync_workspace();
    }
    v->open() = true;
    focus_view = v->title();
  } else if (const auto* c = std::get_if<cmd::SetMapView>(&command)) {
    if (!(c->zoom >= 1)) throw std::runtime_error("zoom must be at least 1 (the whole map)");
    map_view = *c;
  } else if (const auto* c = std::get_if<cmd::SetHeadView>(&command)) {
    const AttentionSummary* att = doc().model ? doc().model->find(doc().session.selection.stack) : nullptr;
    const int heads = att ? att->heads(Stage::U) : 0;
    for (const int h : c->hidden)
      if (h < 0 || (att && h >= heads))
        throw std::runtime_error("the model has no head " + std::to_string(h) + " (heads 0–" + std::to_string(heads - 1) + ")");
    head_view = *c;
  } else if (const auto* c = std::get_if<cmd::WaitFrames>(&command)) {
    wait_frames = c->frames;
  } else if (std::holds_alternative<cmd::Quit>(command)) {
    quit = true;
  }
}

void Workbench::request_quit() {
  quit_question = work_stopped_by_quit(tasks().active());
  if (quit_question.empty()) quit = true;
}

void Workbench::sync_workspace() {
  const std::string& ws = doc().session.view.workspace;
  if (ws == shown_workspace_) return;
  shown_workspace_ = ws;
  for (auto& v : views_) v->open() = opens_with_workspace(*v, ws);
  if (!apply_layout) reset_layout = true;
}

void Workbench::poll() {
  ++frames_since_change;
  sync_workspace();
  if (Controller::poll()) {
    frames_since_change = 0;
    if (!doc().model) textures.clear();
  }
}

void Workbench::sync_textures() {
  const auto& snapshot = doc().snapshot;
  if (!snapshot) return;
  const auto& s = doc().session;
  MapStyle style;
  style.colormap = colormap_from_name(s.view.colormap);
  style.log_scale = s.view.log_scale;
  style.auto_range = s.view.auto_range;
  if (textures.sync(snapshot->find(s.selection.stack), s.selection.stage, style) > 0) upload_ms = textures.last_upload_ms();
  if (snapshot->generation != synced_generation_) {
    synced_generation_ = snapshot->generation;
    if (auto requested = take_unshown_request())
      latencies.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - *requested).count());
  }
}

WindowState Workbench::window_for_save() const {
  WindowState window;
  window.imgui_ini = ImGui::SaveIniSettingsToMemory();
  const std::string& ws = doc().session.view.workspace;
  for (const auto& v : views_) {
    const bool by_workspace = opens_with_workspace(*v, ws);
    if (v->is_open() && !by_workspace) window.opened.push_back(v->title());
    if (!v->is_open() && by_workspace) window.closed.push_back(v->title());
    v->keep_state(window);
  }
  return window;
}

void Workbench::restore_window(const WindowState& window) {
  if (!window.imgui_ini.empty()) {
    ImGui::LoadIniSettingsFromMemory(window.imgui_ini.c_str(), window.imgui_ini.size());
    apply_layout = true;
  }
  // The session's workspace with the views it had open: a session without places takes the
  // workspace's default places when the workspace changes.
  const std::string& ws = doc().session.view.workspace;
  if (ws != shown_workspace_ && !apply_layout) reset_layout = true;
  shown_workspace_ = ws;
  for (auto& v : views_) v->open() = opens_with_workspace(*v, ws);
  auto set_open = [&](const std::vector<std::string>& titles, bool open, const char* key) {
    for (const auto& title : titles) {
      if (View* v = find_view(title))
        v->open() = open;
      else
        notice(std::string("Session: layout.") + key + ": no view '" + title + "' (ignored)");
    }
  };
  set_open(window.opened, true, "opened");
  set_open(window.closed, false, "closed");
  const uint64_t after = doc().snapshot ? doc().snapshot->generation : 0;
  for (auto& v : views_) v->restore_state(window, after);
}

}  // namespace headlab::app
