#include "app/gui/export_actions.h"

#include "app/export/figures.h"
#include "app/export/shown_controls.h"
#include "app/gui/draw_util.h"
#include "app/gui/view.h"
#include "app/gui/workbench.h"
#include "app/document/controls_edit.h"
#include "app/document/run_mapping.h"
#include "app/layout/map_levels.h"
#include "core/map_detail.h"

#include <imgui.h>

#include <algorithm>
#include <filesystem>
#include <utility>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

std::string extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

FigureTokens labels(const RunSnapshot& s, core::Stack stack) {
  FigureTokens t;
  for (const auto& q : s.query_tokens(stack).tokens) t.queries.push_back(token_label(q, 20));
  for (const auto& k : s.key_tokens(stack).tokens) t.keys.push_back(token_label(k, 20));
  return t;
}

// Every view draws its own files (View::exportFile), as it shows them; their figure names.
const char* view_of(const std::string& figure) {
  if (figure == "attention-map") return "Attention map";
  if (figure == "heads-grid") return "Heads grid";
  if (figure == "head-view") return "Head view";
  if (figure == "head-table") return "Head table";
  if (figure == "head-detail") return "Head detail";
  if (figure == "spectra") return "Spectra";
  if (figure == "relevance") return "Relevance";
  if (figure == "syntax") return "Syntax";
  if (figure == "patching") return "Patching";
  if (figure == "circuits") return "Circuits";
  return nullptr;
}

// "attention-map" → "attention map".
std::string figure_title(std::string figure) {
  std::replace(figure.begin(), figure.end(), '-', ' ');
  return figure;
}

// The selected layer's maps of the run on show; throws naming `path` when there are none.
const AttentionMaps& shown_maps(const Workbench& wb, const std::string& path) {
  if (!wb.doc().snapshot || !wb.doc().model) throw std::runtime_error("export " + path + ": nothing has been run yet");
  const auto& sel = wb.doc().session.selection;
  const AttentionMaps* maps = wb.doc().snapshot->find(sel.stack);
  if (!maps || sel.layer >= static_cast<int>(maps->layers.size())) throw std::runtime_error("export " + path + ": no maps");
  return *maps;
}

// "12–30" (both ends included).
std::string span(int begin, int end) { return std::to_string(begin) + "–" + std::to_string(end - 1); }

}  // namespace

std::string map_label(const std::vector<std::string>& tokens, int i, bool numbered, size_t max_chars) {
  const std::string t = i < static_cast<int>(tokens.size()) ? token_label(tokens[i], max_chars) : "?";
  return numbered ? std::to_string(i) + " " + t : t;
}

void choose_export_path(Workbench& wb, const std::string& title, const std::string& proposed, const std::string& extension,
                        std::function<void(const std::string&)> write) {
  FileChoice choice;
  choice.title = title;
  choice.path = proposed;
  choice.extensions = {extension};
  choice.accept = [&wb, write](const std::string& path) {
    // The folder is remembered (the session keeps it) for the next export.
    cmd::SetView v;
    v.export_dir = fs::path(path).parent_path().string();
    if (*v.export_dir != wb.doc().session.view.export_dir) wb.apply(v);
    export_or_ask(wb, path, [write, path] { write(path); });
  };
  wb.file_dialog.open(std::move(choice));
}

bool is_vector_path(const std::string& path) {
  const std::string ext = extension(path);
  return ext == ".svg" || ext == ".pdf";
}

std::string model_title(const Workbench& wb) { return wb.doc().model ? wb.doc().model->name : "model"; }

void export_view(Workbench& wb, const std::string& view, const std::string& path, int scale, bool figure_only) {
  const std::string window = window_of(view);
  if (extension(path) == ".png") {
    if (!window.empty() && !wb.find_view(window)) throw std::runtime_error("no view '" + view + "'");
    wb.captures.push_back({path, window, scale, figure_only && !window.empty()});
    return;
  }
  View* v = window.empty() ? nullptr : wb.find_view(window);
  if (!v) throw std::runtime_error("export " + path + ": no view '" + view + "' (only .png exports the whole window)");
  if (!v->exportFile(wb, path))
    throw std::runtime_error("export " + path + ": the " + v->title() + " view writes " + v->exportFormats() + " (and .png)");
}

std::string default_export_path(const Workbench& wb, const std::string& figure, const std::string& ext) {
  const std::string name = figure_basename(wb.doc().model ? wb.doc().model->name : "model", figure, wb.doc().session.selection);
  const std::string scale = ext == "png" && wb.doc().session.view.export_scale > 1 ? "@" + std::to_string(wb.doc().session.view.export_scale) + "x" : "";
  return (fs::path(wb.doc().session.view.export_dir.empty() ? "." : wb.doc().session.view.export_dir) / (name + scale + "." + ext)).string();
}

