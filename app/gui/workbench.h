// The one object every view shares: the session (every user choice), the worker and its latest
// results, the textures of the maps on show, and the requests views make of the frame loop
// (export a view, take a screenshot). No view keeps state of its own that a session should hold.
#pragma once

#include "app/engine/workbench_engine.h"
#include "app/gui/textures.h"
#include "app/state/session.h"
#include "app/state/worker.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace headlab::app {

// A PNG of the whole window or of one view, made by the frame loop after rendering.
struct CaptureRequest {
  std::string path;
  std::string window;  // "" = the whole window, else a view's window title
  int scale = 1;
};

class Workbench {
 public:
  Workbench();

  SessionState session;
  WorkbenchWorker worker;
  std::shared_ptr<const ModelSummary> model;
  std::shared_ptr<const RunSnapshot> snapshot;
  HeadTextures textures;
  std::string banner;            // shown above everything ("random weights — no trained model found")
  std::vector<std::string> notices;  // messages for the user (session warnings …), newest last
  std::string last_error;
  std::vector<CaptureRequest> captures;
  bool apply_layout = false;     // views re-read their position from the ImGui ini this frame
  bool reset_layout = false;     // views take their default rectangles this frame
  bool quit = false;
  bool pending_model_run = false;  // run the session's text once the model being loaded arrives
  int frames_since_change = 0;
  double upload_ms = 0;          // last texture sync
  double frame_ms = 0;
  // Live latencies: a run requested → its maps uploaded as textures (ms), for HEADLAB_FRAME_STATS.
  std::vector<double> latencies;
  std::string assets_dir;

  // Start-up: a session file, else a model folder, else the newest assets/models folder, else a
  // random-weight model with a banner.
  void start(const std::string& model_folder, const std::string& session_path);
  // Picks up the worker's results (UI thread, once per frame before the views).
  void poll();
  void open_model(const std::string& folder);
  void open_random_model();
  void request_run();
  void controls_changed() { request_run(); }
  void save_session(const std::string& path);
  void open_session(const std::string& path);
  void autosave_if_due();
  void notice(const std::string& text);
  // True when nothing is running or queued and the latest run has been on screen for a few frames.
  bool settled() const;
  // Syncs the textures of the attention/stage on show; called by views that draw maps.
  void sync_textures();

 private:
  void apply_loaded_session(SessionLoad loaded, const std::string& path);
  std::chrono::steady_clock::time_point last_autosave_;
  std::chrono::steady_clock::time_point requested_at_;
  bool latency_pending_ = false;
  uint64_t synced_generation_ = 0;
  uint64_t model_serial_ = 0;
  uint64_t error_serial_ = 0;
  std::string expected_hash_;
  bool loading_session_ = false;
};

}  // namespace headlab::app
