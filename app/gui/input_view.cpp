#include "app/gui/input_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"

#include <imgui_stdlib.h>

#include <algorithm>

namespace headlab::app {
namespace {

// Tokens as chips: the token over its id; click highlights it as a query.
void token_chips(Workbench& wb, const TokenizedText& t, bool query_side) {
  const auto& sel = wb.doc().session.selection;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (size_t i = 0; i < t.ids.size(); ++i) {
    const std::string label = token_label(t.tokens[i], 16);
    const std::string id = std::to_string(t.ids[i]);
    const float w = std::max(ImGui::CalcTextSize(label.c_str()).x, ImGui::CalcTextSize(id.c_str()).x) + 8;
    if (i > 0) {
      ImGui::SameLine(0, 3);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    ImGui::PushID(static_cast<int>(i));
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight() * 2 + 4;
    const bool highlighted = query_side && sel.query == static_cast<int>(i);
    if (ImGui::InvisibleButton("tok", ImVec2(w, h)) && query_side)
      wb.apply(cmd::SelectToken{highlighted ? -1 : static_cast<int>(i), sel.key});
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImU32 bg = highlighted ? IM_COL32(140, 30, 90, 255)
                     : t.special[i] ? IM_COL32(60, 60, 70, 255)
                                    : IM_COL32(40, 60, 90, 255);
    dl->AddRectFilled(p, ImVec2(p.x + w, p.y + h), ImGui::IsItemHovered() ? IM_COL32(70, 100, 150, 255) : bg, 3);
    dl->AddText(ImVec2(p.x + 4, p.y + 1), ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
    dl->AddText(ImVec2(p.x + 4, p.y + 2 + ImGui::GetTextLineHeight()), IM_COL32(150, 170, 190, 255), id.c_str());
    if (ImGui::IsItemHovered()) {
      // A mixture-of-experts model: the experts this token ran in each layer (best first).
      std::string routed;
      const auto& snap = wb.doc().snapshot;
      if (query_side && snap)
        for (size_t l = 0; l < snap->experts.size(); ++l) {
          // A dense layer among expert layers (DeepSeek's first layers) ran no experts.
          const bool dense = i >= snap->experts[l].size();
          routed += (l % 4 == 0 ? "\n" : "   ") + std::string("L") + std::to_string(l) + ":" + (dense ? " dense" : "");
          if (!dense)
            for (int e : snap->experts[l][i]) routed += " " + std::to_string(e);
        }
      ImGui::SetTooltip("position %zu, id %s, %s%s%s", i, id.c_str(), t.tokens[i].c_str(),
                        routed.empty() ? "" : "\nexperts by layer (best first):", routed.c_str());
    }
    ImGui::PopID();
  }
}

}  // namespace

void InputView::drawRefused(Workbench& wb) {
  const auto& refused = wb.doc().refused;
  if (!refused) return;
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.7f, 0.25f, 1.0f));
  ImGui::TextWrapped(wb.doc().snapshot ? "Not run: %s. The views show the last accepted input."
                                        : "Not run: %s. This model has run no input yet.",
                     refused->reason.c_str());
  ImGui::PopStyleColor();
  if (refused->tokens <= refused->limit || refused->limit <= 0) return;
  // A text too long for the model: keep its beginning, or a window around a token of interest.
  const std::string first = "Keep the first " + std::to_string(refused->limit) + " tokens";
  if (ImGui::Button(first.c_str())) wb.apply(cmd::TrimInput{"first", 0});
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("cuts the text after the token that fills the model's %lld positions (special tokens included)",
                      static_cast<long long>(refused->limit));
  ImGui::SameLine();
  if (trim_centre_ < 0) trim_centre_ = static_cast<int>(refused->tokens / 2);
  trim_centre_ = std::clamp(trim_centre_, 0, static_cast<int>(refused->tokens) - 1);
  const std::string around = "Keep " + std::to_string(refused->limit) + " tokens around token";
  if (ImGui::Button(around.c_str())) wb.apply(cmd::TrimInput{"around", trim_centre_});
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  ImGui::InputInt("##centre", &trim_centre_);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("a token position of the refused text (0 – %lld)", static_cast<long long>(refused->tokens - 1));
}

void InputView::drawContent(Workbench& wb) {
  const bool enc_dec = wb.doc().model && wb.doc().model->kind == "encoder-decoder";
  ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 3);
  // The boxes edit a copy; every keystroke goes into the document (so a save keeps it), Enter runs.
  std::string text = wb.doc().session.text, decoder_text = wb.doc().session.decoder_text;
  bool edited = false, run = false;
  ImGuiInputTextFlags flags = ImGuiInputTextFlags_EnterReturnsTrue | ImGuiInputTextFlags_CallbackEdit;
  auto mark_edit = [](ImGuiInputTextCallbackData* data) {
    *static_cast<bool*>(data->UserData) = true;
    return 0;
  };
  run |= ImGui::InputText("##text", &text, flags, mark_edit, &edited);
  ImGui::SameLine();
  run |= ImGui::Button("Run");
  if (enc_dec) {
    ImGui::SetNextItemWidth(-ImGui::GetFontSize() * 3);
    run |= ImGui::InputTextWithHint("##dec", "decoder text (empty = same as the input)", &decoder_text, flags, mark_edit,
                                    &edited);
  }
  if (edited || run) wb.apply(cmd::SetText{text, decoder_text, run});
  if (wb.doc().model && wb.doc().model->masked_lm) ImGui::TextDisabled("masked LM: write [MASK] where the model should predict");
  drawRefused(wb);
  if (!wb.doc().snapshot) return;
  ImGui::Separator();
  const auto& s = *wb.doc().snapshot;
  if (wb.doc().refused)
    ImGui::TextColored(ImVec4(1.0f, 0.7f, 0.25f, 1.0f), "the last accepted input's %zu tokens:", s.tokens.ids.size());
  else
    ImGui::TextDisabled("%zu tokens%s", s.tokens.ids.size(), wb.doc().model && !wb.doc().model->has_tokenizer ? " (no tokenizer: words hashed to ids)" : "");
  ImGui::BeginChild("tokens", ImVec2(0, 0), false);
  token_chips(wb, s.tokens, true);
  if (!s.decoder_tokens.ids.empty()) {
    ImGui::Separator();
    ImGui::TextDisabled("decoder: %zu tokens", s.decoder_tokens.ids.size());
    token_chips(wb, s.decoder_tokens, false);
  }
  ImGui::EndChild();
}

}  // namespace headlab::app
