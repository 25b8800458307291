#include "app/gui/relevance_view.h"

#include "app/export/analysis_figures.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/workbench.h"
#include "app/layout/relevance_colors.h"

#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace headlab::app {
namespace {

ImU32 colour_of(double strength) {
  const Rgb c = relevance_rgb(strength);
  return IM_COL32(c.r, c.g, c.b, 255);
}

// The shading's key, as the exported figure draws it: the diverging scale from −scale to +scale (or
// from 0 to scale where no value is negative), its ends labelled.
void scale_key(double scale, bool with_negative) {
  const float font = ImGui::GetFontSize();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float w = font * 10, h = font * 0.5f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    const double t = (i + 0.5) / steps;
    dl->AddRectFilled(ImVec2(p.x + w * i / steps, p.y), ImVec2(p.x + w * (i + 1) / steps + 0.5f, p.y + h),
                      colour_of(with_negative ? 2 * t - 1 : t));
  }
  char hi[32];
  std::snprintf(hi, sizeof hi, "%.3g", scale);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const float y = p.y + h + 1;
  dl->AddText(ImVec2(p.x, y), text, with_negative ? (std::string("−") + hi).c_str() : "0");
  if (with_negative) dl->AddText(ImVec2(p.x + w / 2 - ImGui::CalcTextSize("0").x / 2, y), text, "0");
  dl->AddText(ImVec2(p.x + w - ImGui::CalcTextSize(hi).x, y), text, hi);
  ImGui::Dummy(ImVec2(w, h + font + 2));
}

bool any_negative(const std::vector<double>& values) {
  return std::any_of(values.begin(), values.end(), [](double v) { return v < 0; });
}

}  // namespace

