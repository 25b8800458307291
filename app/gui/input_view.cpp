#include "app/gui/input_view.h"

#include "app/gui/draw_util.h"
#include "app/gui/workbench.h"

#include <imgui_stdlib.h>

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
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("position %zu, id %s, %s", i, id.c_str(), t.tokens[i].c_str());
    ImGui::PopID();
  }
}

}  // namespace

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
  if (!wb.doc().snapshot) return;
  ImGui::Separator();
  const auto& s = *wb.doc().snapshot;
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
