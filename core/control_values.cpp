#include "core/control_values.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace headlab::core {
namespace {

std::string number_text(float v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

}  // namespace

void check_finite_values(const std::vector<float>& values, const std::string& where, const char* what) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw std::invalid_argument(where + ": " + what + " entry " + std::to_string(i) + " is " +
                                  number_text(values[i]) + ", not a finite number");
}

void check_gate(float value, const std::string& where) {
  if (!(value >= 0.0f && value <= 1.0f))
    throw std::invalid_argument(where + ": a gate must be in [0, 1] (0 closes the head), not " + number_text(value));
}

void check_controls(const HeadControls& controls, const std::string& where) {
  for (size_t h = 0; h < controls.gates.size(); ++h) check_gate(controls.gates[h], where + " head " + std::to_string(h));
  check_finite_values(controls.pre_mix, where, "pre_mix");
  check_finite_values(controls.post_mix, where, "post_mix");
  check_finite_values(controls.mean_outputs, where, "mean_outputs");
}

}  // namespace headlab::core
