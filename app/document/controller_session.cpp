// The controller's sessions: saving, opening (with the warnings a session file brings), and the
// autosave that crash recovery reads.
#include "app/document/controller.h"

#include "core/file_hash.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace headlab::app {

void Controller::on(const cmd::SaveSession& c) {
  save_session(c.path);
}

void Controller::on(const cmd::OpenSession& c) {
  open_session(c.path);
}

// ---- sessions ----
void Controller::save_session(const std::string& path) {
  doc_.session.window = window_for_save();
  save_session_file(path, doc_.session);
}

void Controller::open_session(const std::string& path) { apply_loaded_session(load_session_file(path), path); }

void Controller::apply_loaded_session(SessionLoad loaded, const std::string& path) {
  for (const auto& w : loaded.warnings) notice("Session " + path + ": " + w);
  // The work of what was open goes: its results would land on the session's model and report.
  dataset_->discard();
  patching_->discard();
  generation_->discard();
  auto recent = doc_.session.recent_folders;
  doc_.session = std::move(loaded.state);
  doc_.session.recent_folders = recent;
  restore_window(doc_.session.window);
  apply_session_precision();
  restore_report_of_session();
  std::error_code ec;
  if (!doc_.session.model_folder.empty() && !fs::is_directory(doc_.session.model_folder, ec)) {
    notice("Session " + path + ": the model folder " + doc_.session.model_folder +
           " is gone — opened another model with the session's text and view; the session's gates and mixing "
           "apply where they fit it (the rest are named as dropped).");
    const std::string found = find_default_model(assets_dir_);
    expected_hash_.clear();
    loading_session_ = true;
    if (!found.empty())
      open_model(found);
    else
      open_random_model();
    return;
  }
  expected_hash_ = doc_.session.model_hash;
  loading_session_ = true;
  doc_.generation.reset();
  doc_.patching.reset();
  if (doc_.session.model_folder.empty()) {
    open_random_model();
  } else {
    open_model(doc_.session.model_folder);
    // The session's generation, written again: the same settings and seed write the same tokens.
    if (!doc_.session.generation.generated.empty())
      start_generation(doc_.session.model_folder, doc_.session.generation.generated);
    // Its patching, measured again with what it was measured with (a session from before these
    // were kept: with its text, settings and controls).
    const auto& p = doc_.session.patching;
    const bool recorded = !p.measured_settings.counterfactual.empty();
    if (p.ran && (recorded || !p.settings.counterfactual.empty())) {
      PatchingRequest r;
      r.model_folder = doc_.session.model_folder;
      r.clean_text = recorded ? p.measured_text : doc_.session.text;
      r.settings = recorded ? p.measured_settings : p.settings;
      r.controls = recorded ? p.measured_controls : doc_.session.controls;
      start_patching(std::move(r));
    }
  }
}

void Controller::autosave_if_due() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_autosave_ < std::chrono::seconds(60)) return;
  last_autosave_ = now;
  try {
    save_session(autosave_path());
  } catch (const std::exception& e) {
    set_error("autosave", std::string("autosave: ") + e.what());
  }
}

}  // namespace headlab::app