std::string export_figure(Workbench& wb, const std::string& figure, const std::string& window_title,
                          const std::string& path, int scale, bool figure_only) {
  const std::string ext = extension(path);
  if (ext == ".png" && !window_title.empty()) {  // a screen capture of the view's window
    wb.captures.push_back({path, window_title, scale, figure_only});
    return path;
  }
  if (const char* view = view_of(figure)) {
    View* v = wb.find_view(view);
    if (!v) throw std::runtime_error("export " + path + ": no view '" + view + "'");
    if (!v->exportFile(wb, path))
      throw std::runtime_error("export " + path + ": the " + v->title() + " view writes " + v->exportFormats() + " (and .png)");
    return path;
  }
  throw std::runtime_error("export " + path + ": '" + figure + "' has no vector export (use .png)");
}

void export_attention_map(Workbench& wb, const std::string& path, CellRange shown) {
  const AttentionMaps& maps = shown_maps(wb, path);
  const auto& sel = wb.doc().session.selection;
  const LayerMaps& lm = maps.layers[sel.layer];
  const StageMaps& sm = lm.stages[static_cast<int>(sel.stage)];
  if (sm.empty() || sel.head >= sm.heads) throw std::runtime_error("export " + path + ": stage not captured");
  if (sm.pooled()) throw std::runtime_error("export " + path + ": layer " + std::to_string(sel.layer) + "'s whole maps are still being computed");
  // The part shown, within the map (an empty range: all of it).
  if (shown.row_end <= shown.row_begin || shown.col_end <= shown.col_begin) shown = {0, sm.rows, 0, sm.cols};
  shown.row_begin = std::clamp(shown.row_begin, 0, sm.rows - 1), shown.row_end = std::clamp(shown.row_end, shown.row_begin + 1, sm.rows);
  shown.col_begin = std::clamp(shown.col_begin, 0, sm.cols - 1), shown.col_end = std::clamp(shown.col_end, shown.col_begin + 1, sm.cols);
  const int rows = shown.row_end - shown.row_begin, cols = shown.col_end - shown.col_begin;
  const bool logits = sel.stage == Stage::J || sel.stage == Stage::L;
  const float* head = sm.head(sel.head);
  // The colours of the whole map, as on screen: its range is the map's, not the part's.
  const MapRange range = map_range(head, static_cast<size_t>(sm.rows) * sm.cols, logits, wb.doc().session.view.log_scale,
                                   !wb.doc().session.view.auto_range);
  // The part's cells, its forbidden keys and its rows' sink shares, copied for the task.
  auto part = std::make_shared<std::vector<float>>();
  auto masked = std::make_shared<std::vector<uint8_t>>();
  auto sink = std::make_shared<std::vector<float>>();
  const bool shade = lm.masked && lm.masked->size() == static_cast<size_t>(sm.rows) * sm.cols;
  for (int q = shown.row_begin; q < shown.row_end; ++q)
    for (int k = shown.col_begin; k < shown.col_end; ++k) {
      part->push_back(head[static_cast<size_t>(q) * sm.cols + k]);
      if (shade) masked->push_back((*lm.masked)[static_cast<size_t>(q) * sm.cols + k]);
    }
  const StageMaps& sinks = lm.sink;
  if (!logits && !sinks.empty() && sel.head < sinks.heads && sinks.rows == sm.rows)
    for (int q = shown.row_begin; q < shown.row_end; ++q) sink->push_back(sinks.at(sel.head, q, 0));
  FigureMap m;
  m.data = part->data();
  m.range = range;
  m.gate = shown_gate(wb.doc(), sel.stack, sel.layer, sel.head, sel.stage);
  m.taken = shown_take(wb.doc(), sel.stack, sel.layer, sel.head, sel.stage);
  m.mixed = !head_mixed(shown_controls(wb.doc(), sel.stack, sel.layer), sel.head).empty();
  m.masked = shade ? masked->data() : nullptr;
  m.sink = sink->empty() ? nullptr : sink->data();
  // Labels as on screen: with their positions on a long input.
  const auto& snapshot = *wb.doc().snapshot;
  const bool numbered = map_labels_numbered(sm.rows, sm.cols);
  FigureTokens tokens;
  for (int q = shown.row_begin; q < shown.row_end; ++q)
    tokens.queries.push_back(map_label(snapshot.query_tokens(sel.stack).tokens, q, numbered, 20));
  for (int k = shown.col_begin; k < shown.col_end; ++k)
    tokens.keys.push_back(map_label(snapshot.key_tokens(sel.stack).tokens, k, numbered, 20));
  const std::string title = wb.doc().model->name + " — " + core::stack_name(sel.stack) + " layer " + std::to_string(sel.layer) +
                            ", head " + std::to_string(sel.head) + " (" + stage_name(sel.stage) + ")";
  std::string subtitle;
  if (rows < sm.rows || cols < sm.cols)
    subtitle = std::string(rows < sm.rows ? "queries " + span(shown.row_begin, shown.row_end) : "every query") + ", " +
               (cols < sm.cols ? "keys " + span(shown.col_begin, shown.col_end) : "every key") + " of the " +
               std::to_string(sm.rows) + " × " + std::to_string(sm.cols) + " map, as the view shows it";
  // Written as a task; the shared buffers live as long as it.
  wb.start_export(path, [part, masked, sink, path, title, subtitle, m, rows, cols, tokens,
                         cmap = colormap_from_name(wb.doc().session.view.colormap)] {
    write_attention_map(path, title, m, rows, cols, tokens, cmap, subtitle);
  });
}

