// Drawing helpers shared by the head-report figures (analysis/report_figures.cpp and
// analysis/report_spectra_figure.cpp) and the window's analysis-view exports
// (app/export/analysis_figures.cpp): colours, text, ticks, markers, the colour bar, and writing one
// draw function to SVG, PDF or PNG. cairo only, no torch.
#pragma once

#include "analysis/cairo_image.h"
#include "analysis/head_report.h"
#include "analysis/report_figures.h"
#include "analysis/viridis.h"
#include "core/atomic_file.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::analysis::figure_kit {

constexpr double kPngScale = 2.0;
constexpr const char* kFont = "DejaVu Sans";

// ---- colour --------------------------------------------------------------------------------------

struct Colour {
  double r = 0, g = 0, b = 0;
};

// matplotlib's viridis (analysis/viridis.h) as a cairo colour: 0 → #440154, 1 → #fde725.
inline Colour viridis_colour(double t) {
  const auto v = analysis::viridis(t);
  return {v[0], v[1], v[2]};
}

// A gray ramp: 0 → black, 1 → white (the window's "gray" colormap).
inline Colour gray_colour(double t) { return {t, t, t}; }

// Relative luminance, to pick black or white text over a colour.
inline bool is_dark(const Colour& c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b < 0.45; }

inline void set(cairo_t* cr, const Colour& c, double alpha = 1.0) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }

const Colour kBlack{0, 0, 0}, kGray{0.35, 0.35, 0.35}, kLightGray{0.86, 0.86, 0.86}, kGridLine{0.9, 0.9, 0.9},
    kRoleOutline{0.84, 0.15, 0.16}, kBaseline{0.69, 0.69, 0.69};

// A value range mapped onto the colormap.
struct Range {
  double lo = 0, hi = 1;
  double t(double v) const { return hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 1.0; }
};

// ---- text ----------------------------------------------------------------------------------------

// Cairo's toy text API refuses invalid UTF-8 (and the context stops drawing); tokens come from
// arbitrary vocabularies, so bytes that are not valid UTF-8 become '?' and control characters '·'.
inline std::string printable(const std::string& s, size_t max_chars = 0) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (max_chars && chars == max_chars) {
      out += "…";
      break;
    }
    if (!ok) {
      out += '?';
      ++i;
    } else if (len == 1 && (c < 0x20 || c == 0x7F)) {
      out += "·";
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
    ++chars;
  }
  return out;
}

inline void font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

