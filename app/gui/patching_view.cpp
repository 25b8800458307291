#include "app/gui/patching_view.h"

#include "analysis/heatmap_figure.h"
#include "app/document/controls_edit.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/layout/relevance_colors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace headlab::app {
namespace {

ImU32 colour_of(double strength) {
  const Rgb c = relevance_rgb(strength);
  return IM_COL32(c.r, c.g, c.b, 255);
}

bool site_has_heads(const std::string& site) { return site != "resid" && site != "mlp"; }

// The diverging scale is white at 1 (the clean result kept) and blue toward 0 (the counterfactual's):
// its half-width is 1, the distance between the two results, unless some effect goes beyond it.
constexpr float kCentre = 1.0f;

float scale_of(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  float most = 1.0f;
  for (const auto* t : {&a, &b})
    for (const auto& row : *t)
      for (float v : row)
        if (std::isfinite(v)) most = std::max(most, std::abs(v - kCentre));
  return most;
}

// A vertical bar of the diverging scale from centre − scale to centre + scale, with its three labels.
void diverging_bar(ImVec2 at, float height, float scale) {
  auto* dl = ImGui::GetWindowDrawList();
  const float w = ImGui::GetFontSize() * 0.8f;
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    const double s = 1.0 - 2.0 * (i + 0.5) / steps;
    dl->AddRectFilled(ImVec2(at.x, at.y + height * i / steps), ImVec2(at.x + w, at.y + height * (i + 1) / steps + 1),
                      colour_of(s));
  }
  dl->AddRect(at, ImVec2(at.x + w, at.y + height), IM_COL32(140, 140, 140, 255));
  char text[32];
  const float x = at.x + w + 4, line = ImGui::GetTextLineHeight();
  std::snprintf(text, sizeof text, "%.2g", double(kCentre + scale));
  dl->AddText(ImVec2(x, at.y), IM_COL32(220, 220, 220, 255), text);
  std::snprintf(text, sizeof text, "%.2g", double(kCentre));
  dl->AddText(ImVec2(x, at.y + height / 2 - line / 2), IM_COL32(220, 220, 220, 255), text);
  std::snprintf(text, sizeof text, "%.2g", double(kCentre - scale));
  dl->AddText(ImVec2(x, at.y + height - line), IM_COL32(220, 220, 220, 255), text);
}

// What the result was measured with that the views no longer show ("measured on another clean
// input …"): drawn by the view, and written on its figure.
std::vector<std::string> stale_lines(const Document& doc, const PatchingResult& r) {
  std::vector<std::string> lines;
  if (r.settings != doc.session.patching.settings)
    lines.push_back("measured with other settings (" + r.settings.site + ", " + r.settings.metric + ")");
  if (doc.snapshot && r.clean_ids != doc.snapshot->tokens.ids)
    lines.push_back("measured on another clean input (" + std::to_string(r.clean_ids.size()) +
                    " tokens; the Input view's has " + std::to_string(doc.snapshot->tokens.ids.size()) + ")");
  if (!same_controls(r.controls, doc.session.controls))
    lines.push_back("measured with other gates or mixing in the Mixer");
  return lines;
}

}  // namespace

