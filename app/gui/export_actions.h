// Exports from the window: PNG of any view at 1×/2×/4× (offscreen framebuffer, by the frame loop),
// SVG/PDF of the attention map, the heads grid and the head view (cairo), each as its view shows it.
#pragma once

#include "app/layout/map_viewport.h"

#include <functional>
#include <string>
#include <vector>

namespace headlab::app {

class Workbench;

// "PNG", "SVG", "PDF" buttons and a scale choice for `figure` ("attention-map", "heads-grid",
// "head-view"; other views get PNG only) shown in the window `window_title`.
void export_buttons(Workbench& wb, const std::string& figure, const std::string& window_title);
// The same after the previous item on its line, or on a new line when the button would not fit.
void export_buttons_same_line(Workbench& wb, const std::string& figure, const std::string& window_title);

// Writes `figure` to `path`: .svg/.pdf through cairo by the figure's view (View::exportFile, as a
// task of the window's: Controller::start_export says "wrote …" when written, an error when not) —
// and .png by queueing a capture of the window at `scale`.
// Returns the path (written, being written or queued); throws with the path when it cannot start.
std::string export_figure(Workbench& wb, const std::string& figure, const std::string& window_title,
                          const std::string& path, int scale, bool figure_only = false);

// The vector figures of the Explore views, written as tasks; each throws naming `path` when there is
// nothing to write. Maps carry the gates they were run with (app/export/shown_controls.h) and hatch
// the keys their layer forbids, as on screen.
// The selected head's map: the part `shown` ([row_begin, row_end) queries × [col_begin, col_end)
// keys; an empty range: all of it), named in a subtitle when it is not the whole map.
void export_attention_map(Workbench& wb, const std::string& path, CellRange shown);
// Every head of the selected attention and stage.
void export_heads_grid(Workbench& wb, const std::string& path);
// The selected layer's lines, without the heads `hidden` sets (hidden[h] != 0).
void export_head_view(Workbench& wb, const std::string& path, const std::vector<char>& hidden);

// Token i of `tokens` as a map labels it (token_label), with its position when `numbered`.
std::string map_label(const std::vector<std::string>& tokens, int i, bool numbered, size_t max_chars);

// A script's or the menu's export of a view by its name ("attention_map", "Head table", "window"):
// .png captures the view's window (or the whole window) at `scale`; other extensions go to the
// view's own file export (View::exportFile). Throws naming the view when it has none for `path`.
void export_view(Workbench& wb, const std::string& view, const std::string& path, int scale, bool figure_only = false);

// Runs `write` (an export to `path`; it throws naming the file, shown as the window's error of
// `kind`) now, or — when `path` already exists — once the user confirms replacing it
// (draw_overwrite_prompt). A success clears the earlier error of that kind.
void export_or_ask(Workbench& wb, const std::string& path, std::function<void()> write,
                   const std::string& kind = "export");
// Opens the file dialog on `proposed` (a file of `extension`, e.g. ".svg"); once the user chooses
// a path, remembers its folder as the session's export folder and runs `write(path)` through
// export_or_ask (asking before replacing a file).
void choose_export_path(Workbench& wb, const std::string& title, const std::string& proposed, const std::string& extension,
                        std::function<void(const std::string&)> write);
// The "Replace file?" dialog of a pending export; once a frame, outside any view.
void draw_overwrite_prompt(Workbench& wb);

// True for the extensions a view draws through cairo (.svg, .pdf, any case).
bool is_vector_path(const std::string& path);

// The model's name for figure titles ("model" before one is loaded).
std::string model_title(const Workbench& wb);

// The default path for an export: export_dir / "<model>_<figure>_<stack>_L<l>_H<h>_<stage>.<ext>".
std::string default_export_path(const Workbench& wb, const std::string& figure, const std::string& ext);

}  // namespace headlab::app
