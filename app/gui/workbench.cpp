#include "app/gui/workbench.h"

#include "app/state/run_mapping.h"

#include <imgui.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {

Workbench::Workbench() : last_autosave_(std::chrono::steady_clock::now()) {
  assets_dir = find_assets_dir();
  session.recent_folders = load_recent_folders();
}

void Workbench::notice(const std::string& text) { notices.push_back(text); }

void Workbench::start(const std::string& model_folder, const std::string& session_path) {
  if (!session_path.empty()) {
    try {
      apply_loaded_session(load_session_file(session_path), session_path);
      return;
    } catch (const std::exception& e) {
      last_error = e.what();
      notice(std::string("Could not open the session: ") + e.what());
    }
  }
  if (!model_folder.empty()) {
    open_model(model_folder);
    return;
  }
  const std::string found = find_default_model(assets_dir);
  if (!found.empty())
    open_model(found);
  else
    open_random_model();
}

void Workbench::open_model(const std::string& folder) {
  banner.clear();
  worker.request_load({folder, "", 0});
  pending_model_run = true;
}

void Workbench::open_random_model() {
  const std::string config = session.random_config.empty() ? (fs::path(assets_dir) / "configs" / "mha.json").string()
                                                            : session.random_config;
  banner = "random weights — no trained model found";
  worker.request_load({"", config, 0});
  pending_model_run = true;
}

void Workbench::request_run() {
  if (!model) return;
  worker.request_run(make_run_input(session));
  frames_since_change = 0;
  requested_at_ = std::chrono::steady_clock::now();
  latency_pending_ = true;
}

void Workbench::poll() {
  ++frames_since_change;
  const uint64_t serial = worker.model_serial();
  if (serial != model_serial_) {
    model_serial_ = serial;
    model = worker.model();
    snapshot.reset();
    textures.clear();
    if (model) {
      const bool same_model = session.model_folder == model->folder;
      if (!model->folder.empty() && !expected_hash_.empty() && model->weights_hash != expected_hash_)
        notice("The weights in " + model->folder + " changed since the session was saved (hash " + expected_hash_ +
               " → " + model->weights_hash + "): the controls were kept.");
      expected_hash_.clear();
      session.model_folder = model->folder;
      session.model_hash = model->weights_hash;
      if (model->random_weights) {
        banner = "random weights — no trained model found";
      } else {
        banner.clear();
        remember_folder(session.recent_folders, model->folder);
        try {
          save_recent_folders(session.recent_folders);
        } catch (const std::exception&) {
          // A read-only state folder only costs the recent list.
        }
      }
      if (session.text.empty()) session.text = demo_text(*model);
      // A session keeps its controls; a different model opened by hand starts from the defaults.
      if (!same_model && !loading_session_) session.controls = {};
      loading_session_ = false;
      const std::string dropped = fit_controls(session.controls, *model);
      if (!dropped.empty()) notice("Controls that do not fit " + model->name + " were dropped: " + dropped + ".");
      clamp_selection(session.selection, *model, nullptr);
      pending_model_run = false;
      request_run();
    }
    frames_since_change = 0;
  }
  auto snap = worker.snapshot();
  if (snap != snapshot) {
    snapshot = snap;
    if (model && snapshot) clamp_selection(session.selection, *model, snapshot.get());
    frames_since_change = 0;
  }
  const TaskStatus status = worker.status();
  if (status.error_serial != error_serial_) {
    error_serial_ = status.error_serial;
    last_error = status.error;
    // A failed load with nothing loaded yet: never a blank screen.
    if (!model && status.error.rfind("loading ", 0) == 0 && banner.empty()) {
      notice(status.error + " — opening a random-weight model instead.");
      open_random_model();
    }
  }
}

void Workbench::sync_textures() {
  if (!snapshot) return;
  MapStyle style;
  style.colormap = colormap_from_name(session.view.colormap);
  style.log_scale = session.view.log_scale;
  style.fixed_range = session.view.fixed_range;
  if (textures.sync(snapshot->find(session.selection.stack), session.selection.stage, style) > 0)
    upload_ms = textures.last_upload_ms();
  if (snapshot->generation != synced_generation_) {
    synced_generation_ = snapshot->generation;
    if (latency_pending_ && worker.idle()) {
      latencies.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - requested_at_).count());
      latency_pending_ = false;
    }
  }
}

bool Workbench::settled() const {
  return worker.idle() && model && snapshot && frames_since_change >= 3;
}

void Workbench::save_session(const std::string& path) {
  session.imgui_ini = ImGui::SaveIniSettingsToMemory();
  save_session_file(path, session);
}

void Workbench::open_session(const std::string& path) {
  apply_loaded_session(load_session_file(path), path);
}

void Workbench::apply_loaded_session(SessionLoad loaded, const std::string& path) {
  for (const auto& w : loaded.warnings) notice("Session " + path + ": " + w);
  auto recent = session.recent_folders;
  session = std::move(loaded.state);
  session.recent_folders = recent;
  if (!session.imgui_ini.empty()) {
    ImGui::LoadIniSettingsFromMemory(session.imgui_ini.c_str(), session.imgui_ini.size());
    apply_layout = true;
  }
  std::error_code ec;
  if (!session.model_folder.empty() && !fs::is_directory(session.model_folder, ec)) {
    notice("Session " + path + ": the model folder " + session.model_folder +
           " is gone — kept the text, controls and view; opened another model.");
    const std::string found = find_default_model(assets_dir);
    expected_hash_.clear();
    loading_session_ = true;
    if (!found.empty()) {
      open_model(found);
    } else {
      open_random_model();
    }
    return;
  }
  expected_hash_ = session.model_hash;
  loading_session_ = true;
  if (session.model_folder.empty())
    open_random_model();
  else
    open_model(session.model_folder);
}

void Workbench::autosave_if_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_autosave_ < std::chrono::seconds(60)) return;
  last_autosave_ = now;
  try {
    save_session(autosave_path());
  } catch (const std::exception& e) {
    last_error = std::string("autosave: ") + e.what();
  }
}

}  // namespace headlab::app
