// The window's side of the workbench: the Controller (document + commands) plus what only a window
// has — the textures of the maps on show, capture requests, layout flags, frame timings and the
// window commands (export, screenshot, show/select a view). Views read doc() and change things
// only through apply() with a named command.
#pragma once

#include "app/gui/file_dialog.h"
#include "app/gui/textures.h"
#include "app/document/controller.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

class View;

// A PNG of the whole window or of one view, made by the frame loop after rendering.
struct CaptureRequest {
  std::string path;
  std::string window;  // "" = the whole window, else a view's window title
  int scale = 1;
  bool content_only = false;  // the view's figure alone, without its title bar and controls
};

// An export waiting for the user to confirm that it may replace an existing file.
struct PendingOverwrite {
  std::string path;
  std::function<void()> write;  // the export itself; throws naming the file
  std::string kind = "export";  // the error kind a failure is shown under
};

class Workbench : public Controller {
 public:
  explicit Workbench(std::vector<std::unique_ptr<View>>& views) : views_(views) {}

  // Document commands go to the Controller; window commands are applied here. Throws like
  // Controller::execute.
  void execute(const Command& command);
  // The same, with a failure shown in the status bar.
  void apply(const Command& command);

  // Picks up worker results and counts frames since the last change (UI thread, once per frame).
  void poll();
  // True when nothing is running or queued and the latest result has been on screen a few frames.
  bool settled() const { return idle() && frames_since_change >= 3 && captures.empty(); }
  // Syncs the textures of the attention/stage on show; called by views that draw maps.
  void sync_textures();
  View* find_view(const std::string& title) const;
  // Opens the views of the session's workspace and closes the others when it changed (new layout).
  void sync_workspace();

  HeadTextures textures;
  std::vector<CaptureRequest> captures;
  bool export_figure_only = false;  // the Export popups' "figure only" choice
  std::optional<PendingOverwrite> pending_overwrite;  // asked about by draw_overwrite_prompt
  FileDialog file_dialog;        // where an export or a session goes (app/gui/file_dialog.h)
  std::string dialog_answer;     // a script's press of a dialog button (answer_dialog), taken when drawn
  std::string focus_view;        // a view to bring to the front this frame (select_view)
  bool apply_layout = false;     // views re-read their position from the ImGui ini this frame
  bool reset_layout = false;     // views take their default rectangles this frame
  bool quit = false;
  // Quitting (File ▸ Quit, the window's close button) while the user's own work runs asks first: the
  // work a quit would stop (app/tasks/quit_check.h), while the window asks (app/gui/quit_prompt.h).
  // A script's quit does not ask.
  void request_quit();
  std::vector<std::string> quit_question;
  int wait_frames = 0;           // a script's wait_frames
  std::optional<cmd::SetMapView> map_view;  // a script's set_map_view, taken by the attention map
  std::optional<cmd::SetHeadView> head_view;  // a script's set_head_view, taken by the head view
  int frames_since_change = 0;
  double upload_ms = 0;          // last texture sync
  double frame_ms = 0;
  // Live latencies: a run requested → its maps uploaded as textures (ms), for HEADLAB_FRAME_STATS.
  std::vector<double> latencies;

 protected:
  WindowState window_for_save() const override;
  void restore_window(const WindowState& window) override;

 private:
  void execute_window_command(const Command& command);
  std::vector<std::unique_ptr<View>>& views_;
  uint64_t synced_generation_ = 0;
  std::string shown_workspace_;
};

// The window title of a view by the names scripts use ("attention_map" → "Attention map").
std::string window_of(const std::string& view);

}  // namespace headlab::app
