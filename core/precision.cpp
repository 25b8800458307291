#include "core/precision.h"

#include <atomic>
#include <stdexcept>

namespace headlab::core {
namespace {

std::atomic<Precision> chosen{Precision::exact};

}  // namespace

Precision parse_precision(const std::string& text) {
  if (text == "exact") return Precision::exact;
  if (text == "fast") return Precision::fast;
  throw std::invalid_argument("'" + text + "' is not a precision (exact: float32 throughout; fast: BF16 weights "
                              "multiply in BF16, TF32 on a card)");
}

const char* precision_name(Precision precision) { return precision == Precision::fast ? "fast" : "exact"; }

void set_precision(Precision precision) {
  chosen.store(precision);
}

Precision current_precision() { return chosen.load(); }

std::string recorded_precision() { return current_precision() == Precision::fast ? "fast" : ""; }

}  // namespace headlab::core
