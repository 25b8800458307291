#include "core/controls.h"

#include "core/control_values.h"

#include <ostream>
#include <stdexcept>

namespace headlab::core {

const char* stack_name(Stack stack) {
  static const char* const names[] = {"encoder", "decoder", "cross"};
  return names[static_cast<int>(stack)];
}

Stack stack_from_name(const std::string& name) {
  for (Stack s : kStacks)
    if (name == stack_name(s)) return s;
  throw std::invalid_argument("unknown stack '" + name + "' (expected encoder, decoder or cross)");
}

const char* stage_name(Stage stage) {
  static const char* const names[] = {"J", "L", "W", "U"};
  return names[static_cast<int>(stage)];
}

Stage stage_from_name(const std::string& name) {
  for (int s = 0; s < kStageCount; ++s)
    if (name == stage_name(static_cast<Stage>(s))) return static_cast<Stage>(s);
  throw std::invalid_argument("unknown stage '" + name + "' (J, L, W or U)");
}

std::ostream& operator<<(std::ostream& out, Stack stack) { return out << stack_name(stack); }
std::ostream& operator<<(std::ostream& out, Stage stage) { return out << stage_name(stage); }

Capture capture_of(Stage stage) {
  switch (stage) {
    case Stage::J: return kCaptureLogits;
    case Stage::L: return kCaptureMixedLogits;
    case Stage::W: return kCaptureWeights;
    case Stage::U: return kCaptureMixedWeights;
  }
  return kCaptureMixedWeights;
}

namespace {

bool gates_equal(const std::vector<float>& a, const std::vector<float>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const float x = i < a.size() ? a[i] : 1.0f;
    const float y = i < b.size() ? b[i] : 1.0f;
    if (x != y) return false;
  }
  return true;
}

const HeadControls& default_controls() {
  static const HeadControls controls;  // immutable, safe to share
  return controls;
}

}  // namespace

bool HeadControls::is_default() const { return *this == default_controls(); }

bool HeadControls::operator==(const HeadControls& o) const {
  // Ablation mode matters only when some gate is not 1.
  const bool any_gate = !gates_equal(gates, {}) || !gates_equal(o.gates, {});
  return gates_equal(gates, o.gates) && (!any_gate || (ablation == o.ablation && mean_outputs == o.mean_outputs)) &&
         pre_mix == o.pre_mix && post_mix == o.post_mix;
}

std::vector<HeadControls>& ModelControls::layers(Stack stack) {
  return stack == Stack::Encoder ? encoder_self : stack == Stack::Decoder ? decoder_self : decoder_cross;
}

const std::vector<HeadControls>& ModelControls::layers(Stack stack) const {
  return stack == Stack::Encoder ? encoder_self : stack == Stack::Decoder ? decoder_self : decoder_cross;
}

HeadControls& ModelControls::at(Stack stack, int layer) {
  if (layer < 0) throw std::invalid_argument("layer must be >= 0");
  auto& v = layers(stack);
  if (static_cast<int>(v.size()) <= layer) v.resize(layer + 1);
  return v[layer];
}

const HeadControls& ModelControls::get(Stack stack, int layer) const {
  const auto& v = layers(stack);
  return layer >= 0 && layer < static_cast<int>(v.size()) ? v[layer] : default_controls();
}

bool ModelControls::is_default() const {
  for (const auto* v : {&encoder_self, &decoder_self, &decoder_cross})
    for (const auto& c : *v)
      if (!c.is_default()) return false;
  return true;
}

GateSpec parse_gate_spec(const std::string& text) {
  const auto dot = text.find('.');
  const auto eq = text.find('=');
  if (dot == std::string::npos || eq == std::string::npos || eq < dot)
    throw std::invalid_argument("gate '" + text + "': expected LAYER.HEAD=VALUE, e.g. 2.5=0");
  GateSpec spec;
  try {
    size_t used = 0;
    spec.layer = std::stoi(text.substr(0, dot), &used);
    if (used != dot) throw std::invalid_argument("layer");
    const std::string head = text.substr(dot + 1, eq - dot - 1);
    spec.head = std::stoi(head, &used);
    if (used != head.size()) throw std::invalid_argument("head");
    const std::string value = text.substr(eq + 1);
    spec.value = std::stof(value, &used);
    if (used != value.size()) throw std::invalid_argument("value");
  } catch (const std::exception&) {
    throw std::invalid_argument("gate '" + text + "': expected LAYER.HEAD=VALUE with integers and a number, e.g. 2.5=0");
  }
  if (spec.layer < 0 || spec.head < 0) throw std::invalid_argument("gate '" + text + "': layer and head must be >= 0");
  check_gate(spec.value, "gate '" + text + "'");
  return spec;
}

}  // namespace headlab::core