void PatchingView::drawSettings(Workbench& wb) {
  const auto& session = wb.doc().session;
  if (session.patching.settings != shown_) edit_ = shown_ = session.patching.settings;
  // Patch measures the text last run (its tokens), not an edit of the Input box not yet run.
  const auto& snapshot = wb.doc().snapshot;
  if (snapshot) {
    ImGui::TextDisabled("clean (the text last run in the Input view): %s", snapshot->input.text.c_str());
    if (session.text != snapshot->input.text)
      ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s",
                         wb.doc().refused ? "the Input box's text was refused (see the Input view): Patch measures the text above"
                                          : "the Input box holds an edit not yet run: Enter runs it, then Patch");
  } else {
    ImGui::TextDisabled("clean: run a text in the Input view first");
  }
  label_before("counterfactual");
  ImGui::SetNextItemWidth(-1);
  char buffer[2048];
  std::snprintf(buffer, sizeof buffer, "%s", edit_.counterfactual.c_str());
  if (ImGui::InputText("##cf", buffer, sizeof buffer)) edit_.counterfactual = buffer;
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("the same sentence with what matters changed; it must have as many tokens as the clean text");
  auto token_field = [&](const char* label, std::string& value) {
    label_before(label);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
    char b[256];
    std::snprintf(b, sizeof b, "%s", value.c_str());
    if (ImGui::InputText((std::string("##") + label).c_str(), b, sizeof b)) value = b;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("a token (e.g. ' Mary' or 'Ġmary') or its id");
    ImGui::SameLine();
  };
  token_field("answer", edit_.answer);
  token_field("wrong", edit_.wrong);
  const char* metrics[] = {"logit-diff", "logit", "prob", "kl"};
  const char* sites[] = {"z", "pattern", "q", "k", "v", "resid", "mlp"};
  auto combo = [&](const char* label, std::string& value, const char* const* items, int n) {
    label_before(label);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    int at = 0;
    while (at < n && value != items[at]) ++at;
    if (at == n) at = 0;
    if (ImGui::Combo((std::string("##") + label).c_str(), &at, items, n)) value = items[at];
    ImGui::SameLine();
  };
  combo("metric", edit_.metric, metrics, 4);
  combo("site", edit_.site, sites, 7);
  const bool running = wb.doc().patching_job.running;
  if (running) {
    if (ImGui::Button("Stop")) wb.apply(cmd::StopPatching{});
  } else if (ImGui::Button("Patch")) {
    cmd::SetPatching set;
    set.counterfactual = edit_.counterfactual, set.answer = edit_.answer, set.wrong = edit_.wrong;
    set.metric = edit_.metric, set.site = edit_.site;
    wb.apply(set);
    wb.apply(cmd::RunPatching{});
  }
  if (edit_ != session.patching.settings && !running) {
    ImGui::SameLine();
    ImGui::TextDisabled("(edited: Patch applies)");
  }
}

void PatchingView::drawTable(Workbench& wb, const char* id, const std::vector<std::vector<float>>& table, bool heads,
                             float scale, float width) {
  if (table.empty()) return;
  auto* dl = ImGui::GetWindowDrawList();
  size_t units = 0;
  for (const auto& row : table) units = std::max(units, row.size());
  const float label_w = ImGui::CalcTextSize("L00").x + 6;
  const float cell = std::clamp((width - label_w) / float(std::max<size_t>(units, 1)), 4.0f, ImGui::GetFontSize() * 2.2f);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const auto& sel = wb.doc().session.selection;
  ImGui::PushID(id);
  for (size_t l = 0; l < table.size(); ++l) {
    const float y = origin.y + l * cell;
    char label[24];
    std::snprintf(label, sizeof label, "L%zu", l);
    dl->AddText(ImVec2(origin.x, y + cell / 2 - ImGui::GetTextLineHeight() / 2), IM_COL32(200, 200, 200, 255), label);
    for (size_t u = 0; u < table[l].size(); ++u) {
      const float v = table[l][u];
      const ImVec2 p0(origin.x + label_w + u * cell, y), p1(p0.x + cell - 1, p0.y + cell - 1);
      if (std::isfinite(v)) dl->AddRectFilled(p0, p1, colour_of(double(v - kCentre) / scale));
      else dl->AddRect(p0, p1, IM_COL32(90, 90, 90, 255));  // not run yet
      ImGui::SetCursorScreenPos(p0);
      ImGui::PushID(int(l * 4096 + u));
      if (ImGui::InvisibleButton("cell", ImVec2(cell, cell)) && heads)
        wb.apply(cmd::SelectHead{std::nullopt, int(l), int(u)});
      if (ImGui::IsItemHovered()) {
        if (std::isfinite(v) && heads)
          ImGui::SetTooltip("layer %zu, head %zu: %.3f (1 = the clean result kept, 0 = the counterfactual's)", l, u,
                            double(v));
        else if (std::isfinite(v))
          ImGui::SetTooltip("layer %zu: %.3f (1 = the clean result kept, 0 = the counterfactual's)", l, double(v));
        else
          ImGui::SetTooltip("not run yet");
      }
      ImGui::PopID();
      if (heads && int(l) == sel.layer && int(u) == sel.head) dl->AddRect(p0, p1, IM_COL32(255, 220, 0, 255), 0, 0, 2.0f);
    }
  }
  ImGui::PopID();
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + table.size() * cell + 4));
  ImGui::Dummy(ImVec2(label_w + units * cell, 1));
}

