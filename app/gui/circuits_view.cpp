#include "app/gui/circuits_view.h"

#include "analysis/composition_figures.h"
#include "app/gui/draw_util.h"
#include "app/gui/export_actions.h"
#include "app/gui/plot.h"
#include "app/gui/workbench.h"
#include "app/layout/colormap.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <tuple>

namespace headlab::app {
namespace {

const char* kKinds[] = {"Q", "K", "V"};

const analysis::CompositionTable& table_of(const analysis::Composition& c, int kind) {
  return kind == 0 ? c.q : kind == 1 ? c.k : c.v;
}

struct Head {
  int layer, head;
};

// Senders: every head of layers 0 … L−2; receivers: every head of layers 1 … L−1.
std::vector<Head> senders(const analysis::CompositionTable& t) {
  std::vector<Head> out;
  for (size_t l = 0; l + 1 < t.size(); ++l)
    for (size_t h = 0; h < t[l].size(); ++h) out.push_back({int(l), int(h)});
  return out;
}

std::vector<Head> receivers(const analysis::CompositionTable& t) {
  std::vector<Head> out;
  if (t.empty() || t[0].empty()) return out;
  for (size_t l = 1; l < t[0][0].size(); ++l)
    for (size_t h = 0; h < t[0][0][l].size(); ++h) out.push_back({int(l), int(h)});
  return out;
}

bool zero_qk(const analysis::Composition& c, const Head& h) {
  return size_t(h.layer) < c.qk_zero.size() && size_t(h.head) < c.qk_zero[h.layer].size() && c.qk_zero[h.layer][h.head];
}

}  // namespace

void CircuitsView::drawContent(Workbench& wb) {
  const auto& snap = wb.doc().snapshot;
  if (!wb.doc().model) return;
  if (!snap || !snap->input.weight_spectra) {
    ImGui::TextDisabled("the circuits are computed with the key-query spectra, in the Analyse workspace…");
    return;
  }
  if (!snap->circuits) {
    ImGui::TextDisabled("no circuits for this model: %s", snap->circuits_error.c_str());
    return;
  }
  const auto& c = *snap->circuits;
  const auto& sel = wb.doc().session.selection;
  for (int k = 0; k < 3; ++k) {
    if (k) ImGui::SameLine();
    const bool has = !table_of(c, k).empty();
    if (!has) ImGui::BeginDisabled();
    if (ImGui::RadioButton((std::string(kKinds[k]) + "-composition").c_str(), kind_ == k)) kind_ = k;
    if (!has) ImGui::EndDisabled();
  }
  if (table_of(c, kind_).empty()) kind_ = 2;
  ImGui::SameLine();
  export_buttons_same_line(wb, "circuits", title());
  const auto& t = table_of(c, kind_);
  const auto rows = senders(t), cols = receivers(t);
  if (rows.empty() || cols.empty()) {
    ImGui::TextDisabled("one layer: no head of a later layer to compose with");
  } else {
    ImGui::TextDisabled("‖W_OV^sender W_%s^receiver‖ / (‖W_OV‖ ‖W_%s‖), Elhage et al. 2021; rows write, columns read",
                        kind_ == 2 ? "OV" : "QK", kind_ == 2 ? "OV" : "QK");
    const float avail = ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 6;
    const float cell = std::clamp(std::min(avail / cols.size(), ImGui::GetContentRegionAvail().y * 0.55f / rows.size()),
                                  3.0f, ImGui::GetFontSize() * 1.6f);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float label_w = ImGui::CalcTextSize("L00 H00").x + 6;
    int widest = 0;
    for (const auto& c : cols) widest = std::max(widest, c.head);
    const bool head_labels = cell >= ImGui::CalcTextSize(("H" + std::to_string(widest)).c_str()).x + 2;
    const float line = ImGui::GetTextLineHeight();
    const ImVec2 grid(origin.x + label_w, origin.y + line * (head_labels ? 2.0f : 1.0f));
    auto* dl = ImGui::GetWindowDrawList();
    // The receivers' labels above their columns: each layer where its heads start, and each head
    // where the cells are wide enough.
    for (size_t q = 0; q < cols.size(); ++q) {
      char label[16];
      if (q == 0 || cols[q].layer != cols[q - 1].layer) {
        std::snprintf(label, sizeof label, "L%d", cols[q].layer);
        dl->AddText(ImVec2(grid.x + q * cell, origin.y), IM_COL32(200, 200, 200, 255), label);
      }
      if (head_labels) {
        std::snprintf(label, sizeof label, "H%d", cols[q].head);
        dl->AddText(ImVec2(grid.x + q * cell + 1, origin.y + line), IM_COL32(170, 170, 170, 255), label);
      }
    }
    const Colormap cmap = colormap_from_name(wb.doc().session.view.colormap);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (cell >= ImGui::GetTextLineHeight() * 0.9f || rows[r].head == 0) {
        char label[32];
        std::snprintf(label, sizeof label, "L%d H%d", rows[r].layer, rows[r].head);
        dl->AddText(ImVec2(origin.x, grid.y + r * cell), IM_COL32(200, 200, 200, 255), label);
      }
      for (size_t q = 0; q < cols.size(); ++q) {
        const ImVec2 p0(grid.x + q * cell, grid.y + r * cell), p1(p0.x + cell, p0.y + cell);
        const bool valid = cols[q].layer > rows[r].layer;
        const bool no_qk = kind_ != 2 && zero_qk(c, cols[q]);  // nothing to compose into: grey, not 0
        const double v = valid ? t[rows[r].layer][rows[r].head][cols[q].layer][cols[q].head] : 0.0;
        if (valid && !no_qk) {
          const Rgb rgb = colormap_rgb(cmap, float(std::clamp(v, 0.0, 1.0)));
          dl->AddRectFilled(p0, p1, IM_COL32(rgb.r, rgb.g, rgb.b, 255));
        } else {
          dl->AddRectFilled(p0, p1, IM_COL32(60, 60, 64, 255));
        }
        ImGui::SetCursorScreenPos(p0);
        ImGui::PushID(int(r * 65536 + q));
        ImGui::InvisibleButton("cell", ImVec2(cell, cell));
        if (ImGui::IsItemClicked(ImGuiMouseButton_Left)) wb.apply(cmd::SelectHead{c.stack, cols[q].layer, cols[q].head});
        if (ImGui::IsItemClicked(ImGuiMouseButton_Right)) wb.apply(cmd::SelectHead{c.stack, rows[r].layer, rows[r].head});
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip(!valid ? "L%d H%d → L%d H%d: not a later layer"
                            : no_qk ? "L%d H%d → L%d H%d: the receiver's QK circuit is zero, nothing composes into it"
                                    : "L%d H%d → L%d H%d: %.3f\nclick: select the receiver; right-click: the sender",
                            rows[r].layer, rows[r].head, cols[q].layer, cols[q].head, v);
        ImGui::PopID();
      }
    }
    // The selected head framed: its row as a sender, its column as a receiver.
    for (size_t r = 0; r < rows.size(); ++r)
      if (rows[r].layer == sel.layer && rows[r].head == sel.head)
        dl->AddRect(ImVec2(grid.x, grid.y + r * cell), ImVec2(grid.x + cols.size() * cell, grid.y + (r + 1) * cell),
                    IM_COL32(255, 220, 0, 255), 0, 0, 2);
    for (size_t q = 0; q < cols.size(); ++q)
      if (cols[q].layer == sel.layer && cols[q].head == sel.head)
        dl->AddRect(ImVec2(grid.x + q * cell, grid.y), ImVec2(grid.x + (q + 1) * cell, grid.y + rows.size() * cell),
                    IM_COL32(255, 220, 0, 255), 0, 0, 2);
    colour_bar(dl, ImVec2(grid.x + cols.size() * cell + ImGui::GetFontSize(), grid.y),
               ImVec2(ImGui::GetFontSize() * 4, ImGui::GetFontSize() * 0.8f), cmap, MapRange{0, 1, false});
    markFigure(origin, ImVec2(grid.x + cols.size() * cell + ImGui::GetFontSize() * 5, grid.y + rows.size() * cell));
    ImGui::SetCursorScreenPos(ImVec2(origin.x, grid.y + rows.size() * cell + 6));
    ImGui::Dummy(ImVec2(1, 1));
    // The heads writing most into the selected head.
    if (kind_ != 2 && zero_qk(c, {sel.layer, sel.head})) {
      ImGui::TextWrapped("L%d H%d's QK circuit is zero (its query or key weights are zero or decayed away): no head "
                         "composes into its queries or keys; its scores come from the bias terms alone",
                         sel.layer, sel.head);
    } else if (sel.layer > 0 && size_t(sel.layer) < t[0][0].size() && size_t(sel.head) < t[0][0][sel.layer].size()) {
      std::vector<std::tuple<double, int, int>> into;
      for (const auto& s : rows)
        if (s.layer < sel.layer) into.emplace_back(t[s.layer][s.head][sel.layer][sel.head], s.layer, s.head);
      std::sort(into.rbegin(), into.rend());
      std::string line = std::string(kKinds[kind_]) + "-composition into L" + std::to_string(sel.layer) + " H" +
                         std::to_string(sel.head) + ", largest:";
      for (size_t i = 0; i < std::min<size_t>(3, into.size()); ++i) {
        char item[64];
        std::snprintf(item, sizeof item, "  L%d H%d %.3f", std::get<1>(into[i]), std::get<2>(into[i]), std::get<0>(into[i]));
        line += item;
      }
      ImGui::TextUnformatted(line.c_str());
    }
  }
  ImGui::Separator();
  // The selected head's OV circuit.
  for (const auto& h : c.ov.heads) {
    if (h.layer != sel.layer || h.head != sel.head) continue;
    if (h.copying) ImGui::Text("L%d H%d OV circuit: copying score %.3f (1 copies its token, −1 suppresses it)", h.layer, h.head, *h.copying);
    std::vector<double> magnitudes;
    for (const auto& z : h.eigenvalues) magnitudes.push_back(std::abs(z));
    Plot plot;
    plot.begin("ov", ImVec2(-1, std::max(80.0f, ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2)),
               "|λ| of W_E W_V W_O W_U (largest first)", {"k"}, {"", true});
    plot.add_line({}, magnitudes, IM_COL32(255, 210, 60, 255), "|λ_k|");
    plot.end();
  }
  ImGui::PushTextWrapPos(0.0f);
  for (const auto& note : c.notes) ImGui::TextDisabled("note: %s", note.c_str());
  ImGui::PopTextWrapPos();
}

bool CircuitsView::exportFile(Workbench& wb, const std::string& path) {
  if (!is_vector_path(path)) return false;
  const auto& snap = wb.doc().snapshot;
  if (!snap || !snap->circuits) throw std::runtime_error("export " + path + ": no circuits computed yet");
  // The figure `headlab circuits` draws, with the same grey columns and notes.
  const auto map = analysis::composition_heatmap(*snap->circuits, kKinds[kind_], model_title(wb));
  wb.start_export(path, [map, path] { analysis::write_heatmap_file(map, path); });
  return true;
}

}  // namespace headlab::app
