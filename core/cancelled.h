// Cancellation, one type for the whole engine: a run, an analysis, a conversion or a background task
// that stops because it was asked to throws Cancelled, and whoever catches it knows the work was
// abandoned on purpose, not failed. Torch-free.
#pragma once

#include <stdexcept>

namespace headlab::core {

struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

}  // namespace headlab::core
