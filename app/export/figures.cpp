#include "app/export/figures.h"

#include "analysis/cairo_image.h"
#include "analysis/figure_kit.h"
#include "app/layout/head_colours.h"
#include "core/atomic_file.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace headlab::app {
namespace {

std::string extension(const std::string& path) {
  const auto dot = path.find_last_of('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// A cairo context on an SVG, PDF or PNG surface of width × height points, drawn in memory;
// finish() writes the file atomically (core/atomic_file.h).
class Canvas {
 public:
  Canvas(const std::string& path, double width, double height) : path_(path), ext_(extension(path)) {
    if (ext_ == "svg" || ext_ == "pdf")
      surface_ = analysis::create_vector_surface_in_memory(ext_, bytes_, width, height);
    else if (ext_ == "png")
      surface_ = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(width * 2), static_cast<int>(height * 2));
    else
      throw std::runtime_error("export " + path + ": use .svg, .pdf or .png");
    if (cairo_surface_status(surface_) != CAIRO_STATUS_SUCCESS)
      throw std::runtime_error("export " + path + ": " + cairo_status_to_string(cairo_surface_status(surface_)));
    cr = cairo_create(surface_);
    if (ext_ == "png") cairo_scale(cr, 2, 2);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }
  ~Canvas() {
    if (cr) cairo_destroy(cr);
    if (surface_) cairo_surface_destroy(surface_);
  }
  // Writes the file; an SVG also gets the title and a text alternative of what it shows (cairo
  // draws text as glyph outlines, so without these the labels cannot be read back or searched).
  void finish(const std::string& title, const std::string& description) {
    if (ext_ == "png" && analysis::png_to_memory(surface_, bytes_) != CAIRO_STATUS_SUCCESS)
      throw std::runtime_error("export " + path_ + ": cannot encode the PNG");
    cairo_surface_finish(surface_);
    if (cairo_surface_status(surface_) != CAIRO_STATUS_SUCCESS)
      throw std::runtime_error("export " + path_ + ": " + cairo_status_to_string(cairo_surface_status(surface_)));
    if (ext_ == "svg") analysis::figure_kit::add_svg_title(bytes_, path_, title, description);
    core::write_file_atomic(path_, bytes_);
  }
  cairo_t* cr = nullptr;

 private:
  std::string path_, ext_;
  std::string bytes_;  // the file, as cairo writes it
  cairo_surface_t* surface_ = nullptr;
};

void text(cairo_t* cr, double x, double y, const std::string& s, double size, bool right = false, double angle = 0) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, right ? -e.x_advance : 0, 0);
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

double text_width(cairo_t* cr, const std::string& s, double size) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

// "1" or "0.5": the share of a head's output taken from the counterfactual.
std::string taken_text(float taken) {
  char t[16];
  std::snprintf(t, sizeof t, "%.2g", static_cast<double>(taken));
  return t;
}

// "off" or "g=0.25": what a gated map's stamp says.
std::string gate_text(float gate) {
  char g[32];
  std::snprintf(g, sizeof g, gate == 0 ? "off" : "g=%.2f", gate);
  return g;
}

// Keys the layer's pattern forbids: the window's hatch (dark grey, lighter diagonal stripes).
constexpr double kForbidden[3] = {0.20, 0.20, 0.22}, kForbiddenStripe[3] = {0.28, 0.28, 0.30};

// Diagonal stripes over the cells `map.masked` sets, on their dark grey (drawn by draw_map's pixels).
void hatch_forbidden(cairo_t* cr, const FigureMap& map, int rows, int cols, double x, double y, double w, double h) {
  cairo_save(cr);
  cairo_new_path(cr);
  const double cw = w / cols, ch = h / rows;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols;) {  // one rectangle per run of forbidden keys in a row
      if (!map.masked[static_cast<size_t>(r) * cols + c]) {
        ++c;
        continue;
      }
      const int begin = c;
      while (c < cols && map.masked[static_cast<size_t>(r) * cols + c]) ++c;
      cairo_rectangle(cr, x + begin * cw, y + r * ch, (c - begin) * cw, ch);
    }
  cairo_clip(cr);
  cairo_set_source_rgb(cr, kForbiddenStripe[0], kForbiddenStripe[1], kForbiddenStripe[2]);
  cairo_set_line_width(cr, 1.0);
  const double period = 3.0;
  for (double d = -h; d < w; d += period) {
    cairo_move_to(cr, x + d, y + h);
    cairo_line_to(cr, x + d + h, y);
  }
  cairo_stroke(cr);
  cairo_restore(cr);
}