void export_heads_grid(Workbench& wb, const std::string& path) {
  const AttentionMaps& maps = shown_maps(wb, path);
  const auto& sel = wb.doc().session.selection;
  const bool logits = sel.stage == Stage::J || sel.stage == Stage::L;
  std::vector<std::vector<FigureMap>> grid;
  int rows = 0, cols = 0;
  // Where the run kept thumbnails, the open layer's whole maps (and its forbidden keys) are pooled
  // alike for the figure.
  const int side = wb.doc().snapshot->maps.thumbnail_side;
  std::vector<StageMaps> pooled(maps.layers.size()), sinks(maps.layers.size());
  std::vector<std::vector<uint8_t>> masks(maps.layers.size());
  for (size_t l = 0; l < maps.layers.size(); ++l) {
    const LayerMaps& lm = maps.layers[l];
    const StageMaps& whole = lm.stages[static_cast<int>(sel.stage)];
    const StageMaps& sm = pooled[l] = thumbnail(whole, side);
    const StageMaps& sink = sinks[l] = logits || lm.sink.empty() ? StageMaps{} : thumbnail(lm.sink, side);
    grid.emplace_back();
    if (sm.empty()) continue;
    rows = sm.rows, cols = sm.cols;
    if (lm.masked && lm.masked->size() == static_cast<size_t>(whole.rows) * whole.cols)
      masks[l] = sm.rows == whole.rows && sm.cols == whole.cols
                     ? *lm.masked
                     : pool_masked(lm.masked->data(), whole.rows, whole.cols,
                                   static_cast<int>(core::pooling_block(whole.rows, side)),
                                   static_cast<int>(core::pooling_block(whole.cols, side)));
    for (int h = 0; h < sm.heads; ++h) {
      FigureMap m;
      m.data = sm.head(h);
      m.range = map_range(m.data, static_cast<size_t>(sm.rows) * sm.cols, logits, wb.doc().session.view.log_scale,
                          !wb.doc().session.view.auto_range);
      m.gate = shown_gate(wb.doc(), sel.stack, static_cast<int>(l), h, sel.stage);
      m.mixed = !head_mixed(shown_controls(wb.doc(), sel.stack, static_cast<int>(l)), h).empty();
      m.taken = shown_take(wb.doc(), sel.stack, static_cast<int>(l), h, sel.stage);
      if (masks[l].size() == static_cast<size_t>(sm.rows) * sm.cols) m.masked = masks[l].data();
      if (!sink.empty() && h < sink.heads && sink.rows == sm.rows) m.sink = sink.head(h);
      grid.back().push_back(m);
    }
  }
  const std::string grid_title =
      wb.doc().model->name + " — " + core::stack_name(sel.stack) + " attention, every head (" + stage_name(sel.stage) + ")" +
      (side > 0 ? ", max-pooled to at most " + std::to_string(side) + "² per head" : "");
  // Written as a task (1,024 maps take seconds); the moved `pooled` and `masks` keep the buffers
  // `grid` points into, and `snap` keeps the snapshot's.
  wb.start_export(path, [snap = wb.doc().snapshot, pooled = std::move(pooled), sinks = std::move(sinks),
                         masks = std::move(masks), grid = std::move(grid), path, grid_title, rows, cols,
                         cmap = colormap_from_name(wb.doc().session.view.colormap)] {
    write_heads_grid(path, grid_title, grid, rows, cols, cmap);
  });
}