void PatchingView::drawDla(Workbench& wb, const std::vector<std::vector<float>>& dla, float width) {
  if (dla.empty()) return;
  std::vector<double> all;
  for (const auto& row : dla) all.insert(all.end(), row.begin(), row.end());
  const double scale = relevance_scale(all);
  auto* dl = ImGui::GetWindowDrawList();
  const float height = ImGui::GetFontSize() * 4;
  const float bar = std::clamp(width / float(all.size() + dla.size()), 2.0f, ImGui::GetFontSize());
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float zero = origin.y + height / 2;
  dl->AddLine(ImVec2(origin.x, zero), ImVec2(origin.x + bar * (all.size() + dla.size()), zero), IM_COL32(120, 120, 120, 255));
  const auto& sel = wb.doc().session.selection;
  float x = origin.x;
  for (size_t l = 0; l < dla.size(); ++l) {
    for (size_t h = 0; h < dla[l].size(); ++h) {
      const double v = dla[l][h];
      const float y = zero - float(v / scale) * height / 2;
      dl->AddRectFilled(ImVec2(x, std::min(y, zero)), ImVec2(x + bar - 1, std::max(y, zero)), colour_of(v / scale));
      ImGui::SetCursorScreenPos(ImVec2(x, origin.y));
      ImGui::PushID(int(l * 4096 + h));
      if (ImGui::InvisibleButton("dla", ImVec2(bar, height))) wb.apply(cmd::SelectHead{std::nullopt, int(l), int(h)});
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %zu, head %zu: %+.4g of the logit difference", l, h, v);
      ImGui::PopID();
      if (int(l) == sel.layer && int(h) == sel.head)
        dl->AddRect(ImVec2(x, origin.y), ImVec2(x + bar - 1, origin.y + height), IM_COL32(255, 220, 0, 255));
      x += bar;
    }
    x += bar;  // a gap between layers
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height + 4));
  ImGui::Dummy(ImVec2(x - origin.x, 1));
}

void PatchingView::drawContent(Workbench& wb) {
  const auto& doc = wb.doc();
  if (!doc.model) return;
  drawSettings(wb);
  if (!doc.patching_job.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.45f, 0.35f, 1));
    ImGui::TextWrapped("%s", doc.patching_job.error.c_str());
    ImGui::PopStyleColor();
  }
  const auto& r = doc.patching;
  if (!r) {
    ImGui::TextWrapped("Patch takes each head's %s from the counterfactual into the clean run, one head at a time, and "
                       "shows where the metric lands: 1 = the clean result kept, 0 = all the way to the "
                       "counterfactual's. The heads that carry the difference fall below 1.",
                       edit_.site.c_str());
    return;
  }
  ImGui::Separator();
  if (r->model_folder != doc.model->folder) {  // never drawn on another model's layers
    ImGui::TextWrapped("The last patching run measured %s; Patch to measure this model.", r->model_folder.c_str());
    return;
  }
  const bool heads = site_has_heads(r->settings.site);
  ImGui::Text("%s: clean %.4g, counterfactual %.4g at position %lld", r->settings.metric.c_str(), r->clean, r->corrupt,
              static_cast<long long>(r->position));
  // The tokens the metric reads: logit-diff the answer and the wrong one, logit and prob the
  // answer alone, kl neither (the whole distribution).
  const bool wrong = r->wrong >= 0 && r->settings.metric == "logit-diff";
  if ((!r->answer_token.empty() || r->answer >= 0) && r->settings.metric != "kl")
    ImGui::TextDisabled("answer '%s' (%lld)%s%s%s", token_label(r->answer_token, 24).c_str(),
                        static_cast<long long>(r->answer), wrong ? ", wrong '" : "",
                        wrong ? token_label(r->wrong_token, 24).c_str() : "", wrong ? "'" : "");
  // What the numbers were measured on, when it is no longer what the views show.
  for (const auto& line : stale_lines(doc, *r))
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s: Patch again to update", line.c_str());
  const float scale = scale_of(r->exact, r->attribution);
  const float avail = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 4;
  const float half = avail / 2 - ImGui::GetFontSize();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImGui::BeginGroup();
  ImGui::Text("exact patching  %lld / %lld", static_cast<long long>(r->done), static_cast<long long>(r->total));
  drawTable(wb, "exact", r->exact, heads, scale, half);
  ImGui::EndGroup();
  ImGui::SameLine(0, ImGui::GetFontSize());
  ImGui::BeginGroup();
  if (r->correlation) ImGui::Text("attribution patching (r = %.3f)", *r->correlation);
  else ImGui::TextUnformatted("attribution patching");
  if (r->settings.metric == "kl") {
    // KL(clean ‖ run) is least, with a zero gradient, at the clean run: the estimate is "all kept"
    // everywhere, a picture of nothing.
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + half);
    ImGui::TextDisabled("not drawn for kl: its first-order estimate is 0 everywhere (the clean run is its minimum); "
                        "use logit-diff or prob");
    ImGui::PopTextWrapPos();
  } else {
    drawTable(wb, "attribution", r->attribution, heads, scale, half);
  }
  ImGui::EndGroup();
  ImGui::SameLine(0, ImGui::GetFontSize());
  const float bar_h = std::max(ImGui::GetItemRectMax().y - top.y - ImGui::GetTextLineHeightWithSpacing(), ImGui::GetFontSize() * 3);
  diverging_bar(ImVec2(ImGui::GetCursorScreenPos().x, top.y + ImGui::GetTextLineHeightWithSpacing()), bar_h, scale);
  markFigure(top, ImVec2(top.x + avail + ImGui::GetFontSize() * 4, top.y + bar_h + ImGui::GetTextLineHeightWithSpacing()));
  ImGui::SetCursorScreenPos(ImVec2(top.x, top.y + bar_h + ImGui::GetTextLineHeightWithSpacing() + 8));
  ImGui::TextDisabled("(patched − counterfactual) / (clean − counterfactual): 1 = the clean result kept, 0 = the "
                      "counterfactual's; click a head to select it everywhere");
  ImGui::Separator();
  if (!r->dla.empty()) {
    ImGui::TextUnformatted("direct logit attribution of the clean run, per head (layers left to right)");
    drawDla(wb, r->dla, ImGui::GetContentRegionAvail().x);
  } else if (!r->dla_note.empty()) {
    ImGui::TextDisabled("%s", r->dla_note.c_str());
  }
  ImGui::PushTextWrapPos(0.0f);
  for (const auto& note : r->notes) ImGui::TextDisabled("note: %s", note.c_str());
  ImGui::PopTextWrapPos();
  export_buttons(wb, "patching", title());
}

