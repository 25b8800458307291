// Base class of every view: it owns ImGui::Begin/End (so no view can unbalance them) and the
// window's default rectangle; a view implements drawContent().
#pragma once

#include "app/document/window_state.h"

#include <imgui.h>

#include <cstdint>
#include <string>

namespace headlab::app {

class Workbench;
class View;

// Whether the workspace `workspace` opens `view` (its own views and those on every workspace, not
// the ones opened on demand).
bool opens_with_workspace(const View& view, const std::string& workspace);

class View {
 public:
  // Analysis views start closed (View menu, or a script's select_view, opens them).
  explicit View(std::string title, bool open = true) : title_(std::move(title)), open_(open) {}
  virtual ~View() = default;

  void draw(Workbench& wb);
  const std::string& title() const { return title_; }
  bool& open() { return open_; }
  bool is_open() const { return open_; }
  // The window's rectangle last frame (screen coordinates), for exports.
  ImVec2 last_pos() const { return last_pos_; }
  ImVec2 last_size() const { return last_size_; }
  // The figure alone (no title bar, no controls), for "figure only" PNG exports: what the view
  // marked with markFigure this frame, else the window's content region.
  ImVec2 figure_pos() const { return figure_pos_; }
  ImVec2 figure_size() const { return figure_size_; }

  // Starts an export task writing the view's figure or table to `path` when the view offers its extension
  // (exportFormats); false otherwise. Throws naming the path when there is nothing to write.
  virtual bool exportFile(Workbench& /*wb*/, const std::string& /*path*/) { return false; }
  // The workspace the view belongs to ("Explore", "Analyse"); "" = always on screen (the status bar).
  virtual std::string workspace() const { return "Explore"; }
  // Opened only on demand (View menu, a script's select_view): a workspace switch leaves it closed,
  // so it never covers the workspace's own layout.
  virtual bool onDemand() const { return false; }
  // The extensions exportFile takes, for messages (".svg, .pdf"); "" = PNG only.
  virtual std::string exportFormats() const { return ""; }
  // What a session keeps of the view itself (the Attention map's zoom, the Head view's hidden heads).
  virtual void keep_state(WindowState& /*window*/) const {}
  // A loaded session's state of the view, applied once the session's own input has run: on the
  // first snapshot newer than `after_generation`.
  virtual void restore_state(const WindowState& /*window*/, uint64_t /*after_generation*/) {}

 protected:
  virtual void drawContent(Workbench& wb) = 0;
  // Default placement as fractions of the work area (x, y, w, h).
  virtual ImVec4 defaultRect() const = 0;
  virtual ImGuiWindowFlags windowFlags() const { return 0; }
  // Marks the screen rectangle of the view's figure (its plot, map or table) this frame.
  void markFigure(ImVec2 min, ImVec2 max) {
    figure_pos_ = min, figure_size_ = ImVec2(max.x - min.x, max.y - min.y), figure_marked_ = true;
  }
  // Pinned views (the status bar) take their rectangle every frame.
  virtual bool pinned() const { return false; }
  // What a view of a run shows while there is none: "running…" while the model runs, else why not
  // (the model did not take the input, or nothing has run yet) — never a "running…" that never ends.
  static void drawNoRun(const Workbench& wb);

 public:
  // Height reserved at the bottom of the window for the status bar.
  static float statusBarHeight();

 private:
  std::string title_;
  bool open_;
  ImVec2 last_pos_, last_size_;
  ImVec2 figure_pos_, figure_size_;
  bool figure_marked_ = false;
};

}  // namespace headlab::app
