#include "app/gui/plot.h"

#include "app/gui/draw_util.h"

#include <algorithm>
#include <cmath>

namespace headlab::app {
namespace {

float text_width(const std::string& s) { return ImGui::CalcTextSize(s.c_str()).x; }

// "10⁻³" needs the superscript block (DejaVu Sans has it; ImGui's built-in font does not).
LogLabels decade_style() {
  return ImGui::GetFont()->FindGlyphNoFallback(0x207B) ? LogLabels::Superscript : LogLabels::Exponent;
}

std::vector<Tick> axis_ticks(bool log, const AxisRange& r, int max_ticks) {
  return log ? log_ticks(r.lo, r.hi, max_ticks, decade_style()) : linear_ticks(r.lo, r.hi, max_ticks);
}

float widest(const std::vector<Tick>& ticks) {
  float w = 0;
  for (const auto& t : ticks) w = std::max(w, text_width(t.label));
  return w;
}

void tooltip(const std::string& text) {
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(text.c_str());
  ImGui::EndTooltip();
}

}  // namespace

std::string fit_text(const std::string& text, float max_width) {
  if (text_width(text) <= max_width) return text;
  const std::string ellipsis = "\xE2\x80\xA6";
  for (size_t n = text.size(); n > 0;) {
    do --n;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80);  // whole code points only
    const std::string cut = text.substr(0, n) + ellipsis;
    if (text_width(cut) <= max_width) return cut;
  }
  return text_width(ellipsis) <= max_width ? ellipsis : "";
}

void Plot::begin(const char* id, ImVec2 size, std::string title, PlotAxis x, PlotAxis y) {
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  size_ = ImVec2(size.x > 0 ? size.x : std::max(1.0f, avail.x), size.y > 0 ? size.y : std::max(1.0f, avail.y));
  pos_ = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(id, size_);
  hovered_ = ImGui::IsItemHovered();
  title_ = std::move(title);
  x_ = std::move(x);
  y_ = std::move(y);
  series_.clear();
  markers_.clear();
}

void Plot::add_line(std::vector<double> xs, std::vector<double> ys, ImU32 colour, std::string label) {
  if (xs.empty())
    for (size_t i = 0; i < ys.size(); ++i) xs.push_back(double(i + 1));
  xs.resize(std::min(xs.size(), ys.size()));
  ys.resize(xs.size());
  series_.push_back({false, std::move(xs), std::move(ys), {}, colour, std::move(label)});
}

void Plot::add_bars(std::vector<std::string> categories, std::vector<double> values, ImU32 colour, std::string label) {
  series_.push_back({true, {}, std::move(values), std::move(categories), colour, std::move(label)});
}

void Plot::add_vline(double x, ImU32 colour, std::string label) { markers_.push_back({true, x, colour, std::move(label)}); }

void Plot::add_hline(double y, ImU32 colour, std::string label) { markers_.push_back({false, y, colour, std::move(label)}); }

