// The head report's figures, drawn with cairo onto an SVG surface and a PNG image surface (the PNG at
// twice the SVG's point size). Every figure is one draw function run on both surfaces, so the two
// files show the same thing.
#include "analysis/report_figures.h"

#include "analysis/cairo_image.h"
#include "analysis/viridis.h"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

namespace headlab::analysis {
namespace {

constexpr double kPngScale = 2.0;
constexpr const char* kFont = "DejaVu Sans";

// ---- colour --------------------------------------------------------------------------------------

struct Colour {
  double r = 0, g = 0, b = 0;
};

// matplotlib's viridis (analysis/viridis.h): viridis(0) = #440154, viridis(1) = #fde725.
Colour viridis(double t) {
  const auto v = analysis::viridis(t);
  return {v[0], v[1], v[2]};
}

// Relative luminance, to pick black or white text over a colour.
bool is_dark(const Colour& c) { return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b < 0.45; }

void set(cairo_t* cr, const Colour& c, double alpha = 1.0) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }

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
std::string printable(const std::string& s, size_t max_chars = 0) {
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

void font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& s, double size, bool bold = false) {
  font(cr, size, bold);
  cairo_text_extents_t e;
  cairo_text_extents(cr, s.c_str(), &e);
  return e.x_advance;
}

// Draws `s` anchored at (x, y): ax 0 / 0.5 / 1 puts the left edge / middle / right edge there, ay 0 /
// 0.5 / 1 the top / middle / bottom of the font's line; `angle` rotates about the anchor.
void text(cairo_t* cr, double x, double y, const std::string& s, double size, double ax = 0, double ay = 1,
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

std::string format(const char* pattern, double v) {
  char s[48];
  std::snprintf(s, sizeof s, pattern, v);
  return s;
}

// ---- ticks and colour bar ------------------------------------------------------------------------

// Round tick values covering [lo, hi] (about `count`), and the decimals that print them exactly.
std::vector<double> nice_ticks(double lo, double hi, int count, int* decimals) {
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

std::string tick_label(double v, int decimals) {
  if (decimals > 6 || (v != 0 && (std::abs(v) >= 1e5))) return format("%.3g", v);
  char s[48];
  std::snprintf(s, sizeof s, "%.*f", decimals, v);
  return s;
}

// An image of the colormap (or a map) embedded once and scaled with nearest-neighbour sampling.
void draw_image(cairo_t* cr, int cols, int rows, const std::function<Colour(int, int)>& colour, double x, double y,
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
double colour_bar_width(Measure& m, const Range& range) {
  int decimals = 0;
  double w = 0;
  for (double v : nice_ticks(range.lo, range.hi, 5, &decimals)) w = std::max(w, m.width(tick_label(v, decimals), kTickSize));
  return kBarWidth + 4 + w;
}

// A vertical colour bar (high values at the top) with labelled ticks on its right.
void colour_bar(cairo_t* cr, double x, double y, double h, const Range& range) {
  draw_image(cr, 1, 256, [](int r, int) { return viridis(1.0 - (r + 0.5) / 256.0); }, x, y, kBarWidth, h);
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

// ---- surfaces ------------------------------------------------------------------------------------

using Draw = std::function<void(cairo_t*)>;

void check(cairo_status_t status, const std::string& path) {
  if (status != CAIRO_STATUS_SUCCESS) throw std::runtime_error(path + ": " + cairo_status_to_string(status));
}

void prepare(cairo_t* cr) {
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  font(cr, 10);
}

// Cairo writes no <title>; the figure's title goes in one so that the SVG says what it shows to
// screen readers, file browsers and text search.
void add_svg_title(const std::string& path, const std::string& title) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string svg = buffer.str();
  const auto open = svg.find("<svg");
  const auto end = open == std::string::npos ? std::string::npos : svg.find('>', open);
  if (end == std::string::npos) throw std::runtime_error(path + ": cairo wrote no <svg> element");
  std::string escaped;
  for (char c : title) {
    if (c == '&') escaped += "&amp;";
    else if (c == '<') escaped += "&lt;";
    else if (c == '>') escaped += "&gt;";
    else escaped += c;
  }
  svg.insert(end + 1, "\n<title>" + escaped + "</title>");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << svg;
  if (!out) throw std::runtime_error(path + ": cannot write");
}

void write_figure(const std::string& folder, const std::string& name, const std::string& title, double width,
                  double height, const Draw& draw, std::vector<std::string>& written) {
  width = std::ceil(width), height = std::ceil(height);
  const std::string svg = folder + "/" + name + ".svg";
  {
    cairo_surface_t* surface = cairo_svg_surface_create(svg.c_str(), width, height);
    check(cairo_surface_status(surface), svg);
    cairo_t* cr = cairo_create(surface);
    prepare(cr);
    draw(cr);
    const cairo_status_t drawn = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(surface);
    const cairo_status_t finished = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    check(drawn, svg);
    check(finished, svg);
    add_svg_title(svg, title);
  }
  const std::string png = folder + "/" + name + ".png";
  {
    cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(width * kPngScale),
                                                          int(height * kPngScale));
    check(cairo_surface_status(surface), png);
    cairo_t* cr = cairo_create(surface);
    cairo_scale(cr, kPngScale, kPngScale);
    prepare(cr);
    draw(cr);
    const cairo_status_t drawn = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    const cairo_status_t saved = drawn == CAIRO_STATUS_SUCCESS ? cairo_surface_write_to_png(surface, png.c_str()) : drawn;
    cairo_surface_destroy(surface);
    check(saved, png);
  }
  written.push_back(name + ".svg");
  written.push_back(name + ".png");
}

// ---- report helpers ------------------------------------------------------------------------------

std::vector<std::string> stacks_of(const HeadReport& report) {
  std::vector<std::string> stacks;
  for (const auto& h : report.heads)
    if (std::find(stacks.begin(), stacks.end(), h.stack) == stacks.end()) stacks.push_back(h.stack);
  return stacks;
}

// File-name-safe: letters, digits, '-' and '_'.
std::string file_part(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return out.empty() ? "_" : out;
}

bool has_syntactic_role(const HeadEntry& h) {
  return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const SyntacticScore& s) { return s.is_role; });
}

std::string short_direction(const std::string& direction) {
  if (direction == "dependent->head") return "dep→head";
  if (direction == "head->dependent") return "head→dep";
  return direction;
}

std::string signed_offset(int offset) { return (offset > 0 ? "+" : "") + std::to_string(offset); }

// ---- layer × head grids --------------------------------------------------------------------------

struct GridMeasure {
  std::string metric;  // the settings metric that enables it
  std::string key;     // file name part
  std::string title;
  std::string role_note;  // what an outlined cell means
  bool unit = false;      // a share: colours over [0, 1]
  std::function<std::optional<double>(const HeadEntry&)> value;
  std::function<std::string(const HeadEntry&)> detail;  // a second line in big cells
  std::function<bool(const HeadEntry&)> role;
};

std::vector<GridMeasure> grid_measures(const ReportSettings& s) {
  auto any_role = [](const HeadEntry& h) { return !h.roles.empty(); };
  auto none = [](const HeadEntry&) { return std::string(); };
  std::vector<GridMeasure> m;
  m.push_back({"confidence", "confidence", "Confidence: mean maximum attention weight", "outlined: heads with a role",
               true,
               [](const HeadEntry& h) { return h.queries > 0 ? std::optional<double>(h.confidence) : std::nullopt; },
               none, any_role});
  m.push_back({"positional", "positional_share", "Positional share: queries whose maximum is at the top offset",
               "outlined: positional heads (≥ " + format("%.0f", 100 * s.positional_threshold) +
                   "% at one offset); small: the offset",
               true,
               [](const HeadEntry& h) { return h.queries > 0 ? std::optional<double>(h.positional_share) : std::nullopt; },
               [](const HeadEntry& h) { return h.queries > 0 ? signed_offset(h.positional_offset) : std::string(); },
               [](const HeadEntry& h) { return h.positional; }});
  m.push_back({"rare", "rare_share", "Rare-word share: queries whose maximum is on the rarest token",
               "outlined: rare-word heads (> " + format("%.0f", 100 * s.rare_threshold) + "%, HeadLab's threshold)", true,
               [](const HeadEntry& h) { return h.rare_queries > 0 ? std::optional<double>(h.rare_share) : std::nullopt; },
               none, [](const HeadEntry& h) { return h.rare; }});
  m.push_back({"syntactic", "best_relation_gain", "Best relation: accuracy − positional baseline",
               "outlined: syntactic heads (≥ baseline + " + format("%.0f", 100 * s.syntactic_margin) +
                   " points); small: the relation",
               false,
               [](const HeadEntry& h) {
                 return h.best_relation ? std::optional<double>(h.best_relation->accuracy - h.best_relation->baseline)
                                        : std::nullopt;
               },
               [](const HeadEntry& h) {
                 return h.best_relation ? h.best_relation->relation + " " +
                                              (h.best_relation->direction == "dependent->head" ? "d→h" : "h→d")
                                        : std::string();
               },
               has_syntactic_role});
  m.push_back({"lrp", "lrp_normalized", "LRP relevance, normalised within the layer", "outlined: heads with a role",
               false,
               [](const HeadEntry& h) {
                 return h.lrp_sentences > 0 ? std::optional<double>(h.lrp_normalized) : std::nullopt;
               },
               none, any_role});
  m.push_back({"importance", "importance", "Importance: mean |∂loss/∂gate|", "outlined: heads with a role", false,
               [](const HeadEntry& h) {
                 return h.importance_sentences > 0 ? std::optional<double>(h.importance) : std::nullopt;
               },
               none, any_role});
  return m;
}

std::string cell_value(double v, bool unit) {
  if (unit) return format("%.2f", v);
  if (v == 0) return "0";
  return std::abs(v) >= 0.01 && std::abs(v) < 1000 ? format("%.3g", v) : format("%.1e", v);
}

void grid_figure(const HeadReport& report, const GridMeasure& measure, const std::string& stack, bool name_stack,
                 const std::string& folder, std::vector<std::string>& written) {
  std::vector<const HeadEntry*> heads;
  int layers = 0, per_layer = 0;
  bool any = false;
  for (const auto& h : report.heads)
    if (h.stack == stack) {
      heads.push_back(&h);
      layers = std::max(layers, h.layer + 1);
      per_layer = std::max(per_layer, h.head + 1);
      any = any || measure.value(h).has_value();
    }
  if (!any) return;

  Range range{0, 1};
  if (!measure.unit) {
    // Zero stays in the scale so that the colour says which side of zero a head is on.
    double lo = 0, hi = 0;
    for (const auto* h : heads)
      if (const auto v = measure.value(*h)) lo = std::min(lo, *v), hi = std::max(hi, *v);
    range = {lo, hi > lo ? hi : lo + 1};
  }

  Measure m;
  const double margin = 16, title_size = 13, label_size = 10, tick = 9;
  const double cell = std::clamp(std::min(600.0 / per_layer, 600.0 / layers), 10.0, 56.0);
  const double grid_w = per_layer * cell, grid_h = layers * cell;
  const std::string title = measure.title + (name_stack ? " (" + stack + ")" : "");
  const std::string subtitle = (name_stack ? "" : stack + " · ") + measure.role_note;
  // Row labels: every layer when they fit, else every k-th.
  const int row_every = cell >= 12 ? 1 : int(std::ceil(12 / cell));
  const int col_every = std::max(1, int(std::ceil((m.width(std::to_string(per_layer - 1), tick) + 4) / cell)));
  const double row_label_w = m.width(std::to_string(layers - 1), tick) + 6;
  const double axis_label_h = label_size + 6;
  const double left = margin + axis_label_h + row_label_w;
  const double top = margin + title_size + 6 + 9 + 12;
  const double bar_h = std::max(grid_h, 100.0);
  const double bar_x = left + grid_w + 16;
  const double width = std::max({bar_x + colour_bar_width(m, range) + margin, margin * 2 + m.width(title, title_size, true),
                                 margin * 2 + m.width(subtitle, 9)});
  const double height = top + std::max(grid_h + tick + 4 + axis_label_h, bar_h) + margin;

  auto draw = [&](cairo_t* cr) {
    set(cr, kBlack);
    text(cr, margin, margin, title, title_size, 0, 0, 0, true);
    set(cr, kGray);
    text(cr, margin, margin + title_size + 6, subtitle, 9, 0, 0);
    const bool values = cell >= 30;
    for (const auto* h : heads) {
      const double x = left + h->head * cell, y = top + h->layer * cell;
      const auto v = measure.value(*h);
      const Colour c = v ? viridis(range.t(*v)) : kLightGray;
      set(cr, c);
      cairo_rectangle(cr, x, y, cell, cell);
      cairo_fill(cr);
      if (values) {
        set(cr, v && is_dark(c) ? Colour{1, 1, 1} : kBlack);
        const std::string label = v ? cell_value(*v, measure.unit) : "–";
        const double size = std::min(10.0, cell * 0.24);
        const std::string detail = v && measure.detail ? measure.detail(*h) : "";
        const bool two = !detail.empty() && cell >= 40 && m.width(detail, size * 0.8) <= cell - 4;
        if (m.width(label, size) <= cell - 4)
          text(cr, x + cell / 2, y + cell / 2 - (two ? size * 0.45 : 0), label, size, 0.5, 0.5);
        if (two) text(cr, x + cell / 2, y + cell / 2 + size * 0.7, detail, size * 0.8, 0.5, 0.5);
      }
    }
    // Thin white separators, then the role outlines over them.
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_set_line_width(cr, std::min(1.0, cell * 0.06));
    for (int l = 1; l < layers; ++l) {
      cairo_move_to(cr, left, top + l * cell);
      cairo_line_to(cr, left + grid_w, top + l * cell);
    }
    for (int h = 1; h < per_layer; ++h) {
      cairo_move_to(cr, left + h * cell, top);
      cairo_line_to(cr, left + h * cell, top + grid_h);
    }
    cairo_stroke(cr);
    const double outline = std::clamp(cell * 0.06, 1.0, 2.5);
    cairo_set_line_width(cr, outline);
    set(cr, kRoleOutline);
    for (const auto* h : heads)
      if (measure.role(*h)) {
        // Inset past the separator, so that neighbouring role cells keep their own outlines.
        const double inset = outline / 2 + 0.75;
        cairo_rectangle(cr, left + h->head * cell + inset, top + h->layer * cell + inset, cell - 2 * inset,
                        cell - 2 * inset);
        cairo_stroke(cr);
      }
    // Axes: layers down the left, heads along the bottom.
    set(cr, kBlack);
    for (int l = 0; l < layers; l += row_every)
      text(cr, left - 4, top + (l + 0.5) * cell, std::to_string(l), tick, 1, 0.5);
    for (int h = 0; h < per_layer; h += col_every)
      text(cr, left + (h + 0.5) * cell, top + grid_h + 3, std::to_string(h), tick, 0.5, 0);
    text(cr, left + grid_w / 2, top + grid_h + tick + 6, "head", label_size, 0.5, 0);
    text(cr, margin, top + grid_h / 2, "layer", label_size, 0.5, 0, -M_PI / 2);
    colour_bar(cr, bar_x, top, bar_h, range);
  };
  const std::string name = "grid_" + measure.key + (name_stack ? "_" + file_part(stack) : "");
  write_figure(folder, name, title, width, height, draw, written);
}

// ---- syntactic heads against baselines -----------------------------------------------------------

struct RelationBar {
  std::string label;  // relation and direction (and stack when several)
  std::string head;   // "L3 H2"
  double accuracy = 0, baseline = 0;
  int baseline_offset = 0;
  bool role = false;
};

std::vector<RelationBar> relation_bars(const HeadReport& report) {
  std::vector<RelationBar> bars;
  const bool several_stacks = stacks_of(report).size() > 1;
  for (const auto& best : best_heads_per_relation(report)) {
    const SyntacticScore& score = *best.score;
    RelationBar b;
    b.label = (several_stacks ? best.stack + ": " : "") + score.relation + " " + short_direction(score.direction);
    b.head = "L" + std::to_string(best.head->layer) + " H" + std::to_string(best.head->head);
    b.accuracy = score.accuracy;
    b.baseline = score.baseline;
    b.baseline_offset = score.baseline_offset;
    b.role = score.is_role;
    bars.push_back(b);
  }
  return bars;
}

void syntactic_figure(const HeadReport& report, const std::string& folder, std::vector<std::string>& written) {
  const auto bars = relation_bars(report);
  if (bars.empty()) return;
  const auto& s = report.settings;
  Measure m;
  const double margin = 16, title_size = 13, small = 8, label_size = 9;
  const double bar_w = 14, group_w = 2 * bar_w + 12, plot_h = 240;
  const Colour accuracy_colour = viridis(0.25);
  const std::string title = "Syntactic heads against the positional baseline";
  const std::string legend_acc = "best head's accuracy", legend_base =
      "baseline: best fixed offset −" + std::to_string(s.baseline_max_offset) + "…+" +
      std::to_string(s.baseline_max_offset) + " (offset above the bar)";
  const std::string legend_role = "* syntactic head: accuracy ≥ baseline + " + format("%.0f", 100 * s.syntactic_margin) +
                                  " points";
  double label_w = 0, head_w = 0;
  for (const auto& b : bars) {
    label_w = std::max(label_w, m.width(b.label, label_size));
    head_w = std::max(head_w, m.width(b.head + " *", small));
  }
  const double y_label_w = m.width("1.0", small) + 6;
  const double left = margin + label_size + 8 + y_label_w;
  const double legend_top = margin + title_size + 8;
  const double top = legend_top + 3 * 13 + 6 + head_w + 4;  // room for a vertical head label over a full bar
  const double plot_w = bars.size() * group_w + 12;
  const double width = std::max({left + plot_w + margin, margin * 2 + m.width(title, title_size, true),
                                 margin * 2 + 16 + std::max({m.width(legend_acc, small), m.width(legend_base, small),
                                                            m.width(legend_role, small)})});
  const double height = top + plot_h + 6 + label_w + margin;

  auto draw = [&](cairo_t* cr) {
    set(cr, kBlack);
    text(cr, margin, margin, title, title_size, 0, 0, 0, true);
    // Legend.
    const double lx = margin;
    set(cr, accuracy_colour);
    cairo_rectangle(cr, lx, legend_top + 1, 10, 8);
    cairo_fill(cr);
    set(cr, kBaseline);
    cairo_rectangle(cr, lx, legend_top + 14, 10, 8);
    cairo_fill(cr);
    set(cr, kBlack);
    text(cr, lx + 16, legend_top + 5, legend_acc, small, 0, 0.5);
    text(cr, lx + 16, legend_top + 18, legend_base, small, 0, 0.5);
    text(cr, lx + 16, legend_top + 31, legend_role, small, 0, 0.5);
    // Axis and grid lines.
    int decimals = 0;
    cairo_set_line_width(cr, 0.6);
    for (double v : nice_ticks(0, 1, 5, &decimals)) {
      const double y = top + plot_h * (1 - v);
      set(cr, kGridLine);
      cairo_move_to(cr, left, y);
      cairo_line_to(cr, left + plot_w, y);
      cairo_stroke(cr);
      set(cr, kBlack);
      text(cr, left - 4, y, tick_label(v, decimals), small, 1, 0.5);
    }
    text(cr, margin, top + plot_h / 2, "accuracy (share of arcs)", label_size, 0.5, 0, -M_PI / 2);
    for (size_t i = 0; i < bars.size(); ++i) {
      const auto& b = bars[i];
      const double x = left + 6 + i * group_w;
      const double ha = plot_h * std::clamp(b.accuracy, 0.0, 1.0), hb = plot_h * std::clamp(b.baseline, 0.0, 1.0);
      set(cr, accuracy_colour);
      cairo_rectangle(cr, x, top + plot_h - ha, bar_w, ha);
      cairo_fill(cr);
      set(cr, kBaseline);
      cairo_rectangle(cr, x + bar_w, top + plot_h - hb, bar_w, hb);
      cairo_fill(cr);
      set(cr, kBlack);
      text(cr, x + bar_w / 2, top + plot_h - ha - 3, b.head + (b.role ? " *" : ""), small, 0, 0.5, -M_PI / 2,
           b.role);
      text(cr, x + 1.5 * bar_w, top + plot_h - hb - 2, signed_offset(b.baseline_offset), 7, 0.5, 1);
      text(cr, x + bar_w, top + plot_h + 5, b.label, label_size, 1, 0.5, -M_PI / 2);
    }
    set(cr, kBlack);
    cairo_set_line_width(cr, 0.8);
    cairo_move_to(cr, left, top);
    cairo_line_to(cr, left, top + plot_h);
    cairo_line_to(cr, left + plot_w, top + plot_h);
    cairo_stroke(cr);
  };
  write_figure(folder, "syntactic_baselines", title, width, height, draw, written);
}

// ---- spectra -------------------------------------------------------------------------------------

struct Curve {
  std::vector<double> ratios;  // σ_k / σ_1
  const Spectrum* spectrum = nullptr;
  Colour colour;
  int dash = 0;  // stack index: solid, dashed, dotted
};

constexpr double kFloor = 1e-6;  // σ_k/σ_1 below this is numerical zero: drawn at the floor

std::vector<double> ratios_of(const Spectrum& s) {
  std::vector<double> r;
  if (s.singular_values.empty() || !(s.singular_values[0] > 0)) return r;
  for (double v : s.singular_values) r.push_back(v / s.singular_values[0]);
  return r;
}

void set_dash(cairo_t* cr, int style) {
  static const double dashed[] = {5, 3}, dotted[] = {1.2, 2.2};
  if (style % 3 == 1) cairo_set_dash(cr, dashed, 2, 0);
  else if (style % 3 == 2) cairo_set_dash(cr, dotted, 2, 0);
  else cairo_set_dash(cr, nullptr, 0, 0);
}

// Rank markers: circle (90%), square (95%), triangle (99%).
void marker(cairo_t* cr, int kind, double x, double y, double r) {
  if (kind == 0) {
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

struct Panel {
  std::string title;
  std::vector<Curve> curves;
  size_t k_max = 1;
  std::vector<double> x_ticks;
};

void spectra_figure(const HeadReport& report, const std::string& folder, std::vector<std::string>& written) {
  const auto stacks = stacks_of(report);
  std::map<std::string, int> layers_of;
  for (const auto& h : report.heads) layers_of[h.stack] = std::max(layers_of[h.stack], h.layer + 1);
  for (const auto& l : report.layers) layers_of[l.stack] = std::max(layers_of[l.stack], l.layer + 1);
  auto stack_index = [&](const std::string& s) {
    return int(std::find(stacks.begin(), stacks.end(), s) - stacks.begin());
  };
  // Layer colours run over viridis 0…0.85 (its yellow end is hard to see on white).
  auto layer_colour = [&](const std::string& stack, int layer) {
    const int n = layers_of[stack];
    return viridis(n > 1 ? 0.85 * layer / (n - 1) : 0.0);
  };
  Panel heads, layers;
  heads.title = "Per head: W_Q W_Kᵀ of each head";
  layers.title = "Per layer: W_Q W_Kᵀ over the layer's heads";
  for (const auto& h : report.heads)
    if (h.spectrum && h.spectrum->applicable) {
      auto r = ratios_of(*h.spectrum);
      if (!r.empty()) heads.curves.push_back({r, &*h.spectrum, layer_colour(h.stack, h.layer), stack_index(h.stack)});
    }
  for (const auto& l : report.layers) {
    auto r = ratios_of(l.product);
    if (!r.empty()) layers.curves.push_back({r, &l.product, layer_colour(l.stack, l.layer), stack_index(l.stack)});
  }
  std::vector<Panel> panels;
  for (auto* p : {&heads, &layers})
    if (!p->curves.empty()) panels.push_back(*p);
  if (panels.empty()) return;

  // Per panel, k runs from 1 to the last index above the floor (a head's form has at most d_k
  // non-zero values, the layer's far more); y in whole decades down to the floor, shared.
  double y_min = 1;
  for (auto& p : panels)
    for (const auto& c : p.curves) {
      size_t last = 1;
      for (size_t k = 0; k < c.ratios.size(); ++k)
        if (c.ratios[k] >= kFloor) last = k + 1, y_min = std::min(y_min, c.ratios[k]);
      // One index past a drop to zero, so that the drop shows.
      p.k_max = std::max(p.k_max, std::min(c.ratios.size(), last + 1));
    }
  const double decade_lo = std::min(-1.0, std::floor(std::log10(std::max(y_min, kFloor)) - 1e-9));
  for (auto& p : panels) {
    int decimals = 0;
    p.x_ticks = nice_ticks(1, double(p.k_max), 6, &decimals);
    p.x_ticks.erase(std::remove_if(p.x_ticks.begin(), p.x_ticks.end(),
                                   [](double v) { return v < 1 || v != std::floor(v); }),
                    p.x_ticks.end());
    if (p.x_ticks.empty() || p.x_ticks.front() != 1) p.x_ticks.insert(p.x_ticks.begin(), 1);
  }

  Measure m;
  const double margin = 16, title_size = 13, panel_title = 10, small = 8, label_size = 9;
  const double plot_w = 340, plot_h = 250, gap = 44;
  const double y_label_w = m.width("1e-10", small) + 6;
  const double left = margin + label_size + 8 + y_label_w;
  const double top = margin + title_size + 10 + 14 + panel_title + 10;
  const std::string title = "Key-query spectra: normalised singular values σ_k / σ_1";
  const std::string note = "ranks where Σσ² reaches  ● 90%   ■ 95%   ▲ 99%;  colour: layer" +
                           std::string(stacks.size() > 1 ? "; line: stack" : "");
  // Legend under the plots: layer swatches (or a gradient) per stack and, with several stacks, dashes.
  const double legend_top = top + plot_h + small + 6 + label_size + 12;
  const double legend_h = 14.0 * stacks.size();
  const double width = std::max({left + panels.size() * plot_w + (panels.size() - 1) * (gap + y_label_w) + margin,
                                 margin * 2 + m.width(title, title_size, true), margin * 2 + m.width(note, small) + 20,
                                 margin * 2 + 420.0});
  const double height = legend_top + legend_h + margin;

  auto draw = [&](cairo_t* cr) {
    set(cr, kBlack);
    text(cr, margin, margin, title, title_size, 0, 0, 0, true);
    // The note, with its markers drawn as the curves' markers are.
    set(cr, kGray);
    text(cr, margin, margin + title_size + 10, note, small, 0, 0);
    for (size_t pi = 0; pi < panels.size(); ++pi) {
      const Panel& p = panels[pi];
      const double x0 = left + pi * (plot_w + gap + y_label_w), y0 = top;
      const size_t k_max = p.k_max;
      const auto& x_ticks = p.x_ticks;
      auto px = [&](double k) { return k_max > 1 ? x0 + plot_w * (k - 1) / double(k_max - 1) : x0 + plot_w / 2; };
      auto py = [&](double ratio) {
        const double l = std::log10(std::max(ratio, std::pow(10.0, decade_lo)));
        return y0 + plot_h * (0 - l) / (0 - decade_lo);
      };
      set(cr, kBlack);
      text(cr, x0, y0 - 8, p.title, panel_title, 0, 1, 0, true);
      // Decade grid lines and labels.
      cairo_set_line_width(cr, 0.6);
      const int decades = int(-decade_lo);
      const int every = decades > 8 ? 2 : 1;
      for (int d = 0; d <= decades; d += every) {
        const double y = py(std::pow(10.0, -d));
        set(cr, kGridLine);
        cairo_move_to(cr, x0, y);
        cairo_line_to(cr, x0 + plot_w, y);
        cairo_stroke(cr);
        set(cr, kBlack);
        text(cr, x0 - 4, y, d == 0 ? "1" : "1e-" + std::to_string(d), small, 1, 0.5);
      }
      for (double k : x_ticks) {
        set(cr, kBlack);
        cairo_move_to(cr, px(k), y0 + plot_h);
        cairo_line_to(cr, px(k), y0 + plot_h + 3);
        cairo_stroke(cr);
        text(cr, px(k), y0 + plot_h + 4, format("%.0f", k), small, 0.5, 0);
      }
      text(cr, x0 + plot_w / 2, y0 + plot_h + small + 8, "k (singular value index)", label_size, 0.5, 0);
      text(cr, x0 - y_label_w - label_size - 6, y0 + plot_h / 2, "σ_k / σ_1 (log scale)", label_size, 0.5, 0,
           -M_PI / 2);
      // Curves, clipped to the plot.
      cairo_save(cr);
      cairo_rectangle(cr, x0, y0 - 1, plot_w, plot_h + 2);
      cairo_clip(cr);
      cairo_set_line_width(cr, p.curves.size() > 48 ? 0.8 : 1.3);
      for (const auto& c : p.curves) {
        set(cr, c.colour, 0.85);
        set_dash(cr, c.dash);
        const size_t n = std::min(c.ratios.size(), k_max);
        for (size_t k = 0; k < n; ++k) {
          const double x = px(double(k + 1)), y = py(c.ratios[k]);
          if (k == 0) cairo_move_to(cr, x, y);
          else cairo_line_to(cr, x, y);
          if (c.ratios[k] < kFloor) break;  // numerical zero from here on
        }
        cairo_stroke(cr);
      }
      cairo_set_dash(cr, nullptr, 0, 0);
      const double r = p.curves.size() > 48 ? 2.0 : 2.8;
      cairo_set_line_width(cr, 0.5);
      for (const auto& c : p.curves) {
        const int ranks[3] = {c.spectrum->rank90, c.spectrum->rank95, c.spectrum->rank99};
        for (int kind = 0; kind < 3; ++kind) {
          const int k = ranks[kind];
          if (k < 1 || size_t(k) > c.ratios.size() || size_t(k) > k_max) continue;
          marker(cr, kind, px(k), py(c.ratios[size_t(k) - 1]), r);
          set(cr, c.colour);
          cairo_fill_preserve(cr);
          set(cr, kBlack);
          cairo_stroke(cr);
        }
      }
      cairo_restore(cr);
      set(cr, kBlack);
      cairo_set_line_width(cr, 0.8);
      cairo_rectangle(cr, x0, y0, plot_w, plot_h);
      cairo_stroke(cr);
    }
    // Legend: per stack, its layers' colours.
    for (size_t si = 0; si < stacks.size(); ++si) {
      const std::string& stack = stacks[si];
      const int n = layers_of[stack];
      const double y = legend_top + si * 14;
      double x = margin;
      set(cr, kBlack);
      const std::string name = stack + " layers";
      text(cr, x, y + 4, name, small, 0, 0.5);
      x += m.width(name, small) + 6;
      if (stacks.size() > 1) {
        cairo_set_line_width(cr, 1.3);
        set_dash(cr, int(si));
        cairo_move_to(cr, x, y + 4);
        cairo_line_to(cr, x + 22, y + 4);
        cairo_stroke(cr);
        cairo_set_dash(cr, nullptr, 0, 0);
        x += 28;
      }
      if (n <= 16) {
        for (int l = 0; l < n; ++l) {
          set(cr, layer_colour(stack, l));
          cairo_rectangle(cr, x, y, 10, 8);
          cairo_fill(cr);
          set(cr, kBlack);
          text(cr, x + 12, y + 4, std::to_string(l), small, 0, 0.5);
          x += 14 + m.width(std::to_string(l), small) + 6;
        }
      } else {
        set(cr, kBlack);
        text(cr, x, y + 4, "0", small, 0, 0.5);
        x += m.width("0", small) + 4;
        draw_image(cr, 256, 1, [&](int, int c) { return viridis(0.85 * (c + 0.5) / 256.0); }, x, y, 160, 8);
        x += 164;
        text(cr, x, y + 4, std::to_string(n - 1), small, 0, 0.5);
      }
    }
  };
  write_figure(folder, "spectra", title, width, height, draw, written);
}

// ---- example maps --------------------------------------------------------------------------------

void map_figure(const ExampleMap& map, const std::string& name, const std::string& folder,
                std::vector<std::string>& written) {
  const int T = int(map.tokens.size());
  const std::string who = "L" + std::to_string(map.layer) + " H" + std::to_string(map.head);
  if (T == 0 || map.weights.size() != size_t(T) * size_t(T))
    throw std::runtime_error("example map " + who + " (" + map.stack + "): " + std::to_string(map.weights.size()) +
                             " weights for " + std::to_string(T) + " tokens (want tokens²)");
  float hi = 0;
  for (float w : map.weights)
    if (std::isfinite(w)) hi = std::max(hi, w);
  const Range range{0, hi > 0 ? double(hi) : 1.0};

  Measure m;
  const double margin = 16, title_size = 13, label_size = 10, small = 9;
  const double cell = std::clamp(520.0 / T, 2.0, 24.0);
  const double token_size = std::min(10.0, cell * 0.75);
  const bool labels = token_size >= 4.5;
  std::vector<std::string> tokens;
  double token_w = 0;
  for (const auto& t : map.tokens) {
    tokens.push_back(printable(t, 18));
    if (labels) token_w = std::max(token_w, m.width(tokens.back(), token_size));
  }
  const std::string title = who + " — " + (map.why.empty() ? "example" : printable(map.why));
  const std::string subtitle = map.stack + " · attention weights (rows: queries, columns: keys)";
  const double side = T * cell;
  const double left = margin + label_size + 8 + token_w + 4;
  const double top = margin + title_size + 8 + 12 + label_size + 8 + token_w + 4;
  const double bar_x = left + side + 16;
  const double bar_h = std::max(side, 100.0);
  const double width = std::max({bar_x + colour_bar_width(m, range) + margin, margin * 2 + m.width(title, title_size, true),
                                 margin * 2 + m.width(subtitle, small)});
  const double height = top + bar_h + margin;

  auto draw = [&](cairo_t* cr) {
    set(cr, kBlack);
    text(cr, margin, margin, title, title_size, 0, 0, 0, true);
    set(cr, kGray);
    text(cr, margin, margin + title_size + 8, subtitle, small, 0, 0);
    draw_image(cr, T, T, [&](int r, int c) { return viridis(range.t(map.weights[size_t(r) * T + c])); }, left, top,
               side, side);
    set(cr, kBlack);
    if (labels) {
      for (int i = 0; i < T; ++i) {
        text(cr, left - 4, top + (i + 0.5) * cell, tokens[i], token_size, 1, 0.5);
        text(cr, left + (i + 0.5) * cell, top - 4, tokens[i], token_size, 0, 0.5, -M_PI / 2);
      }
    }
    text(cr, left + side / 2, top - token_w - 8, "key", label_size, 0.5, 1);
    text(cr, margin, top + side / 2, "query", label_size, 0.5, 0, -M_PI / 2);
    colour_bar(cr, bar_x, top, bar_h, range);
  };
  write_figure(folder, name, title, width, height, draw, written);
}

}  // namespace

std::vector<std::string> write_report_figures(const HeadReport& report, const std::vector<ExampleMap>& examples,
                                              const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw std::runtime_error(folder + ": " + ec.message());
  std::vector<std::string> written;
  const auto& s = report.settings;
  const auto stacks = stacks_of(report);
  for (const auto& measure : grid_measures(s))
    if (s.has(measure.metric))
      for (const auto& stack : stacks) grid_figure(report, measure, stack, stacks.size() > 1, folder, written);
  if (s.has("syntactic")) syntactic_figure(report, folder, written);
  if (s.has("spectra")) spectra_figure(report, folder, written);
  std::set<std::string> names;
  for (const auto& map : examples) {
    const std::string base =
        "map_" + file_part(map.stack) + "_L" + std::to_string(map.layer) + "_H" + std::to_string(map.head);
    std::string name = base;
    for (int i = 2; names.count(name); ++i) name = base + "_" + std::to_string(i);
    names.insert(name);
    map_figure(map, name, folder, written);
  }
  return written;
}

}  // namespace headlab::analysis
