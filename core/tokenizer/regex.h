// A compiled PCRE2 regex (UTF + UCP mode, JIT when available) for the pre-tokenizer patterns in
// tokenizer.json (\p{L}, \p{N}, look-ahead, (?i:...)). Private to core/tokenizer/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace headlab::core::tok {

class Regex {
 public:
  // Throws std::runtime_error with PCRE2's message and the offset of the defect.
  explicit Regex(const std::string& pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Appends the [start, end) byte ranges of the successive non-overlapping matches in `subject`
  // (well-formed UTF-8). After an empty match the search resumes one char later.
  // Thread-safe: the compiled pattern is shared, match state is per call / per thread.
  void find_all(std::string_view subject, std::vector<std::pair<uint32_t, uint32_t>>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;
};

// Escapes a literal string for use in a pattern.
std::string regex_escape(std::string_view literal);

}  // namespace headlab::core::tok
