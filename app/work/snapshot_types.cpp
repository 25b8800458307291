// The snapshot types' small helpers (torch-free).
#include "app/work/workbench_engine.h"


namespace headlab::app {

int AttentionSummary::heads(Stage stage) const {
  switch (stage) {
    case Stage::J: return logit_heads;
    case Stage::L:
    case Stage::W: return softmax_heads;
    case Stage::U: return output_heads;
  }
  return output_heads;
}

const AttentionSummary* ModelSummary::find(core::Stack stack) const {
  for (const auto& a : attentions)
    if (a.stack == stack) return &a;
  return nullptr;
}

const AttentionMaps* RunSnapshot::find(core::Stack stack) const {
  for (const auto& a : attentions)
    if (a.stack == stack) return &a;
  return nullptr;
}

const PositionOutput* RunSnapshot::output_at(int position) const {
  for (const auto& o : outputs)
    if (o.position == position) return &o;
  return nullptr;
}

const TokenizedText& RunSnapshot::query_tokens(core::Stack stack) const {
  return stack == core::Stack::Encoder || decoder_tokens.ids.empty() ? tokens : decoder_tokens;
}

const TokenizedText& RunSnapshot::key_tokens(core::Stack stack) const {
  return stack == core::Stack::Decoder && !decoder_tokens.ids.empty() ? decoder_tokens : tokens;
}

}  // namespace headlab::app