// Draws a map as one embedded image (not a rectangle per cell) scaled with nearest-neighbour.
// `vector_cells`: analysis::draw_pixels's, lowered for a figure of many maps.
void draw_map(cairo_t* cr, const FigureMap& map, int rows, int cols, Colormap colormap, double x, double y, double w, double h,
              int64_t vector_cells = analysis::kVectorCells) {
  auto byte = [](double v) { return static_cast<uint32_t>(std::lround(v * 255)); };
  const uint32_t forbidden = (byte(kForbidden[0]) << 16) | (byte(kForbidden[1]) << 8) | byte(kForbidden[2]);
  analysis::draw_pixels(
      cr, cols, rows,
      [&](int r, int c) {
        const size_t i = static_cast<size_t>(r) * cols + c;
        if (map.masked && map.masked[i]) return forbidden;
        const Rgb rgb = colormap_rgb(colormap, map.range.normalize(map.data[i]));
        return (uint32_t(rgb.r) << 16) | (uint32_t(rgb.g) << 8) | rgb.b;
      },
      x, y, w, h, vector_cells);
  if (map.masked) hatch_forbidden(cr, map, rows, cols, x, y, w, h);
  if (map.gate < 1.0f) {
    cairo_set_source_rgba(cr, 0.1, 0.1, 0.1, 0.75 * (1.0 - map.gate));
    cairo_rectangle(cr, x, y, w, h);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0.85, 0.15, 0.15);
    text(cr, x + 2, y + 9, gate_text(map.gate), 8);
    if (map.gate == 0) {  // crossed out, as on screen
      cairo_set_source_rgba(cr, 0.85, 0.15, 0.15, 0.6);
      cairo_set_line_width(cr, 1.0);
      cairo_move_to(cr, x, y), cairo_line_to(cr, x + w, y + h);
      cairo_move_to(cr, x + w, y), cairo_line_to(cr, x, y + h);
      cairo_stroke(cr);
    }
  }
}

// The learned sink's share of each of `rows` queries as a column at x of width w (map.sink set).
void draw_sink_column(cairo_t* cr, const FigureMap& map, int rows, Colormap colormap, double x, double y, double w,
                      double h) {
  for (int r = 0; r < rows; ++r) {
    const Rgb rgb = colormap_rgb(colormap, map.range.normalize(map.sink[r]));
    cairo_set_source_rgb(cr, rgb.r / 255.0, rgb.g / 255.0, rgb.b / 255.0);
    cairo_rectangle(cr, x, y + r * h / rows, w, h / rows + 0.05);  // overlap a hair: no seams between rows
    cairo_fill(cr);
  }
}

std::string fmt(float v) {
  char s[32];
  std::snprintf(s, sizeof s, v != 0 && (std::fabs(v) < 1e-2f || std::fabs(v) >= 1e4f) ? "%.0e" : "%.3g", v);
  return s;
}

