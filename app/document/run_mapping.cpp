#include "app/document/run_mapping.h"

#include "core/memory_budget.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace headlab::app {

int64_t full_maps_budget() {
  const char* env = std::getenv("HEADLAB_FULL_MAPS");
  if (!env || !*env) return kFullMapsBudget;
  if (std::string(env) == "0") return 0;
  try {
    return core::parse_byte_size(env);
  } catch (const std::exception& e) {
    static bool said = false;  // a malformed value keeps the default; said once, not at every run
    if (!said) std::cerr << "headlab: HEADLAB_FULL_MAPS: " << e.what() << "; keeping 128M\n";
    said = true;
    return kFullMapsBudget;
  }
}

RunInput make_run_input(const SessionState& session) {
  RunInput in;
  in.text = session.text;
  in.decoder_text = session.decoder_text;
  in.controls = session.controls;
  in.all_stages = session.selection.stage == Stage::J || session.selection.stage == Stage::L;
  in.open_stack = session.selection.stack;
  in.open_layer = session.selection.layer;
  in.full_maps_budget = full_maps_budget();
  in.top_k = std::max(1, std::min(50, session.view.top_k));
  // Only the position the Output view shows goes through the LM head (default: every [MASK]).
  if (session.selection.output_position >= 0) in.output_positions = {session.selection.output_position};
  in.logit_spectra = session.view.logit_spectra;
  in.weight_spectra = session.view.workspace == "Analyse";  // the Spectra view's
  const auto& a = session.analysis;
  in.relevance = {a.lrp_enabled, a.lrp_position, a.lrp_token, a.lrp_shading == "flow"};
  in.counterfactual = session.patching.settings.counterfactual;
  in.take = session.patching.take;
  return in;
}

void clamp_selection(Selection& s, const ModelSummary& model, const RunSnapshot* snapshot) {
  if (model.attentions.empty()) return;
  const AttentionSummary* a = model.find(s.stack);
  if (!a) a = &model.attentions.front(), s.stack = a->stack;
  s.layer = std::max(0, std::min(s.layer, a->layers - 1));
  s.mixer_layer = std::max(0, std::min(s.mixer_layer, a->layers - 1));
  s.head = std::max(0, std::min(s.head, a->heads(s.stage) - 1));
  if (snapshot) {
    const int rows = static_cast<int>(snapshot->query_tokens(s.stack).ids.size());
    const int cols = static_cast<int>(snapshot->key_tokens(s.stack).ids.size());
    if (s.query >= rows) s.query = -1;
    if (s.key >= cols) s.key = -1;
    const auto& out_tokens = snapshot->decoder_tokens.ids.empty() ? snapshot->tokens : snapshot->decoder_tokens;
    if (s.output_position >= static_cast<int>(out_tokens.ids.size())) s.output_position = -1;
  }
}

std::string fit_controls(core::ModelControls& controls, const ModelSummary& model) {
  std::string dropped;
  auto note = [&](const std::string& what) { dropped += (dropped.empty() ? "" : "; ") + what; };
  for (const core::Stack stack : core::kStacks) {
    auto& layers = controls.layers(stack);
    const AttentionSummary* a = model.find(stack);
    const size_t count = a ? static_cast<size_t>(a->layers) : 0;
    if (layers.size() > count) {
      for (size_t l = count; l < layers.size(); ++l)
        if (!layers[l].is_default()) note(std::string(core::stack_name(stack)) + " layer " + std::to_string(l) + " (not in this model)");
      layers.resize(count);
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      auto& c = layers[l];
      const std::string where = std::string(core::stack_name(stack)) + " layer " + std::to_string(l);
      if (!c.gates.empty() && c.gates.size() != static_cast<size_t>(a->output_heads))
        note(where + " gates (" + std::to_string(c.gates.size()) + " for " + std::to_string(a->output_heads) + " heads)"), c.gates.clear();
      if (!c.pre_mix.empty() && c.pre_mix.size() != static_cast<size_t>(a->softmax_heads) * a->softmax_heads)
        note(where + " pre-softmax mix"), c.pre_mix.clear();
      if (!c.post_mix.empty() && c.post_mix.size() != static_cast<size_t>(a->output_heads) * a->output_heads)
        note(where + " post-softmax mix"), c.post_mix.clear();
      c.mean_outputs.clear();
    }
  }
  return dropped;
}

const AttentionSummary* take_attention(const ModelSummary& model) {
  const AttentionSummary* main = nullptr;
  for (const auto& a : model.attentions)
    if (a.stack != core::Stack::Cross) main = &a;  // the decoder's follows the encoder's
  return main;
}

std::string fit_take(std::vector<std::vector<float>>& take, const ModelSummary& model) {
  std::string dropped;
  auto note = [&](const std::string& what) { dropped += (dropped.empty() ? "" : "; ") + what; };
  const AttentionSummary* a = take_attention(model);
  const size_t layers = a ? static_cast<size_t>(a->layers) : 0;
  const size_t heads = a ? static_cast<size_t>(a->output_heads) : 0;
  auto taken = [](float w) { return w != 0.0f; };
  for (size_t l = 0; l < take.size(); ++l) {
    auto& row = take[l];
    const std::string where = "take from counterfactual, layer " + std::to_string(l);
    if (l >= layers) {
      if (std::any_of(row.begin(), row.end(), taken)) note(where + " (not in this model)");
      continue;
    }
    if (row.size() > heads && std::any_of(row.begin() + static_cast<std::ptrdiff_t>(heads), row.end(), taken))
      note(where + " heads " + std::to_string(heads) + "–" + std::to_string(row.size() - 1) + " (the layer has " +
           std::to_string(heads) + ")");
    if (row.size() > heads) row.resize(heads);
    for (size_t h = 0; h < row.size(); ++h)
      if (!(row[h] >= 0.0f && row[h] <= 1.0f)) {
        std::ostringstream weight;
        weight << row[h];
        note(where + " head " + std::to_string(h) + " (weight " + weight.str() + ", not in [0, 1])");
        row[h] = 0.0f;
      }
  }
  if (take.size() > layers) take.resize(layers);
  // Trailing zeros go, so that "nothing taken" is an empty list.
  while (!take.empty() && !std::any_of(take.back().begin(), take.back().end(), taken)) take.pop_back();
  return dropped;
}

std::string demo_text(const ModelSummary& model) {
  if (model.masked_lm) return "The cat sat on the [MASK] because it was tired.";
  return "The cat sat on the mat because it was";
}

std::string figure_basename(const std::string& model_name, const std::string& view, const Selection& s) {
  std::string name = model_name.empty() ? "model" : model_name;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '-';
  std::string out = name + "_" + view + "_" + core::stack_name(s.stack) + "_L" + std::to_string(s.layer);
  if (view != "heads-grid" && view != "head-view") out += "_H" + std::to_string(s.head);
  return out + "_" + stage_name(s.stage);
}

}  // namespace headlab::app
