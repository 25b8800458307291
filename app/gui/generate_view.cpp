#include "app/gui/generate_view.h"

#include "app/document/controls_edit.h"
#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"
#include "app/layout/colormap.h"
#include "core/memory_budget.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace headlab::app {
namespace {

bool can_generate(const ModelSummary& m) { return m.find(core::Stack::Decoder) != nullptr; }

// The colour range of attention weights, as the maps use it: 0–1, or 0 to the largest of `values`
// with auto range (View ▸ Weights: each map to its own maximum), log when asked.
MapRange weight_range(const Workbench& wb, const float* values, size_t n) {
  const auto& v = wb.doc().session.view;
  return map_range(values, n, false, v.log_scale, !v.auto_range);
}

// The colour bar of the map below it, on a line of its own.
void scale_legend(const Workbench& wb, const MapRange& range) {
  const auto& v = wb.doc().session.view;
  inline_colour_bar(colormap_from_name(v.colormap), range, ImGui::GetFontSize() * 6,
                    v.auto_range ? "auto range: 0 to the largest weight shown" : "attention weight, 0 to 1 (as the maps)");
  ImGui::SameLine();
  ImGui::TextDisabled(v.auto_range ? "weight (auto range)" : "weight");
}

// The step's sink share of `head` in `layer` (learned sinks), or a negative number when it has none.
float sink_of(const GeneratedStep& s, int layer, int head) {
  if (size_t(layer) >= s.sinks.size() || head >= int(s.sinks[size_t(layer)].size())) return -1.0f;
  return s.sinks[size_t(layer)][size_t(head)];
}

// The sink's cell, right of a row of keys on the row's colour scale, with its tooltip.
void sink_cell(ImDrawList* list, const ImVec2& a, const ImVec2& b, float share, const MapRange& range, Colormap cmap,
               const char* row_name) {
  const Rgb c = colormap_rgb(cmap, range.normalize(share));
  list->AddRectFilled(a, b, IM_COL32(c.r, c.g, c.b, 255));
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (mouse.x >= a.x && mouse.x < b.x + 1 && mouse.y >= a.y && mouse.y < b.y + 1 && ImGui::IsWindowHovered())
    ImGui::SetTooltip("%s: the learned sink's share = %.5f\n(this row's weights on the tokens sum to %.5f)", row_name, share,
                      1.0f - share);
}

}  // namespace