inline double text_width(cairo_t* cr, const std::string& s, double size, bool bold = false) {
  font(cr, size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

// Draws `s` anchored at (x, y): ax 0 / 0.5 / 1 puts the left edge / middle / right edge there, ay 0 /
// 0.5 / 1 the top / middle / bottom of the font's line; `angle` rotates about the anchor.
inline void text(cairo_t* cr, double x, double y, const std::string& s, double size, double ax = 0, double ay = 1,
          double angle = 0, bool bold = false) {
  font(cr, size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  cairo_font_extents_t f;
  cairo_font_extents(cr, &f);
  cairo_save(cr);
  cairo_translate(cr, x, y);
  if (angle != 0) cairo_rotate(cr, angle);
  cairo_move_to(cr, -ax * e.x_advance, f.ascent - ay * (f.ascent + f.descent));
  cairo_show_text(cr, s.c_str());
  cairo_restore(cr);
}

// Text widths before a surface exists (the page size depends on them).
class Measure {
 public:
  Measure() : surface_(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1)), cr_(cairo_create(surface_)) {}
  ~Measure() {
    cairo_destroy(cr_);
    cairo_surface_destroy(surface_);
  }
  double width(const std::string& s, double size, bool bold = false) { return text_width(cr_, s, size, bold); }

 private:
  cairo_surface_t* surface_;
  cairo_t* cr_;
};

inline std::string format(const char* pattern, double v) {
  char s[48];
  std::snprintf(s, sizeof s, pattern, v);
  return s;
}

// ---- ticks and colour bar ------------------------------------------------------------------------

// Round tick values covering [lo, hi] (about `count`), and the decimals that print them exactly.
inline std::vector<double> nice_ticks(double lo, double hi, int count, int* decimals) {
  if (!(hi > lo)) {
    *decimals = 3;
    return {lo};
  }
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  *decimals = std::max(0, int(-std::floor(std::log10(step) + 1e-9)) + (std::fmod(step / mag, 1.0) > 1e-9 ? 1 : 0));
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

inline std::string tick_label(double v, int decimals) {
  if (decimals > 6 || (v != 0 && (std::abs(v) >= 1e5))) return format("%.3g", v);
  char s[48];
  std::snprintf(s, sizeof s, "%.*f", decimals, v);
  return s;
}

// An image of the colormap (or a map) embedded once and scaled with nearest-neighbour sampling.
inline void draw_image(cairo_t* cr, int cols, int rows, const std::function<Colour(int, int)>& colour, double x, double y,
                double w, double h) {
  auto byte = [](double v) { return uint32_t(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); };
  draw_pixels(
      cr, cols, rows,
      [&](int r, int c) {
        const Colour k = colour(r, c);
        return (byte(k.r) << 16) | (byte(k.g) << 8) | byte(k.b);
      },
      x, y, w, h);
}

constexpr double kBarWidth = 12, kTickSize = 8;

// The width a vertical colour bar with its tick labels takes.
inline double colour_bar_width(Measure& m, const Range& range) {
  int decimals = 0;
  double w = 0;
  for (double v : nice_ticks(range.lo, range.hi, 5, &decimals)) w = std::max(w, m.width(tick_label(v, decimals), kTickSize));
  return kBarWidth + 4 + w;
}

// A vertical colour bar (high values at the top) with labelled ticks on its right.
inline void colour_bar(cairo_t* cr, double x, double y, double h, const Range& range,
                       Colour (*colour)(double) = viridis_colour) {
  draw_image(cr, 1, 256, [colour](int r, int) { return colour(1.0 - (r + 0.5) / 256.0); }, x, y, kBarWidth, h);
  set(cr, kGray);
  cairo_set_line_width(cr, 0.5);
  cairo_rectangle(cr, x, y, kBarWidth, h);
  cairo_stroke(cr);
  int decimals = 0;
  for (double v : nice_ticks(range.lo, range.hi, 5, &decimals)) {
    const double ty = range.hi > range.lo ? y + h * (1.0 - range.t(v)) : y;
    set(cr, kBlack);
    cairo_move_to(cr, x + kBarWidth, ty);
    cairo_line_to(cr, x + kBarWidth + 3, ty);
    cairo_stroke(cr);
    text(cr, x + kBarWidth + 4, ty, tick_label(v, decimals), kTickSize, 0, 0.5);
  }
}

// Rank markers: circle (kind 0, 90%), square (1, 95%), triangle (2, 99%); a path to fill or stroke.
inline void marker(cairo_t* cr, int kind, double x, double y, double r) {
  if (kind == 0) {
    cairo_new_sub_path(cr);  // no line from the current point (after text) to the circle
    cairo_arc(cr, x, y, r, 0, 2 * M_PI);
  } else if (kind == 1) {
    cairo_rectangle(cr, x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8);
  } else {
    cairo_move_to(cr, x, y - r * 1.15);
    cairo_line_to(cr, x + r * 1.05, y + r * 0.75);
    cairo_line_to(cr, x - r * 1.05, y + r * 0.75);
    cairo_close_path(cr);
  }
}

// ---- surfaces ------------------------------------------------------------------------------------

using Draw = std::function<void(cairo_t*)>;

inline void check(cairo_status_t status, const std::string& path) {
  if (status != CAIRO_STATUS_SUCCESS) throw std::runtime_error(path + ": " + cairo_status_to_string(status));
}

inline void prepare(cairo_t* cr) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  font(cr, 10);
}

// Cairo writes no <title> (and draws text as glyph outlines); the figure's title goes in one, and
// an optional text alternative of what it shows (its labels and values) in a <desc>, so that the
// SVG says what it shows to screen readers, file browsers and text search. `path` names the file
// in errors.
inline void add_svg_title(std::string& svg, const std::string& path, const std::string& title,
                          const std::string& description = "") {
  const auto open = svg.find("<svg");
  const auto end = open == std::string::npos ? std::string::npos : svg.find('>', open);
  if (end == std::string::npos) throw std::runtime_error(path + ": cairo wrote no <svg> element");
  auto escape = [](const std::string& s) {
    std::string escaped;
    for (char c : s) {
      if (c == '&') escaped += "&amp;";
      else if (c == '<') escaped += "&lt;";
      else if (c == '>') escaped += "&gt;";
      else escaped += c;
    }
    return escaped;
  };
  svg.insert(end + 1, "\n<title>" + escape(title) + "</title>" +
                          (description.empty() ? "" : "\n<desc>" + escape(description) + "</desc>"));
}

// Draws `draw` into memory as "svg", "pdf" or "png" (at kPngScale) and returns the file's bytes.
// Throws naming `path` when cairo fails.
inline std::string render_figure(const std::string& format, const std::string& path, double width, double height,
                                 const Draw& draw) {
  std::string bytes;
  const bool png = format == "png";
  cairo_surface_t* surface =
      png ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(width * kPngScale), int(height * kPngScale))
          : create_vector_surface_in_memory(format, bytes, width, height);
  if (cairo_surface_status(surface) != CAIRO_STATUS_SUCCESS) {
    const cairo_status_t status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    check(status, path);
  }
  cairo_t* cr = cairo_create(surface);
  if (png) cairo_scale(cr, kPngScale, kPngScale);
  prepare(cr);
  draw(cr);
  const cairo_status_t drawn = cairo_status(cr);
  cairo_destroy(cr);
  cairo_status_t saved = drawn;
  if (png && drawn == CAIRO_STATUS_SUCCESS) {
    cairo_surface_flush(surface);
    saved = png_to_memory(surface, bytes);
  }
  cairo_surface_finish(surface);
  if (saved == CAIRO_STATUS_SUCCESS) saved = cairo_surface_status(surface);
  cairo_surface_destroy(surface);
  check(saved, path);
  return bytes;
}

// Writes `folder`/`name`.svg and .png (atomically, core/atomic_file.h) and adds both names to `written`.
inline void write_figure(const std::string& folder, const std::string& name, const std::string& title, double width,
                  double height, const Draw& draw, std::vector<std::string>& written) {
  width = std::ceil(width), height = std::ceil(height);
  const std::string svg_path = folder + "/" + name + ".svg";
  std::string svg = render_figure("svg", svg_path, width, height, draw);
  add_svg_title(svg, svg_path, title);
  core::write_file_atomic(svg_path, svg);
  const std::string png_path = folder + "/" + name + ".png";
  core::write_file_atomic(png_path, render_figure("png", png_path, width, height, draw));
  written.push_back(name + ".svg");
  written.push_back(name + ".png");
}

// Writes one figure to `path`, the format by its extension: .svg (with <title> and <desc>), .pdf,
// or .png (at kPngScale), atomically. Throws naming the path for another extension or when cairo
// or the file system fails.
inline void write_figure_file(const std::string& path, const std::string& title, double width, double height,
                              const Draw& draw, const std::string& description = "") {
  width = std::ceil(width), height = std::ceil(height);
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".svg" && ext != ".pdf" && ext != ".png") throw std::runtime_error("export " + path + ": use .svg, .pdf or .png");
  std::string bytes = render_figure(ext.substr(1), path, width, height, draw);
  if (ext == ".svg") add_svg_title(bytes, path, title, description);
  core::write_file_atomic(path, bytes);
}

// ---- report helpers ------------------------------------------------------------------------------

inline std::vector<core::Stack> stacks_of(const HeadReport& report) { return stacks_in(report); }

// File-name-safe: letters, digits, '-' and '_'.
inline std::string file_part(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out.empty() ? "_" : out;
}

inline bool has_syntactic_role(const HeadEntry& h) {
  return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const SyntacticScore& s) { return s.is_role; });
}

inline std::string short_direction(const std::string& direction) {
  if (direction == "dependent->head") return "dep→head";
  if (direction == "head->dependent") return "head→dep";
  return direction;
}

inline std::string signed_offset(int offset) { return (offset > 0 ? "+" : "") + std::to_string(offset); }

// The key-query spectra figure (report_spectra_figure.cpp) and one example map.
void spectra_figure(const HeadReport& report, const std::string& folder, std::vector<std::string>& written);
void map_figure(const ExampleMap& map, const std::string& name, const std::string& folder,
                std::vector<std::string>& written);

}  // namespace headlab::analysis::figure_kit
