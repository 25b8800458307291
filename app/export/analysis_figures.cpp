// The Analyse views' figures, drawn with analysis/figure_kit.h (text, ticks, markers, surfaces) and
// the window's axis logic (app/state/plot_axes.h), so a file shows what the view shows.
#include "app/export/analysis_figures.h"

#include "analysis/figure_kit.h"
#include "analysis/head_stats.h"
#include "app/state/arc_layout.h"
#include "app/state/head_detail.h"
#include "app/state/head_table.h"
#include "app/state/plot_axes.h"
#include "app/state/relevance_colors.h"

namespace headlab::app {
namespace {

using namespace analysis::figure_kit;

constexpr double kMargin = 16, kTitleSize = 13, kPanelTitle = 10, kSmall = 8, kLabel = 9;

Colour rgb(int r, int g, int b) { return {r / 255.0, g / 255.0, b / 255.0}; }
Colour rgb(const Rgb& c) { return rgb(c.r, c.g, c.b); }

const Colour kHead = rgb(31, 119, 180), kThreshold = rgb(230, 160, 20), kWhite{1, 1, 1};

// matplotlib's tab10 for the first ten heads (as the window's head colours), then golden-ratio hues.
Colour head_rgb(int head) {
  static const int tab10[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                              0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  if (head >= 0 && head < 10) return rgb((tab10[head] >> 16) & 255, (tab10[head] >> 8) & 255, tab10[head] & 255);
  const double h = std::fmod(head * 0.61803, 1.0) * 6, s = 0.65, v = 0.9;
  const double c = v * s, x = c * (1 - std::abs(std::fmod(h, 2.0) - 1)), m = v - c;
  const int i = int(h) % 6;
  const double r[] = {c, x, 0, 0, x, c}, g[] = {x, c, c, x, 0, 0}, b[] = {0, 0, x, c, c, x};
  return {r[i] + m, g[i] + m, b[i] + m};
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

void title_row(cairo_t* cr, const std::string& title) {
  set(cr, kBlack);
  text(cr, kMargin, kMargin, printable(title), kTitleSize, 0, 0, 0, true);
}

double title_width(Measure& m, const std::string& title) {
  return 2 * kMargin + m.width(printable(title), kTitleSize, true) + 2;
}

// ---- plot panels ---------------------------------------------------------------------------------

// A data area with its axes: x and y ranges mapped onto [x, x + w] × [y + h, y].
struct Frame {
  double x = 0, y = 0, w = 0, h = 0;
  AxisRange xr, yr;
  bool y_log = false;
  double px(double v) const { return to_pixel(v, xr, x, x + w, false); }
  double py(double v) const { return to_pixel(v, yr, y + h, y, y_log); }
};

double tick_labels_width(Measure& m, const std::vector<Tick>& ticks) {
  double w = 0;
  for (const auto& t : ticks) w = std::max(w, m.width(t.label, kSmall));
  return w;
}

// Grid lines and labels at the y ticks, the frame, the y axis label (rotated) left of the labels.
void y_axis(cairo_t* cr, const Frame& f, const std::vector<Tick>& ticks, const std::string& label, double label_w) {
  cairo_set_line_width(cr, 0.6);
  for (const auto& t : ticks) {
    const double y = f.py(t.value);
    if (!std::isfinite(y) || y < f.y - 0.5 || y > f.y + f.h + 0.5) continue;
    set(cr, t.major ? kGridLine : Colour{0.95, 0.95, 0.95});
    cairo_move_to(cr, f.x, y);
    cairo_line_to(cr, f.x + f.w, y);
    cairo_stroke(cr);
    if (!t.label.empty()) {
      set(cr, kBlack);
      text(cr, f.x - 4, y, t.label, kSmall, 1, 0.5);
    }
  }
  set(cr, kBlack);
  if (!label.empty()) text(cr, f.x - label_w - 8 - kLabel, f.y + f.h / 2, label, kLabel, 0.5, 0, -M_PI / 2);
}

void x_ticks(cairo_t* cr, const Frame& f, const std::vector<Tick>& ticks) {
  set(cr, kBlack);
  cairo_set_line_width(cr, 0.6);
  for (const auto& t : ticks) {
    const double x = f.px(t.value);
    if (t.label.empty() || !std::isfinite(x) || x < f.x - 0.5 || x > f.x + f.w + 0.5) continue;
    cairo_move_to(cr, x, f.y + f.h);
    cairo_line_to(cr, x, f.y + f.h + 3);
    cairo_stroke(cr);
    text(cr, x, f.y + f.h + 4, t.label, kSmall, 0.5, 0);
  }
}

void frame_box(cairo_t* cr, const Frame& f) {
  set(cr, kBlack);
  cairo_set_line_width(cr, 0.8);
  cairo_rectangle(cr, f.x, f.y, f.w, f.h);
  cairo_stroke(cr);
}

void dashed_hline(cairo_t* cr, const Frame& f, double value, const Colour& colour, const std::string& label) {
  const double y = f.py(value);
  if (!std::isfinite(y)) return;
  static const double dash[] = {4, 3};
  set(cr, colour);
  cairo_set_line_width(cr, 1.2);
  cairo_set_dash(cr, dash, 2, 0);
  cairo_move_to(cr, f.x, y);
  cairo_line_to(cr, f.x + f.w, y);
  cairo_stroke(cr);
  cairo_set_dash(cr, nullptr, 0, 0);
  text(cr, f.x + f.w - 3, y - 2, label, kSmall, 1, 1);
}

// A legend row of colour swatches and names starting at (x, y); returns its width.
double legend(cairo_t* cr, double x, double y, const std::vector<std::pair<Colour, std::string>>& items) {
  const double x0 = x;
  for (const auto& [colour, name] : items) {
    set(cr, colour);
    cairo_rectangle(cr, x, y + 1, 10, 8);
    cairo_fill(cr);
    set(cr, kBlack);
    text(cr, x + 14, y + 5, name, kSmall, 0, 0.5);
    x += 14 + text_width(cr, name, kSmall) + 12;
  }
  return x - x0;
}

double legend_width(Measure& m, const std::vector<std::pair<Colour, std::string>>& items) {
  double w = 0;
  for (const auto& item : items) w += 14 + m.width(item.second, kSmall) + 12;
  return w;
}

// Bars of one or more series per category: labels under the groups, rotated when they do not fit.
struct BarChart {
  std::string title, y_label, x_label;
  std::vector<std::string> categories;
  std::vector<std::pair<Colour, std::string>> series;  // colour, legend name
  std::vector<std::vector<double>> values;             // [series][category]
  std::optional<std::pair<double, std::string>> threshold;
  std::vector<std::string> notes;  // [category] a small label over the group ("" = none)

  static constexpr double kBar = 14, kGap = 12, kHeight = 150;
  std::vector<Tick> ticks = linear_ticks(0, 1, 6);

  double group_w() const { return kBar * double(series.size()) + kGap; }
  bool rotated(Measure& m) const {
    for (const auto& c : categories)
      if (m.width(c, kSmall) > group_w() - 2) return true;
    return false;
  }
  double labels_h(Measure& m) const {
    if (!rotated(m)) return kSmall + 6;
    double w = 0;
    for (const auto& c : categories) w = std::max(w, m.width(c, kSmall));
    return w + 8;
  }
  double left(Measure& m) const { return kLabel + 10 + tick_labels_width(m, ticks) + 4; }
  double plot_w() const { return std::max(200.0, group_w() * double(categories.size()) + kGap); }
  double width(Measure& m) const {
    return std::max({left(m) + plot_w(), m.width(title, kPanelTitle, true), legend_width(m, series)});
  }
  // Panel title, legend, plot, category labels, x label.
  double height(Measure& m) const {
    return kPanelTitle + 6 + 14 + kHeight + labels_h(m) + (x_label.empty() ? 0 : kLabel + 6);
  }

  void draw(cairo_t* cr, Measure& m, double x, double y) const {
    set(cr, kBlack);
    text(cr, x, y, title, kPanelTitle, 0, 0, 0, true);
    legend(cr, x, y + kPanelTitle + 6, series);
    Frame f;
    f.x = x + left(m), f.y = y + kPanelTitle + 6 + 14, f.w = plot_w(), f.h = kHeight;
    f.yr = {0, 1};
    y_axis(cr, f, ticks, y_label, tick_labels_width(m, ticks));
    const bool turn = rotated(m);
    for (size_t c = 0; c < categories.size(); ++c) {
      const double gx = f.x + kGap + double(c) * group_w();
      double top = f.y + f.h;
      for (size_t s = 0; s < series.size(); ++s) {
        const double v = std::clamp(values[s][c], 0.0, 1.0), bx = gx + double(s) * kBar;
        set(cr, series[s].first);
        cairo_rectangle(cr, bx, f.py(v), kBar, f.y + f.h - f.py(v));
        cairo_fill(cr);
        top = std::min(top, f.py(v));
      }
      set(cr, kBlack);
      const double mid = gx + kBar * double(series.size()) / 2;
      if (c < notes.size() && !notes[c].empty()) text(cr, mid, top - 2, notes[c], 7, 0.5, 1);
      if (turn)
        text(cr, mid, f.y + f.h + 4, categories[c], kSmall, 1, 0.5, -M_PI / 2);
      else
        text(cr, mid, f.y + f.h + 4, categories[c], kSmall, 0.5, 0);
    }
    if (threshold) dashed_hline(cr, f, threshold->first, kThreshold, threshold->second);
    frame_box(cr, f);
    if (!x_label.empty()) text(cr, f.x + f.w / 2, f.y + f.h + labels_h(m), x_label, kLabel, 0.5, 0);
  }
};

// Curves against the rank k = 1, 2, …: the faint ones first, the selected one on top with its
// 90/95/99% rank markers.
struct CurveSet {
  struct Curve {
    std::vector<double> y;
    Colour colour;
    double alpha = 1, width = 1.2;
    const analysis::Spectrum* marks = nullptr;  // markers at its ranks (y taken from `y`)
  };
  std::string title, y_label;
  bool log = false;
  std::vector<Curve> curves;
  std::vector<std::pair<Colour, std::string>> legend_items;
  static constexpr double kWidth = 420, kHeight = 170;

  AxisRange y_range() const {
    if (!log) return {0, 1.02};
    std::vector<double> all;
    for (const auto& c : curves) all.insert(all.end(), c.y.begin(), c.y.end());
    AxisRange r = padded_range(all, true);
    r.hi = std::max(r.hi, 1.0);
    return r;
  }
  size_t k_max() const {
    size_t k = 1;
    for (const auto& c : curves) k = std::max(k, c.y.size());
    return k;
  }
  std::vector<Tick> y_ticks() const {
    const AxisRange r = y_range();
    return log ? log_ticks(r.lo, r.hi, 8) : linear_ticks(0, 1, 6);
  }
  double left(Measure& m) const { return kLabel + 10 + tick_labels_width(m, y_ticks()) + 4; }
  double width(Measure& m) const {
    return std::max({left(m) + kWidth, m.width(title, kPanelTitle, true), legend_width(m, legend_items) + 150});
  }
  double height() const { return kPanelTitle + 6 + 14 + kHeight + kSmall + 6 + kLabel + 6; }

  void draw(cairo_t* cr, Measure& m, double x, double y) const {
    set(cr, kBlack);
    text(cr, x, y, title, kPanelTitle, 0, 0, 0, true);
    const double lw = legend(cr, x, y + kPanelTitle + 6, legend_items);
    set(cr, kGray);
    text(cr, x + lw + 4, y + kPanelTitle + 11, "ranks where Σσ² reaches", kSmall, 0, 0.5);
    double mx = x + lw + 8 + m.width("ranks where Σσ² reaches", kSmall);
    const char* names[] = {"90%", "95%", "99%"};
    cairo_set_line_width(cr, 0.5);
    for (int kind = 0; kind < 3; ++kind) {
      marker(cr, kind, mx + 3, y + kPanelTitle + 11, 2.8);
      set(cr, kWhite);
      cairo_fill_preserve(cr);
      set(cr, kBlack);
      cairo_stroke(cr);
      text(cr, mx + 8, y + kPanelTitle + 11, names[kind], kSmall, 0, 0.5);
      mx += 14 + m.width(names[kind], kSmall);
    }
    Frame f;
    f.x = x + left(m), f.y = y + kPanelTitle + 6 + 14, f.w = kWidth, f.h = kHeight;
    f.xr = {1, double(std::max<size_t>(2, k_max()))};
    f.yr = y_range();
    f.y_log = log;
    const auto yt = y_ticks();
    y_axis(cr, f, yt, y_label, tick_labels_width(m, yt));
    auto xt = linear_ticks(f.xr.lo, f.xr.hi, 8);
    xt.erase(std::remove_if(xt.begin(), xt.end(), [](const Tick& t) { return t.value != std::floor(t.value); }), xt.end());
    x_ticks(cr, f, xt);
    text(cr, f.x + f.w / 2, f.y + f.h + kSmall + 6, "rank k", kLabel, 0.5, 0);
    cairo_save(cr);
    cairo_rectangle(cr, f.x, f.y - 1, f.w, f.h + 2);
    cairo_clip(cr);
    for (const auto& c : curves) {
      set(cr, c.colour, c.alpha);
      cairo_set_line_width(cr, c.width);
      bool started = false;
      for (size_t k = 0; k < c.y.size(); ++k) {
        const double px = f.px(double(k + 1)), py = f.py(c.y[k]);
        if (!std::isfinite(py)) continue;
        if (started) cairo_line_to(cr, px, py);
        else cairo_move_to(cr, px, py), started = true;
      }
      cairo_stroke(cr);
    }
    cairo_set_line_width(cr, 0.5);
    for (const auto& c : curves) {
      if (!c.marks) continue;
      const int ranks[3] = {c.marks->rank90, c.marks->rank95, c.marks->rank99};
      for (int kind = 0; kind < 3; ++kind) {
        if (ranks[kind] < 1 || size_t(ranks[kind]) > c.y.size()) continue;
        const double py = f.py(c.y[size_t(ranks[kind]) - 1]);
        if (!std::isfinite(py)) continue;
        marker(cr, kind, f.px(ranks[kind]), py, 3.2);
        set(cr, c.colour);
        cairo_fill_preserve(cr);
        set(cr, kBlack);
        cairo_stroke(cr);
      }
    }
    cairo_restore(cr);
    frame_box(cr, f);
  }
};

// The ranks worth drawing: a form of key size d_k < D has D − d_k exact zeros (as the Spectra view).
size_t drawn_ranks(const analysis::Spectrum& s) {
  const auto& v = s.singular_values;
  size_t n = v.size();
  while (n > 1 && !(v[n - 1] > 1e-9 * v.front())) --n;
  return n;
}

std::vector<double> relative(const analysis::Spectrum& s) {
  std::vector<double> v(s.singular_values.begin(), s.singular_values.begin() + long(drawn_ranks(s)));
  const double top = v.empty() ? 1.0 : v.front();
  for (double& x : v) x = top > 0 ? x / top : 0.0;
  return v;
}

std::vector<double> energy(const analysis::Spectrum& s) {
  return {s.cumulative_energy.begin(), s.cumulative_energy.begin() + long(std::min(drawn_ranks(s), s.cumulative_energy.size()))};
}

std::string ranks_text(const analysis::Spectrum& s) {
  return "90% of the energy at rank " + std::to_string(s.rank90) + ", 95% at " + std::to_string(s.rank95) + ", 99% at " +
         std::to_string(s.rank99);
}

}  // namespace

// ---- head table ----------------------------------------------------------------------------------

void write_head_table_figure(const std::string& path, const std::string& title, const analysis::HeadReport& report,
                             const std::vector<int>& rows) {
  const std::vector<std::string> columns = head_table_columns(report);
  std::vector<std::vector<std::string>> cells;  // [row][column], without the roles
  std::vector<std::vector<RoleBadge>> badges;
  for (int row : rows) {
    if (row < 0 || row >= int(report.heads.size()))
      throw std::out_of_range("export " + path + ": row " + std::to_string(row) + " of " +
                              std::to_string(report.heads.size()) + " heads");
    std::vector<std::string> line;
    for (const auto& c : columns) line.push_back(printable(head_table_text(head_table_cell(report, row, c)), 40));
    cells.push_back(std::move(line));
    badges.push_back(role_badges(report.heads[size_t(row)]));
  }
  Measure m;
  const double size = 8, pad = 6, row_h = 13, badge_gap = 3;
  auto badge_w = [&](const RoleBadge& b) { return m.width(printable(b.label), size) + 8; };
  std::vector<double> widths(columns.size() + 1, 0);
  widths[0] = m.width("roles", size, true);
  for (const auto& bs : badges) {
    double w = 0;
    for (const auto& b : bs) w += badge_w(b) + badge_gap;
    widths[0] = std::max(widths[0], bs.empty() ? m.width("—", size) : w);
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    widths[c + 1] = m.width(columns[c], size, true);
    for (const auto& line : cells) widths[c + 1] = std::max(widths[c + 1], m.width(line[c], size));
  }
  double table_w = 0;
  for (double& w : widths) w += 2 * pad, table_w += w;
  const std::string subtitle = std::to_string(rows.size()) + " of " + std::to_string(report.heads.size()) + " heads" +
                               (report.partial ? " · partial report" : "");
  const double top = kMargin + kTitleSize + 8 + 12;
  const double width = std::max(2 * kMargin + table_w, title_width(m, title));
  const double height = top + row_h * double(rows.size() + 1) + kMargin;

  std::string description = "roles\t" + join(columns, "\t");
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string> labels;
    for (const auto& b : badges[r]) labels.push_back(b.label);
    description += "\n" + (labels.empty() ? std::string("—") : join(labels, ", ")) + "\t" + join(cells[r], "\t");
  }

  auto draw = [&](cairo_t* cr) {
    title_row(cr, title);
    set(cr, kGray);
    text(cr, kMargin, kMargin + kTitleSize + 8, subtitle, kLabel, 0, 0);
    // Header on grey, then striped rows.
    set(cr, kLightGray);
    cairo_rectangle(cr, kMargin, top, table_w, row_h);
    cairo_fill(cr);
    for (size_t r = 0; r < rows.size(); r += 2) {
      set(cr, Colour{0.96, 0.96, 0.97});
      cairo_rectangle(cr, kMargin, top + row_h * double(r + 1), table_w, row_h);
      cairo_fill(cr);
    }
    set(cr, kBlack);
    double x = kMargin;
    text(cr, x + pad, top + row_h / 2, "roles", size, 0, 0.5, 0, true);
    x += widths[0];
    for (size_t c = 0; c < columns.size(); ++c) {
      text(cr, x + pad, top + row_h / 2, columns[c], size, 0, 0.5, 0, true);
      x += widths[c + 1];
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      const double y = top + row_h * double(r + 1);
      double bx = kMargin + pad;
      if (badges[r].empty()) {
        set(cr, kGray);
        text(cr, bx, y + row_h / 2, "—", size, 0, 0.5);
      }
      for (const auto& b : badges[r]) {
        const Colour c = b.kind == RoleFilter::positional  ? rgb(60, 110, 200)
                         : b.kind == RoleFilter::syntactic ? rgb(40, 150, 90)
                         : b.kind == RoleFilter::rare_word ? rgb(190, 110, 30)
                                                           : rgb(90, 90, 90);
        set(cr, c);
        cairo_rectangle(cr, bx, y + 1.5, badge_w(b), row_h - 3);
        cairo_fill(cr);
        set(cr, kWhite);
        text(cr, bx + 4, y + row_h / 2, printable(b.label), size, 0, 0.5);
        bx += badge_w(b) + badge_gap;
      }
      set(cr, kBlack);
      double cx = kMargin + widths[0];
      for (size_t c = 0; c < columns.size(); ++c) {
        // Numbers right-aligned, text left-aligned, as a reader compares them.
        const bool number = head_table_value(report, rows[r], columns[c]).has_value();
        if (number) text(cr, cx + widths[c + 1] - pad, y + row_h / 2, cells[r][c], size, 1, 0.5);
        else text(cr, cx + pad, y + row_h / 2, cells[r][c], size, 0, 0.5);
        cx += widths[c + 1];
      }
    }
    set(cr, kGray);
    cairo_set_line_width(cr, 0.5);
    double vx = kMargin;
    for (double w : widths) {
      vx += w;
      cairo_move_to(cr, vx, top);
      cairo_line_to(cr, vx, top + row_h * double(rows.size() + 1));
    }
    cairo_rectangle(cr, kMargin, top, table_w, row_h * double(rows.size() + 1));
    cairo_stroke(cr);
  };
  write_figure_file(path, title, width, height, draw, description);
}

// ---- head detail ---------------------------------------------------------------------------------

void write_head_detail_figure(const std::string& path, const std::string& title, const analysis::HeadEntry& head,
                              const analysis::ReportSettings& settings) {
  Measure m;
  std::vector<BarChart> charts;
  std::vector<std::string> description;
  const Colour baseline = kBaseline;
  if (settings.has("positional")) {
    const auto bars = offset_histogram(head, 5);
    if (!bars.empty()) {
      BarChart c;
      c.title = "Where the maximum attention goes (key − query)";
      c.y_label = "share of queries";
      c.x_label = "offset";
      c.series = {{kHead, "this head"}};
      c.values.resize(1);
      std::vector<std::string> shares;
      for (const auto& b : bars) {
        const std::string o = signed_offset(b.offset);
        c.categories.push_back(b.beyond ? (b.offset < 0 ? "≤" : "≥") + o : o);
        c.values[0].push_back(b.share);
        shares.push_back(c.categories.back() + " " + format("%.3f", b.share));
      }
      c.threshold = std::make_pair(settings.positional_threshold,
                                   "positional ≥ " + format("%.2f", settings.positional_threshold));
      description.push_back("offsets: " + join(shares, ", "));
      charts.push_back(std::move(c));
    }
  }
  if (settings.has("syntactic")) {
    auto bars = relation_bars(head, true);
    if (bars.size() > 8) bars.resize(8);  // the largest gains over the baseline, as the view
    if (!bars.empty()) {
      BarChart c;
      c.title = "Relations: this head against the best fixed offset";
      c.y_label = "accuracy";
      c.series = {{kHead, "head"}, {baseline, "baseline (best fixed offset)"}};
      c.values.resize(2);
      std::vector<std::string> parts;
      for (const auto& b : bars) {
        c.categories.push_back(printable(b.label));
        c.values[0].push_back(b.accuracy);
        c.values[1].push_back(b.baseline);
        c.notes.push_back(b.is_role ? "*" : "");
        parts.push_back(b.label + " " + format("%.3f", b.accuracy) + " vs " + format("%.3f", b.baseline) + " at " +
                        signed_offset(b.baseline_offset));
      }
      description.push_back("relations: " + join(parts, "; "));
      charts.push_back(std::move(c));
    }
  }
  std::optional<CurveSet> spectrum;
  if (head.spectrum && head.spectrum->applicable && !head.spectrum->singular_values.empty()) {
    CurveSet s;
    s.title = "Key-query spectrum: cumulative energy Σ_{j≤k} σ_j² / Σ σ²";
    s.y_label = "energy";
    s.curves.push_back({energy(*head.spectrum), kHead, 1, 1.5, &*head.spectrum});
    s.legend_items = {{kHead, "this head"}};
    description.push_back("spectrum: " + ranks_text(*head.spectrum));
    spectrum = std::move(s);
  }
  std::string summary;
  if (settings.has("confidence") && head.queries > 0)
    summary = "confidence " + format("%.3f", head.confidence) + " over " + std::to_string(head.queries) + " queries";
  std::vector<std::string> roles;
  for (const auto& b : role_badges(head)) roles.push_back(b.label);
  summary += (summary.empty() ? "" : " · ") + (roles.empty() ? std::string("no role") : "roles: " + join(roles, ", "));
  description.insert(description.begin(), summary);

  const double gap = 18, top = kMargin + kTitleSize + 8 + 12 + gap;
  double width = std::max(title_width(m, title), 2 * kMargin + m.width(summary, kLabel));
  double height = top;
  for (const auto& c : charts) width = std::max(width, 2 * kMargin + c.width(m)), height += c.height(m) + gap;
  if (spectrum) width = std::max(width, 2 * kMargin + spectrum->width(m)), height += spectrum->height() + gap;
  if (charts.empty() && !spectrum) height += 14;
  height += kMargin - gap;

  auto draw = [&](cairo_t* cr) {
    title_row(cr, title);
    set(cr, kGray);
    text(cr, kMargin, kMargin + kTitleSize + 8, summary, kLabel, 0, 0);
    double y = top;
    for (const auto& c : charts) c.draw(cr, m, kMargin, y), y += c.height(m) + gap;
    if (spectrum) spectrum->draw(cr, m, kMargin, y), y += spectrum->height() + gap;
    if (charts.empty() && !spectrum) {
      set(cr, kGray);
      text(cr, kMargin, y, "the report measured nothing to plot for this head", kLabel, 0, 0);
    }
  };
  write_figure_file(path, title, width, height, draw, join(description, "\n"));
}

// ---- spectra -------------------------------------------------------------------------------------

void write_spectra_figure(const std::string& path, const std::string& title, const std::vector<analysis::Spectrum>& heads,
                          int selected) {
  if (selected < 0 || selected >= int(heads.size()))
    throw std::out_of_range("export " + path + ": head " + std::to_string(selected) + " of " +
                            std::to_string(heads.size()));
  Measure m;
  CurveSet values, energies;
  values.title = "Key-query singular values σ_k / σ_1";
  values.y_label = "σ_k / σ_1 (log)";
  values.log = true;
  energies.title = "Cumulative energy Σ_{j≤k} σ_j² / Σ σ²";
  energies.y_label = "energy";
  std::vector<std::string> description;
  for (int pass = 0; pass < 2; ++pass)  // the other heads faint first, the selected one on top
    for (size_t h = 0; h < heads.size(); ++h) {
      const auto& s = heads[h];
      const bool chosen = int(h) == selected;
      if (chosen != (pass == 1) || !s.applicable || s.singular_values.empty()) continue;
      const Colour c = head_rgb(int(h));
      values.curves.push_back({relative(s), c, chosen ? 1.0 : 0.35, chosen ? 2.0 : 1.0, chosen ? &s : nullptr});
      energies.curves.push_back({energy(s), c, chosen ? 1.0 : 0.35, chosen ? 2.0 : 1.0, chosen ? &s : nullptr});
      description.push_back("H" + std::to_string(h) + ": " + ranks_text(s));
    }
  const std::vector<std::pair<Colour, std::string>> items = {{head_rgb(selected), "H" + std::to_string(selected)},
                                                             {kBaseline, "the layer's other heads (faint)"}};
  values.legend_items = energies.legend_items = items;
  const double gap = 18, top = kMargin + kTitleSize + 8 + gap;
  const double width = std::max({title_width(m, title), 2 * kMargin + values.width(m), 2 * kMargin + energies.width(m)});
  const double height = top + values.height() + gap + energies.height() + kMargin;
  auto draw = [&](cairo_t* cr) {
    title_row(cr, title);
    values.draw(cr, m, kMargin, top);
    energies.draw(cr, m, kMargin, top + values.height() + gap);
  };
  write_figure_file(path, title, width, height, draw, join(description, "\n"));
}

// ---- relevance -----------------------------------------------------------------------------------

void write_relevance_figure(const std::string& path, const RelevanceFigure& fig) {
  Measure m;
  const double size = 10, token_h = 18, token_gap = 3, line_gap = 4, max_line = 620;
  std::vector<std::string> labels;
  std::vector<double> widths;
  const size_t n = std::min(fig.tokens.size(), fig.values.size());
  for (size_t i = 0; i < n; ++i) {
    labels.push_back(printable(fig.tokens[i], 16));
    widths.push_back(m.width(labels.back(), size) + 8);
  }
  // Tokens flow in lines of at most max_line points (a wider token gets a line of its own).
  std::vector<std::pair<double, int>> at(n);  // x offset, line
  double x = 0, lines_w = 0;
  int line = 0;
  for (size_t i = 0; i < n; ++i) {
    if (x > 0 && x + widths[i] > max_line) x = 0, ++line;
    at[i] = {x, line};
    x += widths[i] + token_gap;
    lines_w = std::max(lines_w, x - token_gap);
  }
  const int token_lines = n ? line + 1 : 0;
  const double token_scale = relevance_scale(std::vector<double>(fig.values.begin(), fig.values.begin() + long(n)));
  std::vector<double> all;
  int layers = int(fig.heads.size()), per_layer = 0;
  for (const auto& l : fig.heads) all.insert(all.end(), l.begin(), l.end()), per_layer = std::max(per_layer, int(l.size()));
  const double head_scale = relevance_scale(all);
  const bool signed_tokens = std::any_of(fig.values.begin(), fig.values.end(), [](double v) { return v < 0; });
  const bool signed_heads = std::any_of(all.begin(), all.end(), [](double v) { return v < 0; });

  const std::string token_note = "input tokens shaded by " + fig.shading +
                                 (signed_tokens ? " (red: supports the target, blue: speaks against it)" : "") +
                                 (fig.target >= 0 ? "; outlined: the target position" : "");
  const std::string head_note = "head relevance R_i" + (fig.stack.empty() ? "" : " (" + fig.stack + ")") +
                                ", layers down, heads across";
  const double cell = per_layer ? std::clamp(480.0 / per_layer, 12.0, 28.0) : 0;
  const double row_label_w = m.width("L" + std::to_string(std::max(0, layers - 1)), kSmall) + 6;
  const double key_w = 160, key_h = 8;

  const double tokens_top = kMargin + kTitleSize + 10 + kLabel + 8;
  const double tokens_h = token_lines * (token_h + line_gap);
  const double key1_top = tokens_top + tokens_h + 4;
  const double heads_title = key1_top + key_h + kSmall + 6 + 16;
  const double grid_top = heads_title + kLabel + 8 + kSmall + 4;
  const double grid_h = layers * cell;
  const double key2_top = grid_top + grid_h + 8;
  const bool has_heads = layers > 0 && per_layer > 0;
  const double height = (has_heads ? key2_top + key_h + kSmall + 6 : key1_top + key_h + kSmall + 6) + kMargin;
  const double width = std::max({title_width(m, fig.title), 2 * kMargin + lines_w, 2 * kMargin + m.width(token_note, kLabel),
                                 2 * kMargin + m.width(head_note, kLabel),
                                 2 * kMargin + row_label_w + per_layer * cell, 2 * kMargin + key_w + 60});

  // A colour key: the diverging scale from −scale to +scale (or 0 to +scale for non-negative values).
  auto colour_key = [&](cairo_t* cr, double kx, double ky, double scale, bool with_negative) {
    draw_image(
        cr, 256, 1,
        [&](int, int c) {
          const double t = (c + 0.5) / 256.0;
          return rgb(relevance_rgb(with_negative ? 2 * t - 1 : t));
        },
        kx, ky, key_w, key_h);
    set(cr, kBlack);
    const std::string hi = format_compact(scale);
    text(cr, kx, ky + key_h + 2, with_negative ? "−" + hi : "0", kSmall, 0, 0);
    if (with_negative) text(cr, kx + key_w / 2, ky + key_h + 2, "0", kSmall, 0.5, 0);
    text(cr, kx + key_w, ky + key_h + 2, hi, kSmall, 1, 0);
  };

  std::vector<std::string> description;
  std::vector<std::string> token_parts;
  for (size_t i = 0; i < n; ++i) token_parts.push_back(fig.tokens[i] + " " + format_compact(fig.values[i], 4));
  description.push_back(fig.shading + ": " + join(token_parts, ", "));
  for (int l = 0; l < layers; ++l) {
    std::vector<std::string> parts;
    for (double v : fig.heads[size_t(l)]) parts.push_back(format_compact(v, 4));
    description.push_back("L" + std::to_string(l) + ": " + join(parts, " "));
  }

  auto draw = [&](cairo_t* cr) {
    title_row(cr, fig.title);
    set(cr, kGray);
    text(cr, kMargin, kMargin + kTitleSize + 10, token_note, kLabel, 0, 0);
    for (size_t i = 0; i < n; ++i) {
      const double tx = kMargin + at[i].first, ty = tokens_top + at[i].second * (token_h + line_gap);
      set(cr, rgb(relevance_rgb(relevance_strength(fig.values[i], token_scale))));
      cairo_rectangle(cr, tx, ty, widths[i], token_h);
      cairo_fill(cr);
      if (int(i) == fig.target) {
        set(cr, rgb(255, 200, 0));
        cairo_set_line_width(cr, 2);
        cairo_rectangle(cr, tx + 1, ty + 1, widths[i] - 2, token_h - 2);
        cairo_stroke(cr);
      }
      set(cr, kWhite);
      text(cr, tx + 4, ty + token_h / 2, labels[i], size, 0, 0.5);
    }
    colour_key(cr, kMargin, key1_top, token_scale, signed_tokens);
    if (!has_heads) return;
    set(cr, kGray);
    text(cr, kMargin, heads_title, head_note, kLabel, 0, 0);
    const double gx = kMargin + row_label_w;
    set(cr, kBlack);
    const int every = std::max(1, int(std::ceil((m.width(std::to_string(per_layer - 1), kSmall) + 4) / cell)));
    for (int h = 0; h < per_layer; h += every) text(cr, gx + (h + 0.5) * cell, grid_top - 3, std::to_string(h), kSmall, 0.5, 1);
    for (int l = 0; l < layers; ++l) {
      set(cr, kBlack);
      text(cr, gx - 4, grid_top + (l + 0.5) * cell, "L" + std::to_string(l), kSmall, 1, 0.5);
      for (int h = 0; h < int(fig.heads[size_t(l)].size()); ++h) {
        set(cr, rgb(relevance_rgb(relevance_strength(fig.heads[size_t(l)][size_t(h)], head_scale))));
        cairo_rectangle(cr, gx + h * cell, grid_top + l * cell, cell - 1.5, cell - 1.5);
        cairo_fill(cr);
      }
    }
    colour_key(cr, kMargin, key2_top, head_scale, signed_heads);
  };
  write_figure_file(path, fig.title, width, height, draw, join(description, "\n"));
}

// ---- syntax --------------------------------------------------------------------------------------

void write_syntax_figure(const std::string& path, const std::string& title, const std::vector<std::string>& words,
                         const std::vector<int>& gold_heads, const std::vector<std::string>& relations,
                         const std::vector<int>& predicted) {
  if (gold_heads.size() != words.size() || relations.size() != words.size() ||
      (!predicted.empty() && predicted.size() != words.size()))
    throw std::invalid_argument("export " + path + ": " + std::to_string(words.size()) + " words, " +
                                std::to_string(gold_heads.size()) + " heads, " + std::to_string(relations.size()) +
                                " relations, " + std::to_string(predicted.size()) + " argmax words");
  const Colour gold = rgb(150, 170, 210), found = rgb(70, 200, 110), missed = rgb(235, 85, 80),
               unscored = rgb(130, 130, 130);
  Measure m;
  const double size = 10, label_size = 8;
  std::vector<std::string> shown;
  std::vector<float> widths;
  for (size_t w = 0; w < words.size(); ++w) {
    shown.push_back(printable(words[w], 24));
    widths.push_back(float(std::max(m.width(shown.back(), size), m.width(printable(relations[w]), label_size))));
  }
  const std::vector<Arc> above = tree_arcs(gold_heads, relations);
  const std::vector<Arc> below = predicted.empty() ? std::vector<Arc>{} : argmax_arcs(predicted);
  const ArcLayout layout = layout_arcs(widths, 12.0f, above, below);
  std::set<int> scored;
  for (const auto& arc : analysis::scored_arcs(gold_heads, relations, false)) scored.insert(arc.dependent);

  const double level_h = 16, label_h = label_size + 4, word_h = size + 8, arrow_pad = 10;
  const std::string legend_text = "gold tree above, the head's argmax below";
  const std::vector<std::pair<Colour, std::string>> items = {
      {gold, "gold arc"}, {found, "argmax = gold head"}, {missed, "another word"}, {unscored, "not scored"}};
  const double legend_top = kMargin + kTitleSize + 8;
  const double arcs_top = legend_top + 14 + 10;
  const double base_above = arcs_top + label_h + level_h * layout.above_max_level;
  const double base_below = base_above + word_h;
  const double height = base_below + level_h * layout.below_max_level + arrow_pad + kMargin;
  const double width = std::max({title_width(m, title), 2 * kMargin + double(layout.width),
                                 2 * kMargin + m.width(legend_text, kSmall) + 8 + legend_width(m, items)});
  const double x0 = kMargin;

  auto arc_path = [&](cairo_t* cr, double from, double to, double base, double h, double dir, const Colour& c) {
    const double control = base + dir * h * 4.0 / 3.0;  // a cubic's peak is 3/4 of its control height
    set(cr, c);
    cairo_set_line_width(cr, 1.4);
    cairo_move_to(cr, from, base);
    cairo_curve_to(cr, from, control, to, control, to, base);
    cairo_stroke(cr);
    const double a = 3.5;
    cairo_move_to(cr, to, base);
    cairo_line_to(cr, to - a, base + dir * a * 1.6);
    cairo_line_to(cr, to + a, base + dir * a * 1.6);
    cairo_close_path(cr);
    cairo_fill(cr);
  };

  std::vector<std::string> description;
  for (const auto& arc : above)
    description.push_back(words[size_t(arc.dependent)] + " → " + words[size_t(arc.head)] + " (" + arc.label + ")");
  std::vector<std::string> argmax_parts;
  for (const auto& arc : below)
    argmax_parts.push_back(words[size_t(arc.dependent)] + " → " + words[size_t(arc.head)] +
                           (!scored.count(arc.dependent)                     ? " (not scored)"
                            : gold_heads[size_t(arc.dependent)] == arc.head ? " (gold head)"
                                                                             : " (another word)"));
  std::string desc = "gold: " + join(description, ", ");
  if (!argmax_parts.empty()) desc += "\nargmax: " + join(argmax_parts, ", ");

  auto draw = [&](cairo_t* cr) {
    title_row(cr, title);
    set(cr, kGray);
    text(cr, kMargin, legend_top + 5, legend_text, kSmall, 0, 0.5);
    legend(cr, kMargin + m.width(legend_text, kSmall) + 8, legend_top, items);
    for (size_t w = 0; w < words.size(); ++w) {
      set(cr, kBlack);
      text(cr, x0 + layout.word_x[w], base_above + word_h / 2, shown[w], size, 0.5, 0.5);
    }
    for (size_t i = 0; i < above.size(); ++i) {
      const int level = layout.above_levels[i];
      if (level <= 0) continue;
      arc_path(cr, x0 + layout.word_x[size_t(above[i].dependent)], x0 + layout.word_x[size_t(above[i].head)], base_above,
               level_h * level, -1, gold);
    }
    // Labels after every arc, on white, so no arc runs through one.
    for (size_t i = 0; i < above.size(); ++i) {
      const int level = layout.above_levels[i];
      if (level <= 0) continue;
      const Arc& arc = above[i];
      const double mid = x0 + (layout.word_x[size_t(arc.dependent)] + layout.word_x[size_t(arc.head)]) / 2;
      const double y = base_above - level_h * level;
      const std::string label = printable(arc.label);
      const double lw = m.width(label, label_size);
      set(cr, kWhite);
      cairo_rectangle(cr, mid - lw / 2 - 1, y - label_size / 2 - 1, lw + 2, label_size + 2);
      cairo_fill(cr);
      const bool is_found =
          !predicted.empty() && scored.count(arc.dependent) && predicted[size_t(arc.dependent)] == arc.head;
      set(cr, is_found ? found : scored.count(arc.dependent) ? kBlack : unscored);
      text(cr, mid, y, label, label_size, 0.5, 0.5);
    }
    for (size_t i = 0; i < below.size(); ++i) {
      const int level = layout.below_levels[i];
      if (level <= 0) continue;
      const Arc& arc = below[i];
      const size_t d = size_t(arc.dependent);
      const Colour& c = !scored.count(arc.dependent) ? unscored : gold_heads[d] == arc.head ? found : missed;
      arc_path(cr, x0 + layout.word_x[d], x0 + layout.word_x[size_t(arc.head)], base_below, level_h * level, 1, c);
    }
  };
  write_figure_file(path, title, width, height, draw, desc);
}

}  // namespace headlab::app