void colour_bar(cairo_t* cr, double x, double y, double w, double h, Colormap colormap, const MapRange& range) {
  const int steps = 128;
  for (int i = 0; i < steps; ++i) {
    const Rgb c = colormap_rgb(colormap, (i + 0.5f) / steps);
    cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
    cairo_rectangle(cr, x + w * i / steps, y, w / steps + 0.3, h);
    cairo_fill(cr);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  const float lo = range.log ? range.hi * 1e-4f : range.lo;
  text(cr, x, y + h + 10, fmt(lo), 8);
  text(cr, x + w, y + h + 10, fmt(range.hi), 8, true);
  if (range.log) text(cr, x + w + 4, y + h, "log", 8);
}

bool any_masked(const FigureMap& map, int rows, int cols) {
  if (!map.masked) return false;
  for (size_t i = 0; i < static_cast<size_t>(rows) * cols; ++i)
    if (map.masked[i]) return true;
  return false;
}

constexpr const char* kForbiddenText = "hatched grey: keys the layer's attention pattern forbids (not weights of 0)";

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

// The colour bar's words: the colormap and its two ends, as drawn under the map.
std::string colour_bar_text(Colormap colormap, const MapRange& range) {
  return std::string("colour bar: ") + colormap_name(colormap) + ", " + fmt(range.log ? range.hi * 1e-4f : range.lo) +
         " to " + fmt(range.hi) + (range.log ? " (log)" : "");
}

// The widest of `texts` at `size` points, measured on a scratch context before the page size is known.
double widest_text(const std::vector<std::string>& texts, double size) {
  cairo_surface_t* scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t* probe = cairo_create(scratch);
  cairo_select_font_face(probe, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  double widest = 0;
  for (const auto& t : texts) widest = std::max(widest, text_width(probe, t, size));
  cairo_destroy(probe);
  cairo_surface_destroy(scratch);
  return widest;
}

// A page is at least as wide as its title (the title is never cut at the right edge).
constexpr double kMargin = 16, kTitleSize = 12;
double page_width(double content, const std::string& title) {
  return std::max(content, kMargin * 2 + widest_text({title}, kTitleSize) + 4);
}

}  // namespace

void write_attention_map(const std::string& path, const std::string& title, const FigureMap& map, int rows, int cols,
                         const FigureTokens& tokens, Colormap colormap, const std::string& subtitle) {
  const double cell = std::max(4.0, std::min(18.0, 480.0 / std::max(rows, cols)));
  const double label = std::min(9.0, cell * 0.8);
  // The corner between the labels names the axes: "key →" over "query ↓", right-aligned.
  const double axis_w = widest_text({"query ↓", "key →"}, 7) + 8;
  const double left = std::max(widest_text(tokens.queries, label) + 12, axis_w),
               top = std::max(widest_text(tokens.keys, label) + 12, 24.0);
  const double w = cols * cell, h = rows * cell;
  const double sink_w = map.sink ? cell * 1.5 : 0.0;  // the sink column and its gap
  // A head whose output the Mixer takes from the counterfactual says so under the title, as the
  // window's Attention map does: the map is the clean input's pattern, its output is not the head's.
  const std::string cf = map.taken > 0.0f ? "cf: " + (map.taken == 1.0f ? std::string("its output") : taken_text(map.taken) + " of its output") +
                                                " from the counterfactual (the map: the clean input's pattern)"
                                          : "";
  // So does a head a Mixer matrix combines with others: the map is the mix, not the head's own.
  const std::string mix = map.mixed ? "mix: a Mixer matrix combines this head with others (the map is the mixed one)" : "";
  const double margin = 16, title_h = 24 + (subtitle.empty() ? 0 : 14) + (cf.empty() ? 0 : 14) + (mix.empty() ? 0 : 14),
               bar_h = 40;
  const double width = std::max(page_width(margin * 2 + left + std::max(w + sink_w, 160.0), title),
                                margin * 2 + widest_text({subtitle, cf, mix}, 9) + 4);
  Canvas c(path, width, margin * 2 + title_h + top + h + bar_h);
  cairo_t* cr = c.cr;
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, margin, margin + 12, title, 12);
  double line_y = margin + 26;
  if (!subtitle.empty()) {
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    text(cr, margin, line_y, subtitle, 9);
    line_y += 14;
  }
  if (!cf.empty()) {
    cairo_set_source_rgb(cr, 0.7, 0.42, 0.0);  // the window's amber, dark enough to read on white
    text(cr, margin, line_y, cf, 9);
    line_y += 14;
  }
  if (!mix.empty()) {
    cairo_set_source_rgb(cr, 0.1, 0.45, 0.7);  // the grid's "mix" blue, darker for white
    text(cr, margin, line_y, mix, 9);
  }
  const double x0 = margin + left, y0 = margin + title_h + top;
  draw_map(cr, map, rows, cols, colormap, x0, y0, w, h);
  if (map.sink) {
    draw_sink_column(cr, map, rows, colormap, x0 + w + cell * 0.5, y0, cell, h);
    cairo_set_source_rgb(cr, 0.6, 0.35, 0.0);
    text(cr, x0 + w + cell * 0.5 + cell / 2 + label * 0.35, y0 - 4, "sink", label, false, -M_PI / 2);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (int r = 0; r < rows && r < static_cast<int>(tokens.queries.size()); ++r)
    text(cr, x0 - 4, y0 + (r + 0.5) * cell + label * 0.35, tokens.queries[r], label, true);
  for (int k = 0; k < cols && k < static_cast<int>(tokens.keys.size()); ++k)
    text(cr, x0 + (k + 0.5) * cell + label * 0.35, y0 - 4, tokens.keys[k], label, false, -M_PI / 2);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  text(cr, x0 - 6, y0 - 13, "key →", 7, true);
  text(cr, x0 - 6, y0 - 4, "query ↓", 7, true);
  colour_bar(cr, x0, y0 + h + 10, std::min(w, 200.0), 8, colormap, map.range);
  c.finish(title, (subtitle.empty() ? "" : subtitle + "\n") + "queries (rows): " + join(tokens.queries, " ") +
                      "\nkeys (columns): " + join(tokens.keys, " ") +
                      (map.sink ? "\nlast column: the learned sink's share of each query's softmax" : "") +
                      (any_masked(map, rows, cols) ? std::string("\n") + kForbiddenText : "") +
                      (map.gate < 1.0f ? "\ngate " + gate_text(map.gate) + ": the head's output scaled by its gate" : "") +
                      (map.taken > 0.0f ? "\n" + taken_text(map.taken) + " of the head's output taken from the counterfactual" : "") +
                      (map.mixed ? "\nmixed: a Mixer matrix combines this head with others" : "") +
                      "\n" + colour_bar_text(colormap, map.range));
}

void write_heads_grid(const std::string& path, const std::string& title, const std::vector<std::vector<FigureMap>>& maps,
                      int rows, int cols, Colormap colormap) {
  const int layers = static_cast<int>(maps.size());
  int heads = 0;
  for (const auto& l : maps) heads = std::max(heads, static_cast<int>(l.size()));
  const double cell = std::max(40.0, std::min(90.0, 900.0 / std::max(1, heads)));
  const double pad = 4, left = 28, margin = 16, title_h = 24, header = 14;
  const double width = margin * 2 + left + heads * (cell + pad);
  const double height = margin * 2 + title_h + header + layers * (cell + pad) + 36;
  Canvas c(path, page_width(width, title), height);
  cairo_t* cr = c.cr;
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, margin, margin + 12, title, 12);
  const double x0 = margin + left, y0 = margin + title_h + header;
  for (int h = 0; h < heads; ++h) text(cr, x0 + h * (cell + pad) + cell / 2 - 6, y0 - 4, "H" + std::to_string(h), 8);
  MapRange shown;
  bool one_scale = true;  // every map coloured over the same range (the absolute 0–1 of weights)
  int64_t maps_drawn = 0;
  bool any_sink = false, any_forbidden = false;
  std::vector<std::string> gated, mixed, taken;  // "L4 H4 off", …; "L2 H0", …; "L1 H0 (1)", …
  for (const auto& l : maps) maps_drawn += static_cast<int64_t>(l.size());
  const int64_t vector_cells =
      maps_drawn * rows * cols > analysis::kFigureVectorCells ? 0 : analysis::kVectorCells;  // many maps: images
  for (int l = 0; l < layers; ++l) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, margin, y0 + l * (cell + pad) + cell / 2 + 3, "L" + std::to_string(l), 8);
    for (int h = 0; h < static_cast<int>(maps[l].size()); ++h) {
      const FigureMap& m = maps[l][h];
      const double strip = m.sink ? std::max(3.0, cell * 0.08) : 0.0, map_w = m.sink ? cell - strip - 2 : cell;
      const double x = x0 + h * (cell + pad), y = y0 + l * (cell + pad);
      draw_map(cr, m, rows, cols, colormap, x, y, map_w, cell, vector_cells);
      if (m.sink) draw_sink_column(cr, m, rows, colormap, x + map_w + 2, y, strip, cell);
      any_sink = any_sink || m.sink;
      any_forbidden = any_forbidden || any_masked(m, rows, cols);
      const std::string name = "L" + std::to_string(l) + " H" + std::to_string(h);
      if (m.gate < 1.0f) gated.push_back(name + " " + gate_text(m.gate));
      if (m.taken > 0.0f) {
        taken.push_back(name + " (" + taken_text(m.taken) + ")");
        const double w = text_width(cr, "cf", 8) + 4;
        cairo_set_source_rgba(cr, 0.08, 0.08, 0.08, 0.8);
        cairo_rectangle(cr, x + map_w - w - 1, y + cell - 11, w, 10);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 1.0, 0.78, 0.31);
        text(cr, x + map_w - w + 1, y + cell - 3, "cf", 8);
      }
      if (m.mixed) {
        mixed.push_back(name);
        cairo_set_source_rgba(cr, 0.08, 0.08, 0.08, 0.8);
        cairo_rectangle(cr, x + 1, y + cell - 11, text_width(cr, "mix", 8) + 4, 10);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.43, 0.78, 1.0);
        text(cr, x + 3, y + cell - 3, "mix", 8);
      }
      const MapRange& r = maps[l][h].range;
      if (l + h > 0 && (r.lo != shown.lo || r.hi != shown.hi || r.log != shown.log)) one_scale = false;
      shown = r;
    }
  }
  const std::string scale_note = one_scale ? "every map on this scale" : "each map scaled to its own range (the bar: the last map's)";
  if (one_scale) {
    colour_bar(cr, x0, y0 + layers * (cell + pad) + 6, std::min(200.0, heads * (cell + pad)), 8, colormap, shown);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  text(cr, one_scale ? x0 + std::min(200.0, heads * (cell + pad)) + 24 : x0, y0 + layers * (cell + pad) + 14,
       one_scale ? scale_note : "each map scaled to its own range: colours do not compare across maps", 7);
  c.finish(title, std::to_string(layers) + " layers (L0–L" + std::to_string(layers - 1) + ") × " + std::to_string(heads) +
                      " heads (H0–H" + std::to_string(heads - 1) + "), each map " + std::to_string(rows) + " × " +
                      std::to_string(cols) + "\n" +
                      (any_sink ? "the strip right of a map: the learned sink's share of each query's softmax\n" : "") +
                      (any_forbidden ? std::string(kForbiddenText) + "\n" : "") +
                      (gated.empty() ? "" : "gated heads, dimmed: " + join(gated, ", ") + "\n") +
                      (mixed.empty() ? "" : "heads a mixing matrix changes, marked mix: " + join(mixed, ", ") + "\n") +
                      (taken.empty() ? "" : "heads whose output is taken from the counterfactual, marked cf: " +
                                                join(taken, ", ") + "\n") +
                      (one_scale ? colour_bar_text(colormap, shown) : std::string("each map scaled to its own range")));
}