PlotHover Plot::end() {
  PlotHover hover;
  ImDrawList* list = ImGui::GetWindowDrawList();
  const float fh = ImGui::GetFontSize();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), border = ImGui::GetColorU32(ImGuiCol_Border);
  const ImU32 grid = ImGui::GetColorU32(ImGuiCol_Border, 0.5f), grid_minor = ImGui::GetColorU32(ImGuiCol_Border, 0.2f);
  auto at = [&](float x, float y) { return ImVec2(pos_.x + x, pos_.y + y); };

  // Ranges: bars put their categories at 0 … n−1; otherwise the data (and markers) decide unless given.
  int categories = 0, bar_series = 0;
  const std::vector<std::string>* names = nullptr;
  bool has_legend = false;
  std::vector<double> xs, ys;
  for (const auto& s : series_) {
    has_legend = has_legend || !s.label.empty();
    if (s.bars) {
      ++bar_series;
      categories = std::max(categories, static_cast<int>(s.ys.size()));
      if (!names) names = &s.categories;
    }
    xs.insert(xs.end(), s.xs.begin(), s.xs.end());
    ys.insert(ys.end(), s.ys.begin(), s.ys.end());
  }
  for (const auto& m : markers_) (m.vertical ? xs : ys).push_back(m.value);
  const bool x_log = x_.log && !bar_series;
  const AxisRange xr = bar_series ? AxisRange{-0.5, categories - 0.5} : x_.range ? *x_.range : padded_range(xs, x_log);
  const AxisRange yr = y_.range ? *y_.range : padded_range(ys, y_.log, bar_series > 0);

  // Layout in passes: y tick labels set the left margin; category labels too wide for their slot
  // are written upwards, which takes height from the data area.
  const bool has_x_label = !x_.label.empty();
  PlotLayout l = layout_plot(size_.x, size_.y, 0, fh, !title_.empty(), has_legend, 0, has_x_label);
  std::vector<Tick> y_ticks = axis_ticks(y_.log, yr, std::max(2, int(l.inner.height() / (2.2f * fh))));
  l = layout_plot(size_.x, size_.y, widest(y_ticks), fh, !title_.empty(), has_legend, 0, has_x_label);
  float slot = categories ? l.inner.width() / categories : 0;
  bool rotated = false;
  int label_every = 1;
  if (names) {
    float w = 0;
    for (const auto& n : *names) w = std::max(w, text_width(n));
    if (w > slot - 4) {
      rotated = true;
      label_every = std::max(1, static_cast<int>(std::ceil(1.1f * fh / std::max(slot, 1.0f))));
      l = layout_plot(size_.x, size_.y, widest(y_ticks), fh, !title_.empty(), has_legend,
                      std::min(w, 0.3f * size_.y), has_x_label);
      y_ticks = axis_ticks(y_.log, yr, std::max(2, int(l.inner.height() / (2.2f * fh))));
    }
  }
  const PlotRect& in = l.inner;
  list->AddRectFilled(at(0, 0), at(size_.x, size_.y), ImGui::GetColorU32(ImGuiCol_FrameBg, 0.35f));
  if (!title_.empty()) {
    const std::string t = fit_text(title_, l.title.width());
    list->AddText(at(l.title.x0 + (l.title.width() - text_width(t)) / 2, l.title.y0), text, t.c_str());
  }
  if (!l.fits) {
    // Never an empty frame that reads as "no data": say why nothing is drawn.
    const std::string note = fit_text("enlarge the view to see this chart", size_.x - 8);
    list->AddText(at((size_.x - text_width(note)) / 2, std::max(0.0f, (size_.y - fh) / 2)),
                  ImGui::GetColorU32(ImGuiCol_TextDisabled), note.c_str());
    return hover;
  }
  auto px = [&](double v) { return float(to_pixel(v, xr, in.x0, in.x1, x_log)); };
  auto py = [&](double v) { return float(to_pixel(v, yr, in.y1, in.y0, y_.log)); };

  // Grid, ticks and tick labels.
  for (const auto& t : y_ticks) {
    const float y = py(t.value);
    if (!(y >= in.y0 - 0.5f && y <= in.y1 + 0.5f)) continue;
    list->AddLine(at(in.x0, y), at(in.x1, y), t.major ? grid : grid_minor);
    if (t.label.empty()) continue;
    list->AddLine(at(in.x0 - l.tick_length, y), at(in.x0, y), border);
    const PlotRect r = y_tick_label_rect(l, y, text_width(t.label));
    list->AddText(at(r.x0, r.y0), text, t.label.c_str());
  }
  if (names) {
    for (int i = 0; i < categories; i += label_every) {
      const float cx = in.x0 + slot * (i + 0.5f);
      const std::string& name = size_t(i) < names->size() ? (*names)[size_t(i)] : std::string();
      list->AddLine(at(cx, in.y1), at(cx, in.y1 + l.tick_length), border);
      if (rotated) {
        const std::string s = fit_text(name, l.x_tick_label_height);
        text_vertical(list, at(cx - fh / 2, in.y1 + l.tick_length + l.gap + text_width(s)), text, s);
      } else {
        const PlotRect r = x_tick_label_rect(l, cx, text_width(name));
        list->AddText(at(r.x0, r.y0), text, name.c_str());
      }
    }
  } else {
    std::vector<Tick> x_ticks = axis_ticks(x_log, xr, std::max(2, int(in.width() / (4 * fh))));
    const int fit = int(in.width() / (widest(x_ticks) + fh));
    if (fit < static_cast<int>(x_ticks.size())) x_ticks = axis_ticks(x_log, xr, std::max(2, fit));
    for (const auto& t : x_ticks) {
      const float x = px(t.value);
      if (!(x >= in.x0 - 0.5f && x <= in.x1 + 0.5f)) continue;
      list->AddLine(at(x, in.y0), at(x, in.y1), t.major ? grid : grid_minor);
      if (t.label.empty()) continue;
      list->AddLine(at(x, in.y1), at(x, in.y1 + l.tick_length), border);
      const PlotRect r = x_tick_label_rect(l, x, text_width(t.label));
      list->AddText(at(r.x0, r.y0), text, t.label.c_str());
    }
  }
  if (!x_.label.empty()) {
    const std::string s = fit_text(x_.label, l.x_label.width());
    list->AddText(at(l.x_label.x0 + (l.x_label.width() - text_width(s)) / 2, l.x_label.y0), text, s.c_str());
  }
  if (!y_.label.empty()) {
    const std::string s = fit_text(y_.label, l.y_label.height());
    text_vertical(list, at(l.y_label.x0, l.y_label.y0 + (l.y_label.height() + text_width(s)) / 2), text, s);
  }

  // Series and markers, clipped to the data area.
  list->PushClipRect(at(in.x0, in.y0), at(in.x1, in.y1), true);
  const float group = slot * 0.8f, bar_width = bar_series ? group / bar_series : 0;
  const float base = py(y_.log ? yr.lo : std::clamp(0.0, yr.lo, yr.hi));
  auto bar_x0 = [&](int category, int b) { return in.x0 + slot * category + slot * 0.1f + b * bar_width; };
  int b = 0;
  for (const auto& s : series_) {
    if (s.bars) {
      for (size_t i = 0; i < s.ys.size(); ++i) {
        const float y = py(s.ys[i]), x0 = bar_x0(int(i), b);
        if (std::isnan(y)) continue;
        const float inset = bar_width > 3 ? 1.0f : 0.0f;  // a hairline apart so neighbours stay distinct
        list->AddRectFilled(at(x0, std::min(y, base)), at(x0 + bar_width - inset, std::max(y, base)), s.colour);
      }
      ++b;
      continue;
    }
    std::vector<ImVec2> run;
    auto flush = [&] {
      if (run.size() >= 2) list->AddPolyline(run.data(), int(run.size()), s.colour, 0, 1.5f);
      else if (run.size() == 1) list->AddCircleFilled(run[0], 2.5f, s.colour);
      run.clear();
    };
    for (size_t i = 0; i < s.xs.size(); ++i) {
      const float x = px(s.xs[i]), y = py(s.ys[i]);
      if (std::isnan(x) || std::isnan(y)) flush();
      else run.push_back(at(x, y));
    }
    flush();
  }
  int vlines = 0;
  for (const auto& m : markers_) {
    const float v = m.vertical ? px(m.value) : py(m.value);
    if (std::isnan(v)) continue;
    const float w = text_width(m.label);
    if (m.vertical) {
      list->AddLine(at(v, in.y0), at(v, in.y1), m.colour, 1.5f);
      const float lx = v + 3 + w > in.x1 ? v - 3 - w : v + 3;  // labels of close markers step down
      list->AddText(at(lx, in.y0 + 2 + (vlines++ % 3) * fh), m.colour, m.label.c_str());
    } else {
      list->AddLine(at(in.x0, v), at(in.x1, v), m.colour, 1.5f);
      // Above the line, or below it when the line runs along the top of the data area.
      const float ly = v - fh - 1 >= in.y0 ? v - fh - 1 : v + 2;
      list->AddText(at(in.x1 - 3 - w, ly), m.colour, m.label.c_str());
    }
  }
  list->PopClipRect();
  list->AddRect(at(in.x0, in.y0), at(in.x1, in.y1), border);

  // Legend: swatch and label per labelled series, left to right, "…" when the row is full.
  float lx = l.legend.x0;
  for (const auto& s : series_) {
    if (s.label.empty()) continue;
    const float need = fh + 4 + text_width(s.label);
    if (lx + need > l.legend.x1) {
      list->AddText(at(lx, l.legend.y0), text, "\xE2\x80\xA6");
      break;
    }
    const float cy = l.legend.y0 + fh / 2;
    if (s.bars) list->AddRectFilled(at(lx + 0.15f * fh, cy - 0.35f * fh), at(lx + 0.85f * fh, cy + 0.35f * fh), s.colour);
    else list->AddLine(at(lx, cy), at(lx + fh, cy), s.colour, 2.0f);
    list->AddText(at(lx + fh + 4, l.legend.y0), text, s.label.c_str());
    lx += need + fh;
  }

  // Hover: the bar under the mouse, else the nearest point within reach, else a vertical marker.
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const float mx = mouse.x - pos_.x, my = mouse.y - pos_.y;
  if (!hovered_ || mx < in.x0 || mx > in.x1 || my < in.y0 || my > in.y1) return hover;
  if (bar_series && slot > 0) {
    const int i = std::clamp(int((mx - in.x0) / slot), 0, categories - 1);
    const int pick = std::clamp(int(std::floor((mx - bar_x0(i, 0)) / std::max(bar_width, 1.0f))), 0, bar_series - 1);
    std::string tip = names && size_t(i) < names->size() ? (*names)[size_t(i)] : "";
    int k = 0;
    for (size_t s = 0; s < series_.size(); ++s) {
      if (!series_[s].bars) continue;
      const bool has = size_t(i) < series_[s].ys.size();
      if (has) tip += "\n" + (series_[s].label.empty() ? "" : series_[s].label + ": ") + format_compact(series_[s].ys[size_t(i)], 4);
      if (k++ == pick && has) hover = {true, int(s), i, double(i), series_[s].ys[size_t(i)]};
    }
    if (hover.active) {
      const float y = py(hover.y);
      if (!std::isnan(y)) list->AddRect(at(bar_x0(i, pick), std::min(y, base)), at(bar_x0(i, pick) + bar_width, std::max(y, base)), text);
    }
    tooltip(tip);
    return hover;
  }
  float best = (1.5f * fh) * (1.5f * fh);
  for (size_t s = 0; s < series_.size(); ++s)
    for (size_t i = 0; i < series_[s].xs.size(); ++i) {
      const float dx = px(series_[s].xs[i]) - mx, dy = py(series_[s].ys[i]) - my;
      if (dx * dx + dy * dy < best) {  // false for NaN, so hidden points are never picked
        best = dx * dx + dy * dy;
        hover = {true, int(s), int(i), series_[s].xs[i], series_[s].ys[i]};
      }
    }
  if (hover.active) {
    const Series& s = series_[size_t(hover.series)];
    list->AddCircle(at(px(hover.x), py(hover.y)), 4.0f, s.colour, 0, 2.0f);
    tooltip((s.label.empty() ? "" : s.label + "\n") + x_.label + (x_.label.empty() ? "x" : "") + " = " +
            format_compact(hover.x, 4) + "\n" + y_.label + (y_.label.empty() ? "y" : "") + " = " + format_compact(hover.y, 4));
    return hover;
  }
  for (size_t k = 0; k < markers_.size(); ++k) {
    const Marker& m = markers_[k];
    if (m.vertical && std::fabs(px(m.value) - mx) <= 4) {
      hover = {true, -1, int(k), m.value, from_pixel(my, yr, in.y1, in.y0, y_.log)};
      tooltip((m.label.empty() ? "" : m.label + ": ") + format_compact(m.value, 4));
      break;
    }
  }
  return hover;
}

}  // namespace headlab::app