void export_head_view(Workbench& wb, const std::string& path, const std::vector<char>& hidden) {
  const AttentionMaps& maps = shown_maps(wb, path);
  const auto& sel = wb.doc().session.selection;
  const StageMaps& sm = maps.layers[sel.layer].stages[static_cast<int>(Stage::U)];
  if (sm.empty()) throw std::runtime_error("export " + path + ": no maps");
  if (sm.pooled()) throw std::runtime_error("export " + path + ": layer " + std::to_string(sel.layer) + "'s whole maps are still being computed");
  // The heads the view shows; a hidden one is left out (the others keep their colours).
  std::vector<const float*> heads;
  bool any = false;
  for (int h = 0; h < sm.heads; ++h) {
    const bool shown = h >= static_cast<int>(hidden.size()) || !hidden[h];
    heads.push_back(shown ? sm.head(h) : nullptr);
    any = any || shown;
  }
  if (!any) throw std::runtime_error("export " + path + ": every head is hidden in the Head view");
  wb.start_export(path, [snap = wb.doc().snapshot, path, heads,
                         view_title = wb.doc().model->name + " — " + core::stack_name(sel.stack) + " layer " +
                                      std::to_string(sel.layer) + ", heads by colour",
                         rows = sm.rows, cols = sm.cols, tokens = labels(*wb.doc().snapshot, sel.stack),
                         relative = wb.doc().session.view.auto_range, selected = sel.head] {
    write_head_view(path, view_title, heads, rows, cols, tokens, relative, selected);
  });
}

void export_or_ask(Workbench& wb, const std::string& path, std::function<void()> write, const std::string& kind) {
  std::error_code ec;
  if (fs::exists(path, ec)) {
    wb.pending_overwrite = PendingOverwrite{path, std::move(write), kind};
    return;
  }
  try {
    write();
    wb.clear_error(kind);
  } catch (const std::exception& e) {
    wb.set_error(kind, e.what());
  }
}

void draw_overwrite_prompt(Workbench& wb) {
  const char* title = "Replace file?";
  if (wb.pending_overwrite && !ImGui::IsPopupOpen(title)) ImGui::OpenPopup(title);
  if (!ImGui::BeginPopupModal(title, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  if (!wb.pending_overwrite) {
    ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
    return;
  }
  ImGui::Text("%s already exists.", wb.pending_overwrite->path.c_str());
  ImGui::TextUnformatted("Replace it?");
  // A script's answer (answer_dialog) presses the button as a click does.
  const std::string answer = std::exchange(wb.dialog_answer, std::string());
  const bool replace = ImGui::Button("Replace") || answer == "Replace";
  ImGui::SameLine();
  const bool cancel =
      ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape)) || answer == "Cancel";
  if (replace || cancel) {
    PendingOverwrite pending = std::move(*wb.pending_overwrite);
    wb.pending_overwrite.reset();
    ImGui::CloseCurrentPopup();
    if (replace) {
      try {
        pending.write();
        wb.clear_error(pending.kind);
      } catch (const std::exception& e) {
        wb.set_error(pending.kind, e.what());
      }
    }
  }
  ImGui::EndPopup();
}

void export_buttons_same_line(Workbench& wb, const std::string& figure, const std::string& window_title) {
  same_line_if_fits(ImGui::CalcTextSize("Export…").x + ImGui::GetStyle().FramePadding.x * 2);
  export_buttons(wb, figure, window_title);
}

void export_buttons(Workbench& wb, const std::string& figure, const std::string& window_title) {
  ImGui::PushID(figure.c_str());
  if (ImGui::SmallButton("Export…")) ImGui::OpenPopup("export");
  if (ImGui::BeginPopup("export")) {
    ImGui::TextDisabled("PNG scale");
    for (int s : {1, 2, 4}) {
      ImGui::SameLine();
      if (ImGui::RadioButton((std::to_string(s) + "×").c_str(), wb.doc().session.view.export_scale == s)) {
        cmd::SetView v;
        v.export_scale = s;
        wb.apply(v);
      }
    }
    ImGui::Checkbox("figure only", &wb.export_figure_only);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("PNG without the window's title bar and controls");
    std::vector<std::string> exts = {"png", "svg", "pdf"};
    if (figure == "head-table") exts.push_back("csv");
    ImGui::TextDisabled("as …");
    for (const std::string& ext : exts) {
      std::string upper = ext;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      if (ImGui::Selectable((upper + "…").c_str())) {
        const bool png = ext == "png";
        const int scale = wb.doc().session.view.export_scale;
        const bool figure_only = wb.export_figure_only;
        // Where it goes is the user's choice, starting from the last folder exported to.
        choose_export_path(wb, "Export the " + figure_title(figure) + " as " + upper, default_export_path(wb, figure, ext),
                           "." + ext, [&wb, figure, window_title, png, scale, figure_only](const std::string& path) {
                             // A task or a capture: each says "wrote …" once the file is there.
                             export_figure(wb, figure, png ? window_title : "", path, scale, figure_only);
                           });
      }
    }
    ImGui::EndPopup();
  }
  ImGui::PopID();
}

}  // namespace headlab::app