void write_head_view(const std::string& path, const std::string& title, const std::vector<const float*>& heads, int rows,
                     int cols, const FigureTokens& tokens, bool relative_opacity, int selected) {
  const double row = std::max(6.0, std::min(16.0, 640.0 / std::max(rows, cols)));
  const double label = std::min(9.0, row * 0.8), margin = 16, title_h = 40, col_w = 90, gap = 220;
  Canvas c(path, page_width(margin * 2 + col_w * 2 + gap, title), margin * 2 + title_h + std::max(rows, cols) * row);
  cairo_t* cr = c.cr;
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, margin, margin + 12, title, 12);
  // The legend: the heads drawn, each in its colour.
  std::vector<std::string> drawn, hidden;
  for (size_t h = 0; h < heads.size(); ++h) {
    if (!heads[h]) {
      hidden.push_back(std::to_string(h));
      continue;
    }
    const double p[3] = {head_rgb(h).r / 255.0, head_rgb(h).g / 255.0, head_rgb(h).b / 255.0};
    const double lx = margin + drawn.size() * 28;
    cairo_set_source_rgb(cr, p[0], p[1], p[2]);
    cairo_rectangle(cr, lx, margin + 20, 10, 8);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, lx + 12, margin + 28, std::to_string(h), 8);
    drawn.push_back(std::to_string(h));
  }
  const double xl = margin + col_w, xr = xl + gap, y0 = margin + title_h;
  for (int q = 0; q < rows && q < static_cast<int>(tokens.queries.size()); ++q)
    text(cr, xl - 6, y0 + (q + 0.5) * row + label * 0.35, tokens.queries[q], label, true);
  for (int k = 0; k < cols && k < static_cast<int>(tokens.keys.size()); ++k)
    text(cr, xr + 6, y0 + (k + 0.5) * row + label * 0.35, tokens.keys[k], label);
  // Opacity is the weight (0–1), or relative to the strongest weight with auto range, as in the
  // window; the selected head last and wider.
  float strongest = 1.0f;
  if (relative_opacity) {
    strongest = 0;
    for (const float* m : heads)
      if (m)
        for (int i = 0; i < rows * cols; ++i) strongest = std::max(strongest, m[i]);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  const std::string opacity =
      std::string(relative_opacity ? "line opacity: weight relative to the strongest" : "line opacity: attention weight, 0 to 1") +
      (hidden.empty() ? "" : "; heads " + join(hidden, ", ") + " hidden");
  text(cr, margin + drawn.size() * 28 + 8, margin + 28, opacity, 7);
  std::vector<int> order;
  for (int h = 0; h < static_cast<int>(heads.size()); ++h)
    if (h != selected && heads[h]) order.push_back(h);
  if (selected >= 0 && selected < static_cast<int>(heads.size()) && heads[selected]) order.push_back(selected);
  for (int h : order) {
    if (!(strongest > 0)) break;
    const double p[3] = {head_rgb(h).r / 255.0, head_rgb(h).g / 255.0, head_rgb(h).b / 255.0};
    cairo_set_line_width(cr, h == selected ? 1.6 : 1.0);
    for (int q = 0; q < rows; ++q)
      for (int k = 0; k < cols; ++k) {
        const float w = heads[h][static_cast<size_t>(q) * cols + k];
        if (!(w > (relative_opacity ? 0.05f : 0.02f) * strongest)) continue;
        cairo_set_source_rgba(cr, p[0], p[1], p[2], std::min(1.0f, w / strongest) * 0.85);
        cairo_move_to(cr, xl, y0 + (q + 0.5) * row);
        cairo_line_to(cr, xr, y0 + (k + 0.5) * row);
        cairo_stroke(cr);
      }
  }
  const std::string which = hidden.empty() ? std::to_string(heads.size()) + " heads"
                                           : "heads " + join(drawn, ", ") + " of " + std::to_string(heads.size()) +
                                                 " (heads " + join(hidden, ", ") + " hidden)";
  c.finish(title, which + ", one colour each; lines from queries (left): " + join(tokens.queries, " ") +
                      "\nto keys (right): " + join(tokens.keys, " "));
}

}  // namespace headlab::app
