#include "core/tokenizer/framing.h"

#include "core/tokenizer/token_lookup.h"

#include <stdexcept>
#include <string>

namespace headlab::core {

Encoding model_encoding(const ModelConfig& config, const Tokenizer& tokenizer, std::string_view text) {
  const bool framed = config.family != "native" || config.kind == StackKind::Encoder;
  Encoding encoding = tokenizer.encode(text, framed);
  check_encoding_fits(config, tokenizer, encoding);
  return encoding;
}

void check_encoding_fits(const ModelConfig& config, const Tokenizer& tokenizer, const Encoding& encoding) {
  // The model would refuse the id only when it runs, without saying which token or why.
  for (size_t t = 0; t < encoding.ids.size(); ++t) {
    const int64_t id = encoding.ids[t];
    if (id >= 0 && id < config.vocab_size) continue;
    const std::string token = t < encoding.tokens.size() ? readable_token(encoding.tokens[t]) : std::string();
    throw std::invalid_argument("the tokenizer gives token " + std::to_string(t) + " ('" + token + "') the id " +
                                std::to_string(id) + ", outside the model's vocabulary of " +
                                std::to_string(config.vocab_size) + " ids: the folder's tokenizer (" +
                                std::to_string(tokenizer.vocab_size()) +
                                " tokens) does not match its weights' embedding (`headlab info` shows both sizes)");
  }
}

}  // namespace headlab::core
