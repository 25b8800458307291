// The head report's figures, drawn with cairo onto an SVG surface and a PNG image surface (the PNG at
// twice the SVG's point size). Every figure is one draw function run on both surfaces, so the two
// files show the same thing.
#include "analysis/report_figures.h"

#include "analysis/figure_kit.h"
#include "analysis/measure.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace headlab::analysis {
namespace {

using namespace figure_kit;

// ---- layer × head grids --------------------------------------------------------------------------

// The grids are the measures' (analysis/measure.h, GridFigureSpec).
using GridMeasure = GridFigureSpec;

// A share is cut (not rounded) to two decimals: 0.495 reads 0.49, so a head just under a threshold
// of 0.50 never shows "0.50" without its outline.
std::string cell_value(double v, bool unit) {
  if (unit) return format("%.2f", std::trunc(v * 100 + (v >= 0 ? 1e-9 : -1e-9)) / 100);
  if (v == 0) return "0";
  return std::abs(v) >= 0.01 && std::abs(v) < 1000 ? format("%.3g", v) : format("%.1e", v);
}

// Where a drawn figure goes: the report's folder (SVG and PNG) or one file.
using FigureOut = std::function<void(const std::string& title, double width, double height, const Draw& draw)>;

// A layer × head grid of `measure` over `stack`'s heads; `fixed`, when set, is the colour scale (a
// column's), else [0, 1] for a share and the values' range with zero in it otherwise.
void grid_figure(const HeadReport& report, const GridMeasure& measure, core::Stack stack, bool name_stack,
                 const std::optional<Range>& fixed, Colour (*colour)(double), const FigureOut& out) {
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
  if (fixed) {
    range = *fixed;
  } else if (!measure.unit) {
    // Zero stays in the scale so that the colour says which side of zero a head is on.
    double lo = 0, hi = 0;
    for (const auto* h : heads)
      if (const auto v = measure.value(*h)) lo = std::min(lo, *v), hi = std::max(hi, *v);
    range = {lo, hi > lo ? hi : lo + 1};
  }

  figure_kit::Measure m;
  const double margin = 16, title_size = 13, label_size = 10, tick = 9;
  const double cell = std::clamp(std::min(600.0 / per_layer, 600.0 / layers), 10.0, 56.0);
  const double grid_w = per_layer * cell, grid_h = layers * cell;
  const std::string title = measure.title + (name_stack ? " (" + std::string(core::stack_name(stack)) + ")" : "");
  std::string subtitle = name_stack ? "" : core::stack_name(stack);
  if (!measure.role_note.empty()) subtitle += (subtitle.empty() ? "" : " · ") + measure.role_note;
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
      const Colour c = v ? colour(range.t(*v)) : kLightGray;
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
    colour_bar(cr, bar_x, top, bar_h, range, colour);
  };
  out(title, width, height, draw);
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
    b.label = (several_stacks ? std::string(core::stack_name(best.stack)) + ": " : "") + score.relation + " " + short_direction(score.direction);
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
  figure_kit::Measure m;
  const double margin = 16, title_size = 13, small = 8, label_size = 9;
  const double bar_w = 14, group_w = 2 * bar_w + 12, plot_h = 240;
  const Colour accuracy_colour = viridis_colour(0.25);
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

}  // namespace

namespace {

// A report written over another (analyze --force, the window's Export report → Replace) leaves none
// of the earlier report's figures beside its own: a figure names no model, and a stale one would
// read as this report's. Only the file names reports write (grid_*, map_*, spectra,
// syntactic_baselines; .svg and .png) that this report did not write go.
void remove_other_report_figures(const std::string& folder, const std::vector<std::string>& written) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::filesystem::path& path = entry.path();
    const std::string name = path.filename().string(), stem = path.stem().string(), ext = path.extension().string();
    if (ext != ".svg" && ext != ".png") continue;
    const bool report_figure = stem.rfind("grid_", 0) == 0 || stem.rfind("map_", 0) == 0 || stem == "spectra" ||
                               stem == "syntactic_baselines";
    if (!report_figure || std::find(written.begin(), written.end(), name) != written.end()) continue;
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
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
  const auto columns = report_columns(s);
  for (const analysis::Measure* m : measures_of(s))
    for (const auto& grid : m->grids(s)) {
      // A grid of a column with a fixed range (the copying score's −1 … 1) spans it, as the window's
      // grid coloured by that column does.
      std::optional<Range> fixed;
      for (const auto& c : columns)
        if (grid.key == c.name && c.lo < c.hi) fixed = Range{c.lo, c.hi};
      for (const auto& stack : stacks) {
        const std::string name = "grid_" + grid.key + (stacks.size() > 1 ? "_" + file_part(core::stack_name(stack)) : "");
        grid_figure(report, grid, stack, stacks.size() > 1, fixed, viridis_colour,
                    [&](const std::string& title, double width, double height, const Draw& draw) {
                      write_figure(folder, name, title, width, height, draw, written);
                    });
      }
    }
  if (s.has("syntactic")) syntactic_figure(report, folder, written);
  if (s.has("spectra")) spectra_figure(report, folder, written);
  std::set<std::string> names;
  for (const auto& map : examples) {
    const std::string base =
        "map_" + file_part(core::stack_name(map.stack)) + "_L" + std::to_string(map.layer) + "_H" + std::to_string(map.head);
    std::string name = base;
    for (int i = 2; names.count(name); ++i) name = base + "_" + std::to_string(i);
    names.insert(name);
    map_figure(map, name, folder, written);
  }
  remove_other_report_figures(folder, written);
  return written;
}

void write_column_grid(const HeadReport& report, const std::string& column, core::Stack stack, bool gray,
                       const std::string& title, const std::string& subtitle, const std::string& path) {
  const auto columns = report_columns(report.settings);
  const auto found = std::find_if(columns.begin(), columns.end(), [&](const ReportColumn& c) { return column == c.name; });
  if (found == columns.end() || !found->numeric)
    throw std::invalid_argument("export " + path + ": the report has no numeric column '" + column + "'");
  const ReportColumn col = *found;
  GridMeasure spec;
  spec.key = column;
  spec.title = title;
  spec.role_note = subtitle;
  spec.value = [col](const HeadEntry& h) { return col.cell(h).number(); };
  spec.role = [](const HeadEntry&) { return false; };
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& h : report.heads)
    if (h.stack == stack)
      if (const auto v = spec.value(h); v && std::isfinite(*v)) lo = std::min(lo, *v), hi = std::max(hi, *v);
  const auto [scale_lo, scale_hi] = colour_scale(col, lo, hi);
  grid_figure(report, spec, stack, false, Range{scale_lo, scale_hi}, gray ? gray_colour : viridis_colour,
              [&](const std::string& t, double width, double height, const Draw& draw) {
                write_figure_file(path, t, width, height, draw);
              });
}

}  // namespace headlab::analysis
