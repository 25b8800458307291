#include "core/tokenizer/token_lookup.h"

#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/unicode.h"

#include <optional>
#include <stdexcept>

namespace headlab::core {

std::string token_name(const Tokenizer* tokenizer, int64_t id) {
  std::string name = tokenizer ? tokenizer->id_to_token(id) : std::string();
  return name.empty() ? "#" + std::to_string(id) : name;
}

namespace {

// The spaces, newlines and tabs of `text` as visible marks; with `stand_ins`, also byte-level
// BPE's characters for them (U+0120, U+010A, U+0109).
std::string mark_spaces(const std::u32string& text, bool stand_ins) {
  std::string out;
  for (char32_t c : text) {
    if (c == U' ' || c == U'\u2581' || (stand_ins && c == U'\u0120'))
      out += "\u00B7";
    else if (c == U'\n' || (stand_ins && c == U'\u010A'))
      out += "\u21B5";
    else if (c == U'\t' || (stand_ins && c == U'\u0109'))
      out += "\u21E5";
    else
      tok::append_utf8(out, c);
  }
  return out;
}

// The text byte-level BPE's stand-ins in `chars` spell, or nothing when a character is no stand-in,
// the bytes are not well-formed UTF-8, or they hold a control character other than \t and \n.
std::optional<std::u32string> byte_level_text(const std::u32string& chars) {
  std::string bytes;
  for (char32_t c : chars) {
    const int b = tok::unicode_to_byte(c);
    if (b < 0) return std::nullopt;
    bytes += static_cast<char>(b);
  }
  if (!tok::is_valid_utf8(bytes)) return std::nullopt;
  std::u32string text = tok::utf8_to_u32(bytes);
  for (char32_t c : text)
    if ((c < 0x20 && c != U'\t' && c != U'\n') || (c >= 0x7F && c < 0xA0)) return std::nullopt;
  return text;
}

}  // namespace

std::string readable_token(const std::string& token, bool decode_bytes) {
  const std::u32string chars = tok::utf8_to_u32(token);  // ill-formed bytes read as U+FFFD
  if (decode_bytes)
    if (auto text = byte_level_text(chars)) return mark_spaces(*text, false);
  return mark_spaces(chars, true);
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