void GenerateView::drawContent(Workbench& wb) {
  const Document& doc = wb.doc();
  if (!doc.model) return;
  if (!can_generate(*doc.model)) {
    ImGui::TextWrapped("Generation needs a causal LM or an encoder-decoder; %s is a %s.", doc.model->name.c_str(),
                       doc.model->masked_lm ? "masked-LM encoder" : "model without a decoder");
    return;
  }
  // The fields follow the session's settings when a command or a loaded session changes them.
  const auto& session = doc.session.generation;
  if (!session.settings.prompt.empty() && session.settings != shown_) edit_ = shown_ = session.settings;
  // Labels stand before their fields, where they are read.
  auto label = [](const char* text) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted(text);
    ImGui::SameLine();
  };
  const bool ids = !doc.model->has_tokenizer;
  label(ids ? "prompt ids" : "prompt");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##prompt", ids ? "token ids, e.g. 5, 17, 3 (this model has no tokenizer)" : "text to continue",
                           &edit_.prompt);
  label("new tokens");
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("##max_new", &edit_.max_new);
  edit_.max_new = std::clamp(edit_.max_new, 1, 4096);
  ImGui::SameLine();
  label("temperature");
  ImGui::SetNextItemWidth(90);
  ImGui::SliderFloat("##temperature", &edit_.temperature, 0.0f, 2.0f, edit_.temperature == 0 ? "greedy" : "%.2f");
  label("top-k");
  ImGui::SetNextItemWidth(90);
  ImGui::InputInt("##top_k", &edit_.top_k);
  edit_.top_k = std::max(0, edit_.top_k);
  ImGui::SameLine();
  label("top-p");
  ImGui::SetNextItemWidth(90);
  ImGui::SliderFloat("##top_p", &edit_.top_p, 0.05f, 1.0f, "%.2f");
  ImGui::SameLine();
  label("seed");
  ImGui::SetNextItemWidth(90);
  int seed = static_cast<int>(edit_.seed);
  if (ImGui::InputInt("##seed", &seed)) edit_.seed = seed;
  if (!doc.generation_job.running) {
    if (ImGui::Button("Generate")) {
      selected_ = -1;
      wb.apply(cmd::Generate{edit_});
    }
    // One token more: the tokens so far are kept (written again as they were), one is drawn.
    ImGui::SameLine();
    const bool continues = session.settings.prompt == edit_.prompt && !session.generated.empty();
    const int have = continues ? int(session.generated.size()) : 0;
    if (ImGui::Button("Step")) {
      selected_ = -1;
      GenerationSettings one_more = edit_;
      one_more.max_new = have + 1;
      wb.apply(cmd::Generate{one_more, have});
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Write one token more (%d so far)", have);
  } else if (ImGui::Button("Stop")) {
    wb.apply(cmd::StopGeneration{});
  }
  ImGui::SameLine();
  auto g = doc.generation;
  if (g && g->model_folder != doc.model->folder) g.reset();  // written by another model
  if (doc.generation_job.running) ImGui::TextDisabled("writing… %zu tokens", g ? g->steps.size() : size_t(0));
  else if (!doc.generation_job.error.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.45f, 1), "%s", doc.generation_job.error.c_str());
  else if (g) {
    // Why it ended, in words (core/model/generate.h's reasons).
    const std::string why = g->stopped == "cancelled"         ? "stopped (Stop)"
                            : g->stopped == "max_new"         ? "the most new tokens asked for"
                            : g->stopped == "end of sequence" ? "ended at an end-of-sequence token"
                                                              : g->stopped;
    ImGui::TextDisabled("%zu tokens, %s", g->steps.size(), why.c_str());
  }
  if (g)
    for (const auto& note : g->notes) ImGui::TextWrapped("%s", note.c_str());
  if (!g) return;
  // A text written before the Mixer changed is the old controls' text, and says so.
  if (!doc.generation_job.running && !same_controls(g->controls, doc.session.controls)) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.25f, 1.0f));
    ImGui::TextWrapped("written with other gates or mixing than the Mixer's now: Generate to write with these");
    ImGui::PopStyleColor();
  }

  // The text as tokens: the prompt's greyed, each generated one a button that shows its step.
  ImGui::Separator();
  const float right = ImGui::GetWindowContentRegionMax().x;
  auto chip = [&](const std::string& label, bool generated, int step) {
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    if (ImGui::GetItemRectMax().x + size.x + 16 < ImGui::GetWindowPos().x + right) ImGui::SameLine(0, 3);
    if (!generated) {
      ImGui::TextDisabled("%s", label.c_str());
      return;
    }
    const bool on = step == (selected_ < 0 ? int(g->steps.size()) - 1 : selected_);
    if (text_button(label, step, on)) selected_ = step;
  };
  ImGui::TextUnformatted("");
  for (const auto& t : g->prompt_tokens) chip(token_label(t, 16), false, -1);
  for (size_t s = 0; s < g->steps.size(); ++s) chip(token_label(g->steps[s].token, 16), true, int(s));
  if (g->steps.empty()) return;
  ImGui::Separator();
  drawStep(wb);
}

