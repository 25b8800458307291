#include "app/gui/spectra_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/plot.h"
#include "app/gui/workbench.h"

#include <algorithm>

namespace headlab::app {
namespace {

// The ranks worth drawing: a [D, D] form of key size d_k < D has D − d_k exact zeros (the low-rank
// bottleneck); the curves stop at the last singular value above 1e-9·σ_1.
size_t drawn_ranks(const analysis::Spectrum& s) {
  const auto& v = s.singular_values;
  size_t n = v.size();
  while (n > 1 && !(v[n - 1] > 1e-9 * v.front())) --n;
  return n;
}

// Singular values relative to the largest, so heads of different scale share an axis.
std::vector<double> relative(const analysis::Spectrum& s) {
  std::vector<double> v(s.singular_values.begin(), s.singular_values.begin() + static_cast<long>(drawn_ranks(s)));
  const double top = v.empty() ? 1.0 : v.front();
  for (double& x : v) x = top > 0 ? x / top : 0.0;
  return v;
}

std::vector<double> energy(const analysis::Spectrum& s) {
  return {s.cumulative_energy.begin(), s.cumulative_energy.begin() + static_cast<long>(drawn_ranks(s))};
}

}  // namespace

void SpectraView::drawContent(Workbench& wb) {
  const auto& report = wb.doc().report;
  const auto& sel = wb.doc().session.selection;
  if (!report || !report->settings.has("spectra")) {
    ImGui::TextDisabled("no spectra: run a dataset with the 'spectra' measure (it reads the weights only)");
    return;
  }
  const analysis::HeadEntry* head = report->find(sel.stack, sel.layer, sel.head);
  if (!head || !head->spectrum) {
    ImGui::TextDisabled("no spectrum for %s layer %d head %d", sel.stack.c_str(), sel.layer, sel.head);
    return;
  }
  if (!head->spectrum->applicable) {
    ImGui::TextDisabled("additive scoring has no bilinear key-query form: no spectrum");
    return;
  }
  ImGui::Checkbox("log scale", &log_scale_);
  ImGui::SameLine();
  ImGui::Checkbox("other heads of the layer", &whole_layer_);
  const auto& s = *head->spectrum;
  ImGui::TextWrapped("L%d H%d: 90%% of the energy at rank %d, 95%% at %d, 99%% at %d; %zu of %zu singular values nonzero",
                     sel.layer, sel.head, s.rank90, s.rank95, s.rank99, drawn_ranks(s), s.singular_values.size());
  const float h = std::max(120.0f, (ImGui::GetContentRegionAvail().y - ImGui::GetStyle().ItemSpacing.y) / 2);
  {
    Plot plot;
    plot.begin("sv", ImVec2(-1, h), "singular values σ_k / σ_1", {"rank k"}, {"", log_scale_});
    if (whole_layer_)
      for (const auto& other : report->heads)
        if (other.stack == sel.stack && other.layer == sel.layer && other.head != sel.head && other.spectrum &&
            other.spectrum->applicable)
          plot.add_line({}, relative(*other.spectrum), head_colour(other.head, 0.35f), "H" + std::to_string(other.head));
    plot.add_line({}, relative(s), head_colour(sel.head), "H" + std::to_string(sel.head));
    plot.end();
  }
  {
    Plot plot;
    plot.begin("energy", ImVec2(-1, h), "cumulative energy Σ_{j≤k} σ_j² / Σ σ²", {"rank k"}, {"", false, AxisRange{0, 1.02}});
    // The other heads of the layer (the layer's own product has h·d_k ranks and would squash the axis).
    if (whole_layer_)
      for (const auto& other : report->heads)
        if (other.stack == sel.stack && other.layer == sel.layer && other.head != sel.head && other.spectrum &&
            other.spectrum->applicable)
          plot.add_line({}, energy(*other.spectrum), head_colour(other.head, 0.35f));
    plot.add_line({}, energy(s), head_colour(sel.head), "H" + std::to_string(sel.head));
    plot.add_vline(s.rank90, IM_COL32(255, 220, 80, 255), "90%");
    plot.add_vline(s.rank95, IM_COL32(255, 170, 60, 255), "95%");
    plot.add_vline(s.rank99, IM_COL32(255, 110, 60, 255), "99%");
    plot.end();
  }
}

}  // namespace headlab::app