bool PatchingView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& r = wb.doc().patching;
  if (!r) throw std::runtime_error("export " + path + ": nothing patched yet");
  if (!wb.doc().model || r->model_folder != wb.doc().model->folder)
    throw std::runtime_error("export " + path + ": the last patching run measured " + r->model_folder +
                             ", not the model open now");
  const bool heads = site_has_heads(r->settings.site);
  size_t units = 0;
  for (const auto& row : r->exact) units = std::max(units, row.size());
  std::vector<std::string> cols;
  for (size_t u = 0; u < units; ++u) cols.push_back(heads ? "H" + std::to_string(u) : "layer");
  std::vector<std::vector<double>> rows;
  for (const auto& row : r->exact) rows.emplace_back(row.begin(), row.end());
  auto map = analysis::effect_heatmap(
      "Activation patching: " + r->settings.site + " from the counterfactual",
      "(patched − counterfactual) / (clean − counterfactual) of " + r->settings.metric +
          "; 1 = the clean result kept, 0 = the counterfactual's",
      heads ? "head" : "", cols, rows);
  // What it measured, as the view says it: the figure stands alone, and says when it is stale.
  const auto& doc = wb.doc();
  analysis::PatchFigureFacts facts;
  facts.model = doc.model->name;
  facts.clean = doc.session.patching.measured_text;
  facts.counterfactual = r->settings.counterfactual;
  facts.metric = r->settings.metric;
  facts.position = r->position;
  facts.clean_value = r->clean;
  facts.counterfactual_value = r->corrupt;
  auto token = [](const std::string& text, int64_t id) { return "'" + token_label(text, 24) + "' (" + std::to_string(id) + ")"; };
  if (r->answer >= 0) facts.answer = token(r->answer_token, r->answer);  // those the metric reads are kept
  if (r->wrong >= 0) facts.wrong = token(r->wrong_token, r->wrong);
  map.notes = analysis::patch_figure_notes(facts);
  for (const auto& stale : stale_lines(doc, *r)) map.notes.push_back(stale);
  wb.start_export(path, [map, path] { analysis::write_heatmap_file(map, path); });
  return true;
}

}  // namespace headlab::app
