// Checks of the values a user gives the heads' controls (core/controls.h), wherever they come from:
// the command line's --gate, a session file, a script. A gate is in [0, 1]; a mixing matrix and
// mean outputs hold finite numbers. Each check throws std::invalid_argument naming `where` and the
// value, and a NaN fails every one. Torch-free.
#pragma once

#include "core/controls.h"

#include <string>

namespace headlab::core {

// A gate value: in [0, 1] (0 closes the head, 1 leaves it as it is).
void check_gate(float value, const std::string& where);

// Values of a mixing matrix or mean outputs (named by `what`, e.g. "pre_mix"): every entry finite.
void check_finite_values(const std::vector<float>& matrix, const std::string& where, const char* what);

// Every value of one layer's controls: gates in [0, 1], mixing matrices and mean outputs finite.
void check_controls(const HeadControls& controls, const std::string& where);

}  // namespace headlab::core
