// Reading JSON files with messages a person can act on: "s.json: not valid JSON at line 3,
// column 7: unexpected end of input; expected '}'" rather than nlohmann's raw exception text.
// Torch-free.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace headlab::core {

// nlohmann's parse error as "at line L, column C: what went wrong".
std::string describe_json_error(const nlohmann::json::exception& error);

// Parses `text`; throws std::runtime_error "`origin`: not valid JSON at line L, column C: …".
nlohmann::json parse_json_text(std::string_view text, const std::string& origin);

// Reads and parses a file; throws std::runtime_error naming the file: cannot be opened, empty, or
// not valid JSON (with the line and column).
nlohmann::json read_json_file(const std::string& path);

}  // namespace headlab::core