void GenerateView::drawStep(Workbench& wb) {
  const auto& g = *wb.doc().generation;
  const int step = selected_ < 0 || selected_ >= int(g.steps.size()) ? int(g.steps.size()) - 1 : selected_;
  const GeneratedStep& s = g.steps[size_t(step)];

  // The cache against MHA of the same heads, after this step.
  const int64_t tokens = int64_t(g.prompt_tokens.size()) + step;
  const int64_t mha = g.mha_bytes_per_token * std::max<int64_t>(1, tokens);
  const std::string cache = "KV cache " + core::format_bytes(s.cache_bytes) + ", " +
                            core::format_bytes(g.bytes_per_token) + " a token (MHA with the same heads: " +
                            core::format_bytes(mha) + ", " + core::format_bytes(g.mha_bytes_per_token) + " a token)";
  ImGui::ProgressBar(mha > 0 ? float(double(s.cache_bytes) / double(mha)) : 0.0f, ImVec2(-1, 0), cache.c_str());

  // The alternatives the token was drawn against, and Δp against the model without the controls.
  ImGui::Text("step %d: '%s'%s — top 5 (p):", step, token_label(s.token, 16).c_str(), s.kept ? " (kept)" : "");
  for (size_t i = 0; i < s.top.size(); ++i) {
    const std::string text = token_label(s.top[i].first, 14) + " " + format_probability(s.top[i].second);
    const float d = i < s.top_base.size() ? s.top[i].second - s.top_base[i] : 0.0f;
    std::string delta;
    if (i < s.top_base.size()) delta = " (" + format_probability_change(d) + ")";
    same_line_if_fits(ImGui::CalcTextSize(text.c_str()).x + ImGui::CalcTextSize(delta.c_str()).x + 8);
    ImGui::TextUnformatted(text.c_str());
    if (!delta.empty()) {
      ImGui::SameLine(0, 0);
      const float rel = std::fabs(d) / std::max(1e-12f, s.top[i].second);  // colour only a change that matters
      ImGui::TextColored(rel > 1e-3f && d > 0   ? ImVec4(0.4f, 0.9f, 0.4f, 1)
                         : rel > 1e-3f && d < 0 ? ImVec4(1.0f, 0.45f, 0.45f, 1)
                                                : ImVec4(0.6f, 0.6f, 0.6f, 1),
                         "%s", delta.c_str());
    }
  }
  if (!s.top_base.empty()) ImGui::TextDisabled("(Δp: against the model without the Mixer's gates and mixing, same text so far)");
  // Going back: keep the tokens before this one and write on from here with the current controls.
  if (!wb.doc().generation_job.running && ImGui::SmallButton("Write again from here")) {
    wb.apply(cmd::Generate{wb.doc().session.generation.settings, step});
    selected_ = step;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Keeps the %d tokens before this one and writes the rest again, with the Mixer's current gates", step);
  if (s.rows.empty()) return;

  layer_ = std::clamp(layer_, 0, int(s.rows.size()) - 1);
  ImGui::SetNextItemWidth(140);
  label_before("layer");
  ImGui::SetNextItemWidth(140);
  ImGui::SliderInt("##layer", &layer_, 0, int(s.rows.size()) - 1);
  ImGui::SameLine();
  ImGui::Checkbox("map of one head", &as_map_);
  if (as_map_) {
    drawMap(wb);
    return;
  }
  ImGui::SameLine();
  const bool sinks = sink_of(s, layer_, 0) >= 0;
  ImGui::TextDisabled(sinks ? "the new query's attention over %d keys, one row a head; right: the learned sink's share"
                            : "the new query's attention over %d keys, one row a head",
                      s.keys);
  // The query's row in every head of one layer: heads down, keys across, on the maps' scale; with
  // learned sinks the sink's share in a column of its own (the row and it sum to 1), on the same scale.
  const std::vector<float>& row = s.rows[size_t(layer_)];
  std::vector<float> shown = row;
  if (sinks) shown.insert(shown.end(), s.sinks[size_t(layer_)].begin(), s.sinks[size_t(layer_)].end());
  const MapRange range = weight_range(wb, shown.data(), shown.size());
  scale_legend(wb, range);
  const float label_w = 36, sink_gap = sinks ? 6.0f : 0.0f;
  const float avail = ImGui::GetContentRegionAvail().x - label_w - sink_gap;
  const float cell_w = std::max(2.0f, std::min(28.0f, avail / float(std::max(1, s.keys + (sinks ? 1 : 0)))));
  const float sink_w = sinks ? std::max(cell_w, 8.0f) : 0.0f;
  // Rows no lower than a line of text (the window scrolls when there are many heads).
  const float cell_h = std::clamp((ImGui::GetContentRegionAvail().y - 8) / float(std::max(1, s.heads)),
                                  ImGui::GetTextLineHeight() + 2, 22.0f);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const Colormap cmap = colormap_from_name(wb.doc().session.view.colormap);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int h = 0; h < s.heads; ++h) {
    const float y = origin.y + h * cell_h;
    list->AddText(ImVec2(origin.x, y + (cell_h - ImGui::GetTextLineHeight()) / 2), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  ("H" + std::to_string(h)).c_str());
    for (int k = 0; k < s.keys; ++k) {
      const float v = row[size_t(h) * s.keys + k];
      const Rgb c = colormap_rgb(cmap, range.normalize(v));
      const ImVec2 a(origin.x + label_w + k * cell_w, y), b(a.x + cell_w - 1, y + cell_h - 1);
      list->AddRectFilled(a, b, IM_COL32(c.r, c.g, c.b, 255));
      if (mouse.x >= a.x && mouse.x < b.x + 1 && mouse.y >= a.y && mouse.y < b.y + 1 && ImGui::IsWindowHovered()) {
        const std::string key = k < int(g.prompt_tokens.size()) ? g.prompt_tokens[size_t(k)]
                                                                 : g.steps[size_t(k) - g.prompt_tokens.size()].token;
        ImGui::SetTooltip("head %d → key %d '%s': %.4f", h, k, key.c_str(), v);
      }
    }
    const float share = sink_of(s, layer_, h);
    if (share >= 0) {
      const ImVec2 a(origin.x + label_w + s.keys * cell_w + sink_gap, y);
      sink_cell(list, a, ImVec2(a.x + sink_w - 1, y + cell_h - 1), share, range, cmap, ("head " + std::to_string(h)).c_str());
    }
  }
  const float width = label_w + s.keys * cell_w + sink_gap + sink_w;
  ImGui::Dummy(ImVec2(width, s.heads * cell_h));
  markFigure(origin, ImVec2(origin.x + width, origin.y + s.heads * cell_h));
}

