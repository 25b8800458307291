// Unicode helpers for the tokenizers: UTF-8 <-> code points and the character classes that
// Hugging Face `tokenizers` uses (Rust's char::is_whitespace, the unicode_categories crate).
// Private to core/tokenizer/. Category data comes from utf8proc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace headlab::core::tok {

// Decodes UTF-8. Ill-formed input never throws: each maximal ill-formed subpart becomes one
// U+FFFD, the policy of Rust's String::from_utf8_lossy (Unicode "best practice").
std::u32string utf8_to_u32(std::string_view s);

// True when `s` is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// `s` itself when well-formed, else its lossy repair (see utf8_to_u32).
std::string sanitize_utf8(std::string_view s);

void append_utf8(std::string& out, char32_t c);
std::string u32_to_utf8(std::u32string_view s);

// Length in bytes of the UTF-8 sequence starting with lead byte `b` (1 for continuation bytes).
inline int utf8_length(unsigned char b) {
  return b < 0x80 ? 1 : b < 0xE0 ? (b < 0xC0 ? 1 : 2) : b < 0xF0 ? 3 : 4;
}

int unicode_category(char32_t c);  // a utf8proc_category_t value

// Rust `char::is_whitespace` (the White_Space property).
bool is_whitespace(char32_t c);

// BertNormalizer / BertPreTokenizer classes, as HF defines them.
bool is_bert_control(char32_t c);      // Cc, Cf, Co except \t \n \r
bool is_bert_punctuation(char32_t c);  // P* categories plus ASCII 33-47, 58-64, 91-96, 123-126
bool is_chinese_char(char32_t c);      // the CJK ideograph blocks BERT pads with spaces
bool is_mark_nonspacing(char32_t c);   // Mn
bool is_alphanumeric(char32_t c);      // Rust char::is_alphanumeric: L*, N*
bool is_numeric(char32_t c);           // Rust char::is_numeric: Nd, Nl, No

int combining_class(char32_t c);

// Full lowercase mapping as Rust's char::to_lowercase (U+0130 maps to two code points).
void append_lowercase(std::u32string& out, char32_t c);

}  // namespace headlab::core::tok
