// The Analyse views' figures of one input: the Relevance view's shaded tokens and head grid, and
// the Syntax view's arcs — drawn with the same panels as the report figures (figure_panels.h).
#include "app/export/analysis_figures.h"

#include "analysis/head_stats.h"
#include "app/export/figure_panels.h"
#include "app/layout/arc_layout.h"

namespace headlab::app {

using namespace figure_panels;

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
  const double token_scale =
      shading_scale(fig.shading != "LRP", std::vector<double>(fig.values.begin(), fig.values.begin() + long(n)));
  std::vector<double> all;
  int layers = int(fig.heads.size()), per_layer = 0;
  for (const auto& l : fig.heads) all.insert(all.end(), l.begin(), l.end()), per_layer = std::max(per_layer, int(l.size()));
  const double head_scale = relevance_scale(all);
  const bool signed_tokens = std::any_of(fig.values.begin(), fig.values.end(), [](double v) { return v < 0; });
  const bool signed_heads = std::any_of(all.begin(), all.end(), [](double v) { return v < 0; });

  const std::string token_note = "input tokens shaded by " + fig.shading +
                                 (signed_tokens ? " (red: supports the target, blue: speaks against it)" : "") +
                                 (fig.target >= 0 ? "; outlined: the target position" : "");
  const std::string head_note = "head relevance R_i" + (fig.stack ? " (" + std::string(core::stack_name(*fig.stack)) + ")" : std::string()) +
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
                         const std::vector<int>& predicted, const std::vector<bool>& word_has_token) {
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
  for (const auto& arc : analysis::scored_arcs(gold_heads, relations, false, word_has_token)) scored.insert(arc.dependent);

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
