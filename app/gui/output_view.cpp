#include "app/gui/output_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"

#include <cmath>
#include <string>
#include <vector>

namespace headlab::app {
namespace {

void position_table(const RunSnapshot& s, const PositionOutput& out, bool masked, const TokenizedText& tokens) {
  const int t = out.position;
  const std::string tok = t < static_cast<int>(tokens.tokens.size()) ? token_label(tokens.tokens[t], 20) : "?";
  if (masked)
    ImGui::Text("position %d (%s)", t, tok.c_str());
  else
    ImGui::Text("next token after position %d (%s)", t, tok.c_str());
  ImGui::SameLine();
  ImGui::TextColored(out.kl > 1e-4f ? ImVec4(1.0f, 0.75f, 0.3f, 1.0f) : ImVec4(0.6f, 0.6f, 0.6f, 1.0f), "KL %.4f nats", out.kl);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("KL(unmodified ‖ now) over the whole vocabulary");
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_BordersInnerV;
  if (!ImGui::BeginTable(("top" + std::to_string(t)).c_str(), 4, flags)) return;
  ImGui::TableSetupColumn("token", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("p");
  ImGui::TableSetupColumn("Δp");
  ImGui::TableSetupColumn("p before");
  ImGui::TableHeadersRow();
  for (const auto& p : out.top) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    // A bar under the token shows p at a glance.
    const ImVec2 c = ImGui::GetCursorScreenPos();
    const float w = ImGui::GetContentRegionAvail().x;
    ImGui::GetWindowDrawList()->AddRectFilled(c, ImVec2(c.x + w * p.p, c.y + ImGui::GetTextLineHeight()),
                                              IM_COL32(50, 110, 170, 150));
    ImGui::TextUnformatted(token_label(p.token, 24).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_probability(p.p).c_str());
    ImGui::TableNextColumn();
    // A change below float rounding of p is none (no "-0.0000" for noise); small ones stay readable.
    const float d = std::fabs(p.p - p.p_base) <= 1e-6f * std::max(p.p, p.p_base) ? 0.0f : p.p - p.p_base;
    const bool matters = std::fabs(d) > 1e-3f * std::max(p.p, p.p_base);
    const ImVec4 colour = matters && d > 0 ? ImVec4(0.4f, 0.9f, 0.4f, 1) : matters && d < 0 ? ImVec4(1.0f, 0.45f, 0.45f, 1) : ImVec4(0.6f, 0.6f, 0.6f, 1);
    ImGui::TextColored(colour, "%s", format_probability_change(d).c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", format_probability(p.p_base).c_str());
  }
  ImGui::EndTable();
  (void)s;
}

}  // namespace

void OutputView::drawContent(Workbench& wb) {
  if (!wb.doc().snapshot || !wb.doc().model) {
    drawNoRun(wb);
    return;
  }
  const auto& s = *wb.doc().snapshot;
  const auto& sel = wb.doc().session.selection;
  const TokenizedText& tokens = s.decoder_tokens.ids.empty() ? s.tokens : s.decoder_tokens;
  const bool masked = wb.doc().model->masked_lm;
  // The default positions (RunSnapshot::default_positions): each [MASK] of a masked LM's input (a
  // special token), else the last real token (never a special one, as [SEP]).
  const int first_default = s.default_positions.empty() ? -1 : s.default_positions[0];
  const bool has_mask = masked && first_default >= 0 && first_default < static_cast<int>(tokens.special.size()) &&
                        tokens.special[first_default];
  const std::string def = has_mask ? "each [MASK]" : masked ? "the last token (no [MASK])" : "the last token";
  const int position = sel.output_position < static_cast<int>(tokens.tokens.size()) ? sel.output_position : -1;
  std::string current = position < 0 ? def
                                   : std::to_string(position) + ": " + token_label(tokens.tokens[position]);
  int chosen = position;
  refused_input_banner(wb.doc());
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("position");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  if (ImGui::BeginCombo("##position", current.c_str())) {
    if (ImGui::Selectable(def.c_str(), position < 0)) chosen = -1;
    for (size_t t = 0; t < tokens.tokens.size(); ++t) {
      const std::string label = std::to_string(t) + ": " + token_label(tokens.tokens[t]);
      if (ImGui::Selectable(label.c_str(), position == static_cast<int>(t))) chosen = static_cast<int>(t);
    }
    ImGui::EndCombo();
  }
  if (chosen != position) wb.apply(cmd::SetOutputPosition{chosen});
  ImGui::SameLine();
  ImGui::TextUnformatted("top-k");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
  int top_k = wb.doc().session.view.top_k;
  if (ImGui::SliderInt("##top_k", &top_k, 1, 20)) {
    cmd::SetView v;
    v.top_k = top_k;
    wb.apply(v);
  }
  ImGui::BeginChild("outputs");
  std::vector<int> shown = position >= 0 ? std::vector<int>{position} : s.default_positions;
  for (int t : shown) {
    if (const PositionOutput* out = s.output_at(t)) position_table(s, *out, masked, tokens);
    else ImGui::TextDisabled("predicting at %d…", t);
  }
  ImGui::EndChild();
}

}  // namespace headlab::app
