#include "core/tokenizer/token_lookup.h"

#include <stdexcept>

namespace headlab::core {

std::string token_name(const Tokenizer* tokenizer, int64_t id) {
  std::string name = tokenizer ? tokenizer->id_to_token(id) : std::string();
  return name.empty() ? "#" + std::to_string(id) : name;
}

int64_t token_id(const Tokenizer* tokenizer, int64_t vocab, const std::string& text) {
  if (text.empty()) throw std::invalid_argument("no token given");
  size_t used = 0;
  long long id = -1;
  try {
    id = std::stoll(text, &used);
  } catch (const std::logic_error&) {
    used = 0;  // not a number: a token
  }
  if (used == text.size()) {
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("id " + text + " is outside the vocabulary (size " + std::to_string(vocab) + ")");
    return id;
  }
  if (!tokenizer) throw std::invalid_argument("'" + text + "' is not an id, and the model has no tokenizer to read it");
  if (auto found = tokenizer->token_to_id(text)) return *found;
  const auto pieces = tokenizer->encode(text, false).ids;
  if (pieces.size() == 1) return pieces[0];
  std::string listed;
  for (size_t i = 0; i < pieces.size(); ++i) listed += (i ? " | " : "") + tokenizer->id_to_token(pieces[i]);
  throw std::invalid_argument("'" + text + "' is " + std::to_string(pieces.size()) + " tokens (" + listed +
                              "), not one; give one token or its id");
}

}  // namespace headlab::core