void RelevanceView::drawTarget(Workbench& wb) {
  const auto& a = wb.doc().session.analysis;
  const auto& snap = wb.doc().snapshot;
  // The input, editable here too (Enter runs it).
  std::string text = wb.doc().session.text;
  ImGui::SetNextItemWidth(-1);
  if (ImGui::InputText("##text", &text, ImGuiInputTextFlags_EnterReturnsTrue)) wb.apply(cmd::SetText{text, {}, true});
  bool enabled = a.lrp_enabled;
  if (ImGui::Checkbox("explain", &enabled)) wb.apply(cmd::SetLrpTarget{a.lrp_position, a.lrp_token, enabled, {}});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("run LRP, rollout and flow with every run (a backward pass each)");
  refused_input_banner(wb.doc());
  if (!snap) return;
  const TokenizedText& out = snap->decoder_tokens.ids.empty() ? snap->tokens : snap->decoder_tokens;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  // A position set beyond this input (by a script, a session or a longer text before) is named as
  // what it is, not as the default the explanation does not use.
  const std::string current = a.lrp_position < 0 ? std::string("default position")
                              : a.lrp_position >= static_cast<int>(out.tokens.size())
                                  ? "position " + std::to_string(a.lrp_position) + " (past the input)"
                                  : std::to_string(a.lrp_position) + ": " + token_label(out.tokens[a.lrp_position]);
  if (ImGui::BeginCombo("##position", current.c_str())) {
    if (ImGui::Selectable("default position", a.lrp_position < 0)) wb.apply(cmd::SetLrpTarget{-1, -1, true});
    for (size_t t = 0; t < out.tokens.size(); ++t)
      if (ImGui::Selectable((std::to_string(t) + ": " + token_label(out.tokens[t])).c_str(), a.lrp_position == static_cast<int>(t)))
        wb.apply(cmd::SetLrpTarget{static_cast<int>(t), -1, true});
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the position whose logit is explained (default: the [MASK], or the last token)");
  // The token: top-1, one of the predictions shown there, or any id.
  const auto& rel = snap->relevance;
  const PositionOutput* predicted = rel && rel->error.empty() ? snap->output_at(rel->position) : nullptr;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  const std::string token_text = a.lrp_token < 0                          ? "top-1 token"
                                 : rel && rel->token == a.lrp_token ? token_label(rel->token_text)
                                                                    : "#" + std::to_string(a.lrp_token);
  if (ImGui::BeginCombo("##token", token_text.c_str())) {
    if (ImGui::Selectable("top-1 token", a.lrp_token < 0)) wb.apply(cmd::SetLrpTarget{a.lrp_position, -1, true});
    if (predicted)
      for (const auto& p : predicted->top)
        if (ImGui::Selectable((token_label(p.token, 20) + "  p=" + format_probability(p.p)).c_str(), a.lrp_token == p.id))
          wb.apply(cmd::SetLrpTarget{a.lrp_position, p.id, true});
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  int id = static_cast<int>(a.lrp_token);
  label_before("id");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
  if (ImGui::InputInt("##id", &id, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue)) wb.apply(cmd::SetLrpTarget{a.lrp_position, id, true});
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("any token id of the vocabulary (-1 = top-1)");
}

void RelevanceView::drawTokens(Workbench& wb) {
  const auto& snap = wb.doc().snapshot;
  const auto& rel = *snap->relevance;
  const auto& a = wb.doc().session.analysis;
  const char* names[] = {"lrp", "rollout", "flow"};
  const char* labels[] = {"LRP", "rollout", "flow"};
  const int shading_ = a.lrp_shading == "rollout" ? 1 : a.lrp_shading == "flow" ? 2 : 0;
  for (int i = 0; i < 3; ++i) {
    if (i > 0) ImGui::SameLine();
    if (ImGui::RadioButton(labels[i], shading_ == i) && shading_ != i)
      wb.apply(cmd::SetLrpTarget{a.lrp_position, a.lrp_token, true, std::string(names[i])});
  }
  if (shading_ == 2 && rel.flow.empty()) {
    ImGui::TextDisabled("computing the flow…");
    return;
  }
  const bool enc_dec = !snap->decoder_tokens.ids.empty();
  // Rollout and flow live on the target's stack; LRP's input relevance on the (encoder) input.
  const std::vector<double>& values = shading_ == 0 ? rel.input : shading_ == 1 ? rel.rollout : rel.flow;
  const TokenizedText& tokens = shading_ != 0 && enc_dec ? snap->decoder_tokens : snap->tokens;
  const double scale = shading_scale(shading_ != 0, values);
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 first = ImGui::GetCursorScreenPos();
  for (size_t i = 0; i < tokens.tokens.size() && i < values.size(); ++i) {
    const std::string label = token_label(tokens.tokens[i], 16);
    const float w = ImGui::CalcTextSize(label.c_str()).x + 8, h = ImGui::GetTextLineHeight() + 4;
    if (i > 0) {
      ImGui::SameLine(0, 3);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::PushID(static_cast<int>(i));
    ImGui::InvisibleButton("tok", ImVec2(w, h));
    ImGui::PopID();
    dl->AddRectFilled(p, ImVec2(p.x + w, p.y + h), colour_of(relevance_strength(values[i], scale)), 3);
    if (static_cast<int>(i) == rel.position && (shading_ != 0 || !enc_dec))
      dl->AddRect(p, ImVec2(p.x + w, p.y + h), IM_COL32(255, 220, 0, 255), 3, 0, 2);
    dl->AddText(ImVec2(p.x + 4, p.y + 2), IM_COL32(255, 255, 255, 255), label.c_str());
    if (ImGui::IsItemHovered()) {
      if (shading_ == 0)
        ImGui::SetTooltip("%zu %s: relevance %.4g (%.0f%% of the largest)", i, token_label(tokens.tokens[i]).c_str(),
                          values[i], 100 * std::abs(values[i]) / scale);
      else
        ImGui::SetTooltip("%zu %s: %s %.4g", i, token_label(tokens.tokens[i]).c_str(), shading_ == 1 ? "rollout" : "flow",
                          values[i]);
    }
  }
  markFigure(ImVec2(first.x - 2, first.y - 2), ImVec2(right, ImGui::GetCursorScreenPos().y + ImGui::GetTextLineHeight() + 6));
  scale_key(scale, any_negative(values));
  if (shading_ == 0)
    ImGui::TextDisabled("red: supports %s, blue: speaks against it", token_label(rel.token_text).c_str());
  else
    ImGui::TextDisabled("%s: the target's attention traced back to the input, on [0, 1]",
                        shading_ == 1 ? "rollout" : "flow");
}

void RelevanceView::drawHeads(Workbench& wb) {
  const auto& rel = *wb.doc().snapshot->relevance;
  const auto& sel = wb.doc().session.selection;
  auto it = rel.heads.find(sel.stack);
  if (it == rel.heads.end()) it = rel.heads.begin();
  if (it == rel.heads.end()) return;
  const auto& per_layer = it->second;
  std::vector<double> all;
  for (const auto& l : per_layer) all.insert(all.end(), l.begin(), l.end());
  const double scale = relevance_scale(all);
  ImGui::TextDisabled("head relevance R_i (%s), this input", core::stack_name(it->first));
  scale_key(scale, any_negative(all));
  const int layers = static_cast<int>(per_layer.size());
  int heads = 0;
  for (const auto& l : per_layer) heads = std::max(heads, static_cast<int>(l.size()));
  const float font = ImGui::GetFontSize();
  const float label_w = ImGui::CalcTextSize("L00").x + 6;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float cell = std::max(8.0f, std::min({font * 2.2f, (avail.x - label_w) / std::max(1, heads),
                                              (avail.y - 4) / std::max(1, layers)}));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  for (int l = 0; l < layers; ++l) {
    dl->AddText(ImVec2(origin.x, origin.y + l * cell + cell / 2 - font / 2), ImGui::GetColorU32(ImGuiCol_Text),
                ("L" + std::to_string(l)).c_str());
    for (int h = 0; h < static_cast<int>(per_layer[l].size()); ++h) {
      const ImVec2 p0(origin.x + label_w + h * cell, origin.y + l * cell), p1(p0.x + cell - 2, p0.y + cell - 2);
      dl->AddRectFilled(p0, p1, colour_of(relevance_strength(per_layer[l][h], scale)));
      ImGui::SetCursorScreenPos(p0);
      ImGui::PushID(l * 4096 + h);
      if (ImGui::InvisibleButton("head", ImVec2(cell, cell))) wb.apply(cmd::SelectHead{it->first, l, h});
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d head %d: R = %.4g", l, h, per_layer[l][h]);
      ImGui::PopID();
      if (it->first == sel.stack && l == sel.layer && h == sel.head) dl->AddRect(p0, p1, IM_COL32(255, 220, 0, 255), 0, 0, 2);
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + layers * cell + 4));
}

void RelevanceView::drawContent(Workbench& wb) {
  drawTarget(wb);
  const auto& snap = wb.doc().snapshot;
  if (!wb.doc().session.analysis.lrp_enabled) {
    ImGui::TextDisabled("tick 'explain' to shade the input by relevance");
    return;
  }
  if (!snap || !snap->relevance) {
    ImGui::TextDisabled("explaining…");
    return;
  }
  const auto& rel = *snap->relevance;
  if (!rel.error.empty()) {
    ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.45f, 1.0f), "%s", rel.error.c_str());
    return;
  }
  ImGui::TextWrapped("logit of \"%s\" at position %d: f = %.4g · |Σ input + bias − f| = %.2g (%.1e·|f|) · %.0f ms",
                     token_label(rel.token_text).c_str(), rel.position, rel.target, rel.residual, rel.relative_residual, rel.ms);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("LRP is conservative (analysis/LRP.md): the input relevance and the constants (biases, positions) add up to f");
  export_buttons(wb, "relevance", title());
  drawTokens(wb);
  ImGui::Separator();
  drawHeads(wb);
}

bool RelevanceView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& snap = wb.doc().snapshot;
  if (!wb.doc().session.analysis.lrp_enabled || !snap || !snap->relevance)
    throw std::runtime_error("export " + path + ": nothing explained yet (set an LRP target)");
  const auto& rel = *snap->relevance;
  if (!rel.error.empty()) throw std::runtime_error("export " + path + ": " + rel.error);
  const std::string shading = wb.doc().session.analysis.lrp_shading;
  const int kind = shading == "rollout" ? 1 : shading == "flow" ? 2 : 0;
  if (kind == 2 && rel.flow.empty()) throw std::runtime_error("export " + path + ": the flow is still being computed");
  const bool enc_dec = !snap->decoder_tokens.ids.empty();
  // As the view: rollout and flow on the target's stack, LRP's input relevance on the (encoder) input.
  const TokenizedText& tokens = kind != 0 && enc_dec ? snap->decoder_tokens : snap->tokens;
  RelevanceFigure fig;
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "f = %.4g, residual |Σ input + bias − f| = %.2g (%.1e·|f|)", rel.target,
                rel.residual, rel.relative_residual);
  fig.title = model_title(wb) + " — logit of \"" + token_label(rel.token_text) + "\" at position " + std::to_string(rel.position) +
              ": " + numbers;
  fig.shading = kind == 0 ? "LRP" : kind == 1 ? "rollout" : "flow";
  const std::vector<double>& values = kind == 0 ? rel.input : kind == 1 ? rel.rollout : rel.flow;
  for (size_t i = 0; i < tokens.tokens.size() && i < values.size(); ++i) {
    fig.tokens.push_back(token_label(tokens.tokens[i], 16));
    fig.values.push_back(values[i]);
  }
  fig.target = kind != 0 || !enc_dec ? rel.position : -1;
  const auto& sel = wb.doc().session.selection;
  auto it = rel.heads.find(sel.stack);
  if (it == rel.heads.end()) it = rel.heads.begin();
  if (it != rel.heads.end()) fig.stack = it->first, fig.heads = it->second;
  wb.start_export(path, [fig, path] { write_relevance_figure(path, fig); });
  return true;
}

}  // namespace headlab::app