void GenerateView::drawMap(Workbench& wb) {
  // One head's map as generation built it: row s is step s's query over the keys it had.
  const auto& g = *wb.doc().generation;
  const GeneratedStep& last = g.steps.back();
  head_ = std::clamp(head_, 0, std::max(0, last.heads - 1));
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  label_before("head");
  ImGui::SetNextItemWidth(120);
  ImGui::SliderInt("##head", &head_, 0, std::max(0, last.heads - 1));
  const int rows = int(g.steps.size()), cols = last.keys;
  // With learned sinks each step's sink share in a column of its own, right of the keys.
  const bool sinks = sink_of(last, layer_, head_) >= 0;
  // One scale for the whole map: 0–1, or (auto range) 0 to the largest weight of its rows (and sinks).
  std::vector<float> all;
  for (const auto& s : g.steps)
    if (size_t(layer_) < s.rows.size()) {
      const float* row = s.rows[size_t(layer_)].data() + size_t(head_) * s.keys;
      all.insert(all.end(), row, row + s.keys);
      if (sink_of(s, layer_, head_) >= 0) all.push_back(sink_of(s, layer_, head_));
    }
  const MapRange range = weight_range(wb, all.data(), all.size());
  scale_legend(wb, range);
  if (sinks) {
    ImGui::SameLine();
    ImGui::TextDisabled("  right: the learned sink's share");
  }
  const Colormap cmap = colormap_from_name(wb.doc().session.view.colormap);
  const float cell = std::clamp(std::min((ImGui::GetContentRegionAvail().x - 8) / float(std::max(1, cols + (sinks ? 1 : 0))),
                                         (ImGui::GetContentRegionAvail().y - 8) / float(std::max(1, rows))),
                                3.0f, 24.0f);
  ImDrawList* list = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int r = 0; r < rows; ++r) {
    const GeneratedStep& s = g.steps[size_t(r)];
    if (size_t(layer_) >= s.rows.size()) continue;
    const float* row = s.rows[size_t(layer_)].data() + size_t(head_) * s.keys;
    for (int k = 0; k < cols; ++k) {
      const ImVec2 a(origin.x + k * cell, origin.y + r * cell), b(a.x + cell - 1, a.y + cell - 1);
      if (k >= s.keys) {  // keys the query at this step could not see yet
        list->AddRectFilled(a, b, IM_COL32(60, 60, 60, 255));
        continue;
      }
      const Rgb c = colormap_rgb(cmap, range.normalize(row[k]));
      list->AddRectFilled(a, b, IM_COL32(c.r, c.g, c.b, 255));
      if (mouse.x >= a.x && mouse.x < b.x + 1 && mouse.y >= a.y && mouse.y < b.y + 1 && ImGui::IsWindowHovered())
        ImGui::SetTooltip("step %d ('%s') → key %d: %.4f", r, s.token.c_str(), k, row[k]);
    }
    const float share = sink_of(s, layer_, head_);
    if (sinks && share >= 0) {
      const ImVec2 a(origin.x + cols * cell + 4, origin.y + r * cell);
      sink_cell(list, a, ImVec2(a.x + cell - 1, a.y + cell - 1), share, range, cmap, ("step " + std::to_string(r)).c_str());
    }
  }
  const float width = cols * cell + (sinks ? 4 + cell : 0.0f);
  ImGui::Dummy(ImVec2(width, rows * cell));
  markFigure(origin, ImVec2(origin.x + width, origin.y + rows * cell));
}

}  // namespace headlab::app
