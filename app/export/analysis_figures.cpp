// The Analyse views' figures of the head report (table, head detail, spectra), drawn with analysis/figure_kit.h (text, ticks, markers, surfaces) and
// the window's axis logic (app/layout/plot_axes.h), so a file shows what the view shows.
#include "app/export/analysis_figures.h"

#include "analysis/measure.h"
#include "analysis/spectrum_curves.h"
#include "app/export/figure_panels.h"
#include "app/document/head_table.h"

#include <cstdio>

namespace headlab::app {

using namespace figure_panels;

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
  std::optional<CurveSet> spectrum;
  std::optional<analysis::Spectrum> curve_marks;  // the spectrum whose ranks the curve marks
  std::vector<std::string> lines;                 // text evidence ("induction score 0.495 …")
  // Every measure's evidence (analysis/measure.h), as the Head detail view draws it.
  for (const analysis::Measure* measure : analysis::measures_of(settings))
    for (const auto& e : measure->evidence(head, settings)) {
      if (e.kind == analysis::Evidence::Kind::text) {
        if (e.text.empty()) continue;
        lines.push_back(printable(e.text));
        description.push_back(e.description.empty() ? e.text : e.description);
      } else if (e.kind == analysis::Evidence::Kind::bars) {
        BarChart c;
        c.title = e.text;
        c.y_label = e.y_label;
        c.x_label = e.x_label;
        for (size_t s = 0; s < e.values.size(); ++s)
          c.series.push_back({s == 0 ? kHead : kBaseline, s < e.series.size() ? e.series[s] : ""});
        c.values = e.values;
        for (const auto& category : e.categories) c.categories.push_back(printable(category));
        c.notes = e.notes;
        c.threshold = e.threshold;
        charts.push_back(std::move(c));
        description.push_back(e.description);
      } else if (e.kind == analysis::Evidence::Kind::curve && e.spectrum && !e.values.empty()) {
        CurveSet c;
        c.title = e.text;
        c.y_label = e.y_label;
        curve_marks = *e.spectrum;
        c.curves.push_back({e.values[0], kHead, 1, 1.5, &*curve_marks});
        c.legend_items = {{kHead, "this head"}};
        spectrum = std::move(c);
        description.push_back(e.description);
      }
    }
  // The roles; the measures' own lines (confidence, the induction probe …) follow it.
  std::vector<std::string> roles;
  for (const auto& b : role_badges(head)) roles.push_back(b.label);
  const std::string summary = roles.empty() ? std::string("no role") : "roles: " + join(roles, ", ");
  description.insert(description.begin(), summary);

  const double gap = 18, line_h = 14, top = kMargin + kTitleSize + 8 + 12 + gap;
  double width = std::max(title_width(m, title), 2 * kMargin + m.width(summary, kLabel));
  for (const auto& l : lines) width = std::max(width, 2 * kMargin + m.width(l, kLabel));
  double height = top + line_h * double(lines.size()) + (lines.empty() ? 0 : gap - line_h / 2);
  for (const auto& c : charts) width = std::max(width, 2 * kMargin + c.width(m)), height += c.height(m) + gap;
  if (spectrum) width = std::max(width, 2 * kMargin + spectrum->width(m)), height += spectrum->height() + gap;
  if (charts.empty() && !spectrum && lines.empty()) height += 14;
  height += kMargin - gap;

  auto draw = [&](cairo_t* cr) {
    title_row(cr, title);
    set(cr, kGray);
    text(cr, kMargin, kMargin + kTitleSize + 8, summary, kLabel, 0, 0);
    double y = top;
    set(cr, kBlack);
    for (const auto& l : lines) text(cr, kMargin, y, l, kLabel, 0, 0), y += line_h;
    if (!lines.empty()) y += gap - line_h / 2;
    for (const auto& c : charts) c.draw(cr, m, kMargin, y), y += c.height(m) + gap;
    if (spectrum) spectrum->draw(cr, m, kMargin, y), y += spectrum->height() + gap;
    if (charts.empty() && !spectrum && lines.empty()) {
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
  const double layer_top = largest_singular_value(heads);
  for (int pass = 0; pass < 2; ++pass)  // the other heads faint first, the selected one on top
    for (size_t h = 0; h < heads.size(); ++h) {
      const auto& s = heads[h];
      const bool chosen = int(h) == selected;
      if (chosen != (pass == 1) || !s.applicable || s.singular_values.empty()) continue;
      if (negligible_form(s, layer_top)) {  // no curve: σ_k / σ_1 would draw it like a working form
        char sigma[32];
        std::snprintf(sigma, sizeof sigma, "%.3g", largest_singular_value(s));
        description.push_back("H" + std::to_string(h) + ": key-query form zero or negligible (σ_1 = " + sigma + "), no curve");
        continue;
      }
      const Colour c = chosen ? head_rgb(int(h)) : kBaseline;  // the others grey, as the legend says
      values.curves.push_back({relative_singular_values(s), c, chosen ? 1.0 : 0.35, chosen ? 2.0 : 1.0, chosen ? &s : nullptr});
      energies.curves.push_back({drawn_energy(s), c, chosen ? 1.0 : 0.35, chosen ? 2.0 : 1.0, chosen ? &s : nullptr});
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

}  // namespace headlab::app
