// Error messages with context, as they travel up: "opening /m: config.json: not JSON". Torch-free.
#pragma once

#include <string>

namespace headlab::core {

// `context: message`, without repeating what `message` already starts with: a loader that says
// "/m: not a folder" under the context "opening /m" gives "opening /m: not a folder".
inline std::string in_context(const std::string& context, const std::string& message) {
  const size_t space = context.rfind(' ');
  const std::string subject = space == std::string::npos ? context : context.substr(space + 1);
  if (!subject.empty() && message.rfind(subject + ": ", 0) == 0) return context + message.substr(subject.size());
  if (message.rfind(context + ": ", 0) == 0) return message;
  return context + ": " + message;
}

}  // namespace headlab::core
