#include "core/weights_policy.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace headlab::core {

bool keep_weights_mapped(int64_t values) {
  if (const char* choice = std::getenv("HEADLAB_WEIGHTS")) {
    const std::string text = choice;
    if (text == "mapped") return true;
    if (text == "float32") return false;
    if (!text.empty())
      throw std::invalid_argument("HEADLAB_WEIGHTS is '" + text + "': use mapped or float32 (or leave it unset)");
  }
  return 4 * values > kCopyAtMostBytes;
}

}  // namespace headlab::core
