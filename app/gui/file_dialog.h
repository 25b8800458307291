// The window's file chooser, in the style of the Model view's folder browser: a path field, the
// folder's sub-folders and its files of the wanted kinds, ".." and one action button. Exports,
// sessions and the head report choose their file (or folder) through it; a modal, one at a time.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace headlab::app {

class Workbench;

struct FileChoice {
  enum class Mode { Save, Open, Folder };
  std::string title;                    // "Export the attention map"
  std::string path;                     // the file (or folder) proposed
  std::vector<std::string> extensions;  // ".svg", ".pdf" …; the first is added to a name without one; empty = any
  Mode mode = Mode::Save;
  // Called with the chosen path when the user confirms; a throw is shown as the window's error of
  // `error_kind`. Saving over an existing file asks first (the caller uses export_or_ask).
  std::function<void(const std::string& path)> accept;
  std::string error_kind = "export";
};

class FileDialog {
 public:
  void open(FileChoice choice);
  bool is_open() const { return open_; }
  // The dialog, once a frame after the views.
  void draw(Workbench& wb);

 private:
  void list(const std::string& folder);
  FileChoice choice_;
  bool open_ = false, opening_ = false;
  std::string folder_, name_, listed_;
  struct Entry {
    std::string name;
    bool folder = false;
  };
  std::vector<Entry> entries_;
  std::string list_error_;
};

}  // namespace headlab::app
