#include "app/gui/spectra_view.h"

#include "app/export/analysis_figures.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/plot.h"
#include "app/gui/workbench.h"
#include "analysis/spectrum_curves.h"

#include <algorithm>

namespace headlab::app {
namespace {

const analysis::LayerSpectra* layer_of(const RunSnapshot& s, core::Stack stack, int layer) {
  if (!s.weight_spectra) return nullptr;
  for (const auto& l : *s.weight_spectra)
    if (l.stack == stack && l.layer == layer) return &l;
  return nullptr;
}

constexpr ImU32 kSelectedHead = IM_COL32(255, 210, 60, 255);
constexpr ImU32 kOtherHeads = IM_COL32(150, 160, 175, 110);
const std::string kOtherLabel = "other heads of the layer";

}  // namespace

void SpectraView::drawContent(Workbench& wb) {
  const auto& model = wb.doc().model;
  const auto& sel = wb.doc().session.selection;
  if (!model) {
    ImGui::TextDisabled("loading a model…");
    return;
  }
  const auto& snap = wb.doc().snapshot;
  if (!snap || !snap->input.weight_spectra) {
    ImGui::TextDisabled("computing the spectra…");
    return;
  }
  const analysis::LayerSpectra* layer = layer_of(*snap, sel.stack, sel.layer);
  if (!layer || sel.head >= static_cast<int>(layer->heads.size())) {
    ImGui::TextDisabled("no key-query spectra for this model");
    return;
  }
  const auto& s = layer->heads[sel.head];
  if (!s.applicable) {
    ImGui::TextDisabled("additive scoring has no bilinear key-query form: no spectrum");
    return;
  }
  ImGui::Checkbox("log", &log_scale_);
  ImGui::SameLine();
  ImGui::Checkbox("layer as a whole", &whole_layer_);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("W_Q, W_K and W_Q W_Kᵀ of the layer's heads together");
  ImGui::SameLine();
  bool input = wb.doc().session.view.logit_spectra;
  if (ImGui::Checkbox("this input's logits", &input)) {
    cmd::SetView v;
    v.logit_spectra = input;
    wb.apply(v);
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("singular values of each head's T×S logit matrix for the current input");
  export_buttons_same_line(wb, "spectra", title());
  // σ_k / σ_1 hides a form's size: a head whose query or key weights are zero (or decayed to
  // nothing) has no bilinear part, and is said so instead of drawn as a curve like the others.
  const double layer_top = analysis::largest_singular_value(layer->heads);
  const bool nothing = analysis::negligible_form(s, layer_top);
  if (nothing)
    ImGui::TextWrapped("%s L%d H%d: its key-query form W_Q W_Kᵀ is %s (σ_1 = %.3g; the layer's largest %.3g): its query or "
                       "key weights are (nearly) zero, so its scores come from the bias terms alone and there is no "
                       "spectrum to draw",
                       core::stack_name(sel.stack), sel.layer, sel.head, analysis::largest_singular_value(s) > 0 ? "negligible" : "zero",
                       analysis::largest_singular_value(s), layer_top);
  else
    ImGui::TextWrapped("%s L%d H%d: σ_1 = %.3g (%.2g%% of the layer's largest); 90%% of the energy at rank %d, 95%% at %d, "
                       "99%% at %d; %zu of %zu singular values nonzero",
                       core::stack_name(sel.stack), sel.layer, sel.head, analysis::largest_singular_value(s),
                       100.0 * analysis::largest_singular_value(s) / layer_top, s.rank90, s.rank95, s.rank99, drawn_ranks(s),
                       s.singular_values.size());
  if (!layer->note.empty()) {  // what the forms leave out, wrapped: it is a sentence
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("%s", layer->note.c_str());
    ImGui::PopStyleColor();
  }
  const bool show_input = input && snap && snap->logit_spectra;
  const bool show_weights = whole_layer_ || !nothing;
  // One colour for the selected head in every plot and every draw, grey for the rest, with a key.
  const std::string selected_label = "H" + std::to_string(sel.head) + " (selected)";
  const int plots = (show_weights ? 2 : 0) + (show_input ? 1 : 0);
  if (plots == 0) return;
  const float h = std::max(80.0f, (ImGui::GetContentRegionAvail().y - ImGui::GetStyle().ItemSpacing.y * (plots - 1)) / plots);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  if (show_weights) {
    Plot plot;
    plot.begin("sv", ImVec2(-1, h), "key-query singular values σ_k / σ_1", {""}, {"", log_scale_});
    if (whole_layer_) {
      plot.add_line({}, relative_singular_values(layer->query), IM_COL32(120, 180, 255, 255), "W_Q");
      plot.add_line({}, relative_singular_values(layer->key), IM_COL32(255, 160, 80, 255), "W_K");
      if (layer->product.applicable) plot.add_line({}, relative_singular_values(layer->product), IM_COL32(230, 230, 230, 255), "W_Q W_Kᵀ");
    } else {
      bool first = true;
      for (size_t h2 = 0; h2 < layer->heads.size(); ++h2)
        if (static_cast<int>(h2) != sel.head && layer->heads[h2].applicable && !negligible_form(layer->heads[h2], layer_top)) {
          plot.add_line({}, relative_singular_values(layer->heads[h2]), kOtherHeads, first ? kOtherLabel : "");
          first = false;
        }
      if (!nothing) plot.add_line({}, relative_singular_values(s), kSelectedHead, selected_label);
    }
    plot.end();
  }
  if (show_weights) {
    Plot plot;
    plot.begin("energy", ImVec2(-1, h), "cumulative energy Σ_{j≤k} σ_j² / Σ σ²", {show_input ? "" : "rank k"}, {"", false, AxisRange{0, 1.02}});
    if (whole_layer_ && layer->product.applicable) {
      plot.add_line({}, drawn_energy(layer->product), IM_COL32(230, 230, 230, 255), "W_Q W_Kᵀ");
      plot.add_vline(layer->product.rank90, IM_COL32(255, 220, 80, 255), "90%");
      plot.add_vline(layer->product.rank99, IM_COL32(255, 110, 60, 255), "99%");
    } else {
      bool first = true;
      for (size_t h2 = 0; h2 < layer->heads.size(); ++h2)
        if (static_cast<int>(h2) != sel.head && layer->heads[h2].applicable && !negligible_form(layer->heads[h2], layer_top)) {
          plot.add_line({}, drawn_energy(layer->heads[h2]), kOtherHeads, first ? kOtherLabel : "");
          first = false;
        }
      if (!nothing) {
        plot.add_line({}, drawn_energy(s), kSelectedHead, selected_label);
        plot.add_vline(s.rank90, IM_COL32(255, 220, 80, 255), "90%");
        plot.add_vline(s.rank95, IM_COL32(255, 170, 60, 255), "95%");
        plot.add_vline(s.rank99, IM_COL32(255, 110, 60, 255), "99%");
      }
    }
    plot.end();
  }
  if (show_input) {
    const auto it = snap->logit_spectra->find(sel.stack);
    const AttentionSummary* att = model->find(sel.stack);
    if (it != snap->logit_spectra->end() && sel.layer < static_cast<int>(it->second.size()) && att) {
      const auto& heads = it->second[sel.layer];
      Plot plot;
      plot.begin("logits", ImVec2(-1, h), "this input: singular values of its T×S logits", {"rank k"}, {"", true});
      bool first = true;
      for (size_t h2 = 0; h2 < heads.size(); ++h2)
        if (static_cast<int>(h2) != sel.head) {
          plot.add_line({}, heads[h2].singular_values, kOtherHeads, first ? kOtherLabel : "");
          first = false;
        }
      if (sel.head < static_cast<int>(heads.size())) plot.add_line({}, heads[sel.head].singular_values, kSelectedHead, selected_label);
      // A head's logits are Q Kᵀ with d_k columns: rank ≤ d_k, so past the key size the values collapse.
      if (att->key_size > 0) plot.add_vline(att->key_size, IM_COL32(255, 90, 90, 255), "d_k = " + std::to_string(att->key_size));
      plot.end();
    }
  }
  markFigure(top, ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x, ImGui::GetCursorScreenPos().y));
}

bool SpectraView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& snap = wb.doc().snapshot;
  const auto& sel = wb.doc().session.selection;
  const analysis::LayerSpectra* layer = snap ? layer_of(*snap, sel.stack, sel.layer) : nullptr;
  if (!layer || sel.head < 0 || sel.head >= static_cast<int>(layer->heads.size()))
    throw std::runtime_error("export " + path + ": no key-query spectra for " + core::stack_name(sel.stack) + " layer " +
                             std::to_string(sel.layer) + " head " + std::to_string(sel.head) + " yet");
  if (!layer->heads[sel.head].applicable)
    throw std::runtime_error("export " + path + ": additive scoring has no bilinear key-query form: no spectrum");
  const std::string title = model_title(wb) + " — key-query spectra, " + core::stack_name(sel.stack) + " layer " +
                            std::to_string(sel.layer) + " (head " + std::to_string(sel.head) + " highlighted)";
  wb.start_export(path, [snap, path, title, heads = &layer->heads, selected = sel.head] {
    write_spectra_figure(path, title, *heads, selected);  // `snap` keeps the spectra
  });
  return true;
}

}  // namespace headlab::app
