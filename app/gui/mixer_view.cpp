#include "app/gui/mixer_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"
#include "app/document/controls_edit.h"

#include <string>

namespace headlab::app {

bool MixerView::drawMatrix(Workbench& wb, const AttentionSummary& att, int layer, const char* which, int heads) {
  const auto& c = wb.doc().session.controls.get(att.stack, layer);
  std::vector<float> m = std::string(which) == "pre" ? c.pre_mix : c.post_mix;
  if (m.empty()) m = mix_preset(MixPreset::Identity, heads);
  bool changed = false;
  const float w = ImGui::GetFontSize() * 2.6f;
  ImGui::PushID(which);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(2, 2));
  for (int r = 0; r < heads; ++r) {
    for (int col = 0; col < heads; ++col) {
      if (col > 0) ImGui::SameLine();
      ImGui::PushID(r * heads + col);
      ImGui::SetNextItemWidth(w);
      float& v = m[static_cast<size_t>(r) * heads + col];
      const bool diag = r == col;
      if (v != (diag ? 1.0f : 0.0f)) ImGui::PushStyleColor(ImGuiCol_FrameBg, ImVec4(0.45f, 0.3f, 0.1f, 1.0f));
      else ImGui::PushStyleColor(ImGuiCol_FrameBg, ImGui::GetStyleColorVec4(ImGuiCol_FrameBg));
      if (ImGui::DragFloat("##m", &v, 0.01f, -2.0f, 2.0f, "%.2f")) changed = true;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("from head %d into head %d", r, col);
      ImGui::PopStyleColor();
      ImGui::PopID();
    }
  }
  ImGui::PopStyleVar();
  ImGui::PopID();
  if (changed) {
    cmd::SetMix c;
    c.stack = att.stack, c.layer = layer, c.which = which, c.matrix = m;
    wb.apply(c);
  }
  return changed;
}

