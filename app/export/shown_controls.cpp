#include "app/export/shown_controls.h"

#include "app/document/controls_edit.h"

namespace headlab::app {

bool stage_shows_gates(const AttentionSummary& attention, Stage stage) {
  return stage == Stage::U || !attention.talking_heads;
}

const core::HeadControls& shown_controls(const Document& doc, core::Stack stack, int layer) {
  static const core::ModelControls none;
  return (doc.snapshot ? doc.snapshot->input.controls : none).get(stack, layer);
}

float shown_gate(const Document& doc, core::Stack stack, int layer, int head, Stage stage) {
  const AttentionSummary* attention = doc.model ? doc.model->find(stack) : nullptr;
  if (!attention || !stage_shows_gates(*attention, stage)) return 1.0f;
  return shown_controls(doc, stack, layer).gate(head);
}

float shown_take(const Document& doc, core::Stack stack, int layer, int head, Stage stage) {
  if (!doc.model || !doc.snapshot || !doc.snapshot->counterfactual_note.empty()) return 0.0f;
  const core::Stack main = doc.model->kind == "decoder" ? core::Stack::Decoder : core::Stack::Encoder;
  const AttentionSummary* attention = doc.model->find(stack);
  if (stack != main || doc.model->kind == "encoder-decoder" || !attention || !stage_shows_gates(*attention, stage))
    return 0.0f;
  const auto& take = doc.snapshot->input.take;
  if (layer < 0 || layer >= static_cast<int>(take.size()) || head < 0 || head >= static_cast<int>(take[layer].size()))
    return 0.0f;
  return take[layer][head];
}

std::string controls_not_shown(const Document& doc) {
  if (!doc.model || !doc.snapshot) return "";
  if (same_controls(doc.session.controls, doc.snapshot->input.controls)) return "";
  return doc.refused ? "gates and mixing as run: those set since have not run (the input is refused)"
                     : "gates and mixing as run: those set since are running…";
}

}  // namespace headlab::app
