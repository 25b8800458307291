#include "core/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>

namespace headlab::core::tok {

namespace {

// Per-thread JIT stack and match context: PCRE2's default 32 KiB JIT stack overflows on long
// runs matched by patterns like `\s+(?!\S)`; neither object may be used by two threads at once.
struct ThreadMatchState {
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  ThreadMatchState() {
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context && jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~ThreadMatchState() {
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
    if (context) pcre2_match_context_free(context);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Hugging Face's tokenizers compile patterns with Oniguruma, whose character classes nest: a class
// inside a class is their union (BLOOM's ` ?[^(\s|[.,!?…])]+` excludes the parenthesis, space, bar
// and punctuation alike). PCRE2 reads a '[' in a class as a literal, so a nested class is flattened
// into its parent here; a negated nested class and Oniguruma's '&&' intersection have no flat form
// and are refused. Everything else passes through unchanged.
std::string flatten_nested_classes(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size());
  int depth = 0;  // 0: outside a class; n: inside n nested classes
  auto opens_class_body = [&](size_t& i) {  // after a '[': a leading '^' (outermost only) and ']' stay
    if (depth == 1 && i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
    if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      out.push_back(c);
      out.push_back(pattern[++i]);
      continue;
    }
    if (depth == 0) {
      out.push_back(c);
      if (c == '[') {
        depth = 1;
        opens_class_body(i);
      }
      continue;
    }
    if (c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {  // a POSIX class [:alpha:]
      const size_t end = pattern.find(":]", i + 2);
      if (end == std::string::npos) throw std::runtime_error("unterminated POSIX class");
      out.append(pattern, i, end + 2 - i);
      i = end + 1;
      continue;
    }
    if (c == '[') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '^')
        throw std::runtime_error("a negated character class inside another (Oniguruma) has no PCRE2 form");
      ++depth;
      opens_class_body(i);
      continue;
    }
    if (c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&')
      throw std::runtime_error("character class intersection '&&' (Oniguruma) has no PCRE2 form");
    if (c == ']') {
      if (--depth == 0) out.push_back(c);
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  std::string flat;
  try {
    flat = flatten_nested_classes(pattern);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("invalid regex /" + pattern + "/: " + e.what());
  }
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(flat.data()), flat.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (!code) {
    throw std::runtime_error("invalid regex /" + pattern + "/ at offset " + std::to_string(error_offset) +
                             (flat != pattern ? " of its PCRE2 form /" + flat + "/" : std::string()) + ": " +
                             pcre2_message(error));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view subject, std::vector<std::pair<uint32_t, uint32_t>>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadMatchState& state = thread_state();
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code, nullptr);
  if (!data) throw std::runtime_error("regex: out of memory");
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  const size_t n = subject.size();
  size_t start = 0;
  // The subject was validated once when the text was decoded: skip PCRE2's per-call UTF check.
  const uint32_t options = PCRE2_NO_UTF_CHECK;
  while (start <= n) {
    int rc = pcre2_match(code, s, n, start, options, data, state.context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {  // retry this match with the interpreter
      rc = pcre2_match(code, s, n, start, options | PCRE2_NO_JIT, data, state.context);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(data);
      throw std::runtime_error("regex /" + pattern_ + "/: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    size_t b = ov[0], e = ov[1];
    out.emplace_back(static_cast<uint32_t>(b), static_cast<uint32_t>(e));
    if (e > b) {
      start = e;
    } else {
      if (e >= n) break;
      start = e + 1;
      while (start < n && (static_cast<unsigned char>(subject[start]) & 0xC0) == 0x80) ++start;
    }
  }
  pcre2_match_data_free(data);
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace headlab::core::tok

#include <nlohmann/json.hpp>

#include "core/tokenizer/json_keys.h"

namespace headlab::core::tok {

std::string pattern_from_json(const nlohmann::json& p, const std::string& where) {
  if (p.is_object() && p.size() == 1) {
    if (p.contains("String") && p["String"].is_string()) return regex_escape(p["String"].get<std::string>());
    if (p.contains("Regex") && p["Regex"].is_string()) return p["Regex"].get<std::string>();
  }
  throw std::runtime_error(where + ": pattern must be {\"String\": …} or {\"Regex\": …}");
}

}  // namespace headlab::core::tok
