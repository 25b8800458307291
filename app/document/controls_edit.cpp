#include "app/document/controls_edit.h"

#include <cmath>

namespace headlab::app {

std::vector<float> mix_preset(MixPreset preset, int heads, int a, int b, float alpha) {
  std::vector<float> m(static_cast<size_t>(heads) * heads, 0.0f);
  auto at = [&](int r, int c) -> float& { return m[static_cast<size_t>(r) * heads + c]; };
  for (int i = 0; i < heads; ++i) at(i, i) = 1.0f;
  const bool valid = a >= 0 && b >= 0 && a < heads && b < heads && a != b;
  switch (preset) {
    case MixPreset::Identity: break;
    case MixPreset::Uniform:
      for (auto& v : m) v = 1.0f / static_cast<float>(heads);
      break;
    case MixPreset::Swap:
      if (!valid) break;
      at(a, a) = at(b, b) = 0.0f;
      at(a, b) = at(b, a) = 1.0f;
      break;
    case MixPreset::Blend:
      if (!valid) break;
      // Column j of M says what output head j receives (L ← L·M over the head axis).
      at(a, a) = 1.0f - alpha;
      at(b, a) = alpha;
      at(b, b) = 1.0f - alpha;
      at(a, b) = alpha;
      break;
  }
  return m;
}

std::string head_mixed(const core::HeadControls& controls, int head) {
  // M is [heads, heads] row-major and the mix is X ← X·M: head j receives column j.
  auto changes = [&](const std::vector<float>& m) {
    const int n = static_cast<int>(std::lround(std::sqrt(static_cast<double>(m.size()))));
    if (m.empty() || head >= n) return false;
    for (int i = 0; i < n; ++i)
      if (m[static_cast<size_t>(i) * n + head] != (i == head ? 1.0f : 0.0f)) return true;
    return false;
  };
  const bool pre = changes(controls.pre_mix), post = changes(controls.post_mix);
  return pre && post ? "pre+post" : pre ? "pre" : post ? "post" : "";
}

bool is_identity(const std::vector<float>& matrix, int heads) {
  if (matrix.empty()) return true;
  if (matrix.size() != static_cast<size_t>(heads) * heads) return false;
  for (int r = 0; r < heads; ++r)
    for (int c = 0; c < heads; ++c)
      if (matrix[static_cast<size_t>(r) * heads + c] != (r == c ? 1.0f : 0.0f)) return false;
  return true;
}

namespace {

int matrix_side(const std::vector<float>& m) { return static_cast<int>(std::lround(std::sqrt(static_cast<double>(m.size())))); }

void canonicalize_layer(core::HeadControls& c) {
  bool all_one = true;
  for (float g : c.gates) all_one = all_one && g == 1.0f;
  if (all_one) c.gates.clear();
  if (is_identity(c.pre_mix, matrix_side(c.pre_mix))) c.pre_mix.clear();
  if (is_identity(c.post_mix, matrix_side(c.post_mix))) c.post_mix.clear();
}

void canonicalize_stack(std::vector<core::HeadControls>& layers) {
  for (auto& l : layers) canonicalize_layer(l);
  // A mean-ablation choice is kept even while no gate is closed (it is what the Mixer shows).
  while (!layers.empty() && layers.back().is_default() && layers.back().ablation == core::Ablation::Zero) layers.pop_back();
}

std::vector<core::HeadControls>& stack_of(core::ModelControls& c, core::Stack stack) {
  return stack == core::Stack::Encoder ? c.encoder_self : stack == core::Stack::Decoder ? c.decoder_self : c.decoder_cross;
}

}  // namespace

void canonicalize(core::HeadControls& controls, int, int, int) { canonicalize_layer(controls); }

void canonicalize(core::ModelControls& controls) {
  canonicalize_stack(controls.encoder_self);
  canonicalize_stack(controls.decoder_self);
  canonicalize_stack(controls.decoder_cross);
}

bool same_controls(const core::ModelControls& a, const core::ModelControls& b) {
  return a.encoder_self == b.encoder_self && a.decoder_self == b.decoder_self && a.decoder_cross == b.decoder_cross;
}

void set_gate(core::ModelControls& controls, core::Stack stack, int layer, int head, float value, int heads) {
  auto& c = controls.at(stack, layer);
  if (static_cast<int>(c.gates.size()) < heads) c.gates.resize(heads, 1.0f);
  if (head >= 0 && head < static_cast<int>(c.gates.size())) c.gates[head] = std::min(1.0f, std::max(0.0f, value));
  canonicalize(controls);
}

void set_mix(core::ModelControls& controls, core::Stack stack, int layer, const std::string& which,
             std::vector<float> matrix, int heads) {
  auto& c = controls.at(stack, layer);
  if (is_identity(matrix, heads)) matrix.clear();
  (which == "pre" ? c.pre_mix : c.post_mix) = std::move(matrix);
  canonicalize(controls);
}

void reset_layer(core::ModelControls& controls, core::Stack stack, int layer) {
  auto& layers = stack_of(controls, stack);
  if (layer < static_cast<int>(layers.size())) layers[layer] = core::HeadControls{};
  canonicalize(controls);
}

int first_changed_layer(const core::ModelControls& a, const core::ModelControls& b, core::Stack stack,
                        int layers) {
  for (int l = 0; l < layers; ++l)
    if (a.get(stack, l) != b.get(stack, l)) return l;
  return -1;
}

}  // namespace headlab::app
