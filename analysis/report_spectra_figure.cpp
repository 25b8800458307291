// The key-query spectra figure (Cordonnier et al. 2020, Fig. 1): σ_k/σ_1 per head on a log axis,
// coloured by layer, beside each layer's product spectrum; and the example attention maps.
#include "analysis/figure_kit.h"

namespace headlab::analysis::figure_kit {
namespace {

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

struct Panel {
  std::string title;
  std::vector<Curve> curves;
  size_t k_max = 1;
  std::vector<double> x_ticks;
};

}  // namespace

void spectra_figure(const HeadReport& report, const std::string& folder, std::vector<std::string>& written) {
  const auto stacks = stacks_of(report);
  std::map<core::Stack, int> layers_of;
  for (const auto& h : report.heads) layers_of[h.stack] = std::max(layers_of[h.stack], h.layer + 1);
  for (const auto& l : report.layers) layers_of[l.stack] = std::max(layers_of[l.stack], l.layer + 1);
  auto stack_index = [&](core::Stack s) {
    return int(std::find(stacks.begin(), stacks.end(), s) - stacks.begin());
  };
  // Layer colours run over viridis 0…0.85 (its yellow end is hard to see on white).
  auto layer_colour = [&](core::Stack stack, int layer) {
    const int n = layers_of[stack];
    return viridis_colour(n > 1 ? 0.85 * layer / (n - 1) : 0.0);
  };
  Panel heads, layers;
  heads.title = "Per head: W_Q W_Kᵀ of each head";
  layers.title = "Per layer: W_Q W_Kᵀ over the layer's heads";
  // A form zero or negligible beside its layer's (Spectrum::negligible) has no curve: σ_k / σ_1 would
  // draw rounding noise as the shape of a working head. The note counts them.
  int negligible = 0;
  for (const auto& h : report.heads)
    if (h.spectrum && h.spectrum->applicable && h.spectrum->negligible) {
      ++negligible;
    } else if (h.spectrum && h.spectrum->applicable) {
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
                           std::string(stacks.size() > 1 ? "; line: stack" : "") +
                           (negligible ? "; " + std::to_string(negligible) + (negligible == 1 ? " head" : " heads") +
                                             " with a zero or negligible form not drawn"
                                       : std::string());
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
      core::Stack stack = stacks[si];
      const int n = layers_of[stack];
      const double y = legend_top + si * 14;
      double x = margin;
      set(cr, kBlack);
      const std::string name = std::string(core::stack_name(stack)) + " layers";
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
        draw_image(cr, 256, 1, [&](int, int c) { return viridis_colour(0.85 * (c + 0.5) / 256.0); }, x, y, 160, 8);
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
    throw std::runtime_error("example map " + who + " (" + core::stack_name(map.stack) + "): " + std::to_string(map.weights.size()) +
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
  const std::string subtitle = std::string(core::stack_name(map.stack)) + " · attention weights (rows: queries, columns: keys)";
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
    draw_image(cr, T, T, [&](int r, int c) { return viridis_colour(range.t(map.weights[size_t(r) * T + c])); }, left, top,
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

}  // namespace headlab::analysis::figure_kit