void MixerView::drawTake(Workbench& wb, const AttentionSummary& att, int layer) {
  const auto& model = *wb.doc().model;
  // The main stack only (a decoder-only or encoder-only model's one self-attention).
  if (att.stack == core::Stack::Cross || model.attentions.size() != 1) return;
  const auto& p = wb.doc().session.patching;
  ImGui::Separator();
  ImGui::TextDisabled("take from the counterfactual");
  if (p.settings.counterfactual.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("(set one in the Patching view)");
    return;
  }
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("each head's output from the counterfactual '%s', like a gate: 0 = its own", p.settings.counterfactual.c_str());
  const auto& snapshot = wb.doc().snapshot;
  if (snapshot && !snapshot->counterfactual_note.empty())
    ImGui::TextColored(ImVec4(1, 0.75f, 0.3f, 1), "%s", snapshot->counterfactual_note.c_str());
  const int columns = ImGui::GetContentRegionAvail().x > ImGui::GetFontSize() * 30 ? 2 : 1;
  if (ImGui::BeginTable("take", columns)) {
    for (int h = 0; h < att.output_heads; ++h) {
      ImGui::TableNextColumn();
      ImGui::PushID(1000 + h);
      float w = size_t(layer) < p.take.size() && size_t(h) < p.take[size_t(layer)].size() ? p.take[size_t(layer)][size_t(h)] : 0.0f;
      ImGui::SetNextItemWidth(-1);
      const std::string format = "H" + std::to_string(h) + " from cf %.2f";
      if (ImGui::SliderFloat("##take", &w, 0.0f, 1.0f, format.c_str())) wb.apply(cmd::TakeFromCounterfactual{layer, h, w});
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  if (!p.take.empty() && ImGui::Button("Own outputs for every head")) {
    cmd::TakeFromCounterfactual reset;
    reset.reset = true;
    wb.apply(reset);
  }
}

void MixerView::drawContent(Workbench& wb) {
  if (!wb.doc().model) return;
  const auto& sel = wb.doc().session.selection;
  const AttentionSummary* att = wb.doc().model->find(sel.stack);
  if (!att) return;
  label_before("layer");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  int layer = sel.mixer_layer;
  if (ImGui::SliderInt("##layer", &layer, 0, att->layers - 1)) {
    cmd::SelectAttention c;
    c.mixer_layer = layer;
    wb.apply(c);
  }
  ImGui::SameLine();
  ImGui::TextDisabled("(%s)", att->title.c_str());
  ImGui::SameLine();
  if (ImGui::Button("Reset layer")) {
    wb.apply(cmd::Reset{att->stack, layer});
  }
  ImGui::SameLine();
  if (ImGui::Button("Reset all")) {
    wb.apply(cmd::Reset{});
  }
  const auto& c = wb.doc().session.controls.get(att->stack, layer);
  int ablation = c.ablation == core::Ablation::Mean ? 1 : 0;
  ImGui::TextUnformatted("ablation");
  ImGui::SameLine();
  bool ab_changed = ImGui::RadioButton("zero", &ablation, 0);
  ImGui::SameLine();
  ab_changed |= ImGui::RadioButton("mean", &ablation, 1);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("a closed head outputs its mean over this input's positions");
  if (ab_changed) {
    wb.apply(cmd::SetAblation{att->stack, layer, ablation ? core::Ablation::Mean : core::Ablation::Zero});
  }

  ImGui::Separator();
  ImGui::TextDisabled("gates");
  const int h_out = att->output_heads;
  const int columns = ImGui::GetContentRegionAvail().x > ImGui::GetFontSize() * 30 ? 2 : 1;
  if (ImGui::BeginTable("gates", columns)) {
    for (int h = 0; h < h_out; ++h) {
      ImGui::TableNextColumn();
      ImGui::PushID(h);
      float g = wb.doc().session.controls.get(att->stack, layer).gate(h);
      bool on = g > 0.0f;
      if (ImGui::Checkbox("##on", &on)) {
        wb.apply(cmd::SetGate{att->stack, layer, h, on ? 1.0f : 0.0f});
      }
      ImGui::SameLine();
      ImGui::SetNextItemWidth(-1);
      // The head selected everywhere (Heads grid, Head table …) is framed in yellow.
      const bool selected = layer == sel.layer && h == sel.head;
      const std::string mixed = head_mixed(wb.doc().session.controls.get(att->stack, layer), h);
      const std::string format = "H" + std::to_string(h) + (selected ? " (selected)" : "") +
                                 (mixed.empty() ? "" : " mix") + " %.2f";
      if (ImGui::SliderFloat("##g", &g, 0.0f, 1.0f, format.c_str())) {
        wb.apply(cmd::SetGate{att->stack, layer, h, g});
      }
      if (selected)
        ImGui::GetWindowDrawList()->AddRect(ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), IM_COL32(255, 220, 0, 255),
                                            ImGui::GetStyle().FrameRounding, 0, 2.0f);
      if (!selected && ImGui::IsItemClicked(ImGuiMouseButton_Right)) wb.apply(cmd::SelectHead{att->stack, layer, h});
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("gate of head %d%s; right-click selects the head", h,
                          mixed.empty() ? "" : (" (mixed " + mixed + ")").c_str());
      ImGui::PopID();
    }
    ImGui::EndTable();
  }

  drawTake(wb, *att, layer);

  ImGui::Separator();
  ImGui::TextDisabled("mixing presets");
  const char* presets[] = {"identity", "uniform average", "swap two heads", "blend two heads"};
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  ImGui::Combo("##preset", &preset_, presets, 4);
  if (preset_ >= 2) {
    ImGui::SameLine();
    label_before("head a");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    ImGui::InputInt("##a", &a_);
    ImGui::SameLine();
    label_before("head b");
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4);
    ImGui::InputInt("##b", &b_);
    if (preset_ == 3) {
      ImGui::SameLine();
      label_before("α");
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
      ImGui::SliderFloat("##alpha", &alpha_, 0.0f, 1.0f, "%.2f");
    }
  }
  const int h_pre = att->softmax_heads;
  if (ImGui::Button("Apply before softmax")) {
    cmd::SetMix c;
    c.stack = att->stack, c.layer = layer, c.which = "pre";
    c.matrix = mix_preset(static_cast<MixPreset>(preset_), h_pre, a_, b_, alpha_);
    wb.apply(c);
    open_pre_ = true;
  }
  ImGui::SameLine();
  if (ImGui::Button("Apply after softmax")) {
    cmd::SetMix c;
    c.stack = att->stack, c.layer = layer, c.which = "post";
    c.matrix = mix_preset(static_cast<MixPreset>(preset_), h_out, a_, b_, alpha_);
    wb.apply(c);
    open_post_ = true;
  }
  // A matrix that a preset just changed (or that differs from the identity) is shown open.
  const auto& layer_controls = wb.doc().session.controls.get(att->stack, layer);
  if (open_pre_ || !layer_controls.pre_mix.empty()) ImGui::SetNextItemOpen(true, open_pre_ ? ImGuiCond_Always : ImGuiCond_Once);
  open_pre_ = false;
  if (ImGui::CollapsingHeader("pre-softmax mix (logits L ← L·M)", ImGuiTreeNodeFlags_DefaultOpen))
    drawMatrix(wb, *att, layer, "pre", h_pre);
  if (open_post_ || !layer_controls.post_mix.empty()) ImGui::SetNextItemOpen(true, open_post_ ? ImGuiCond_Always : ImGuiCond_Once);
  open_post_ = false;
  if (ImGui::CollapsingHeader("post-softmax mix (weights U ← U·M)")) drawMatrix(wb, *att, layer, "post", h_out);
}

}  // namespace headlab::app
