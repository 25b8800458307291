#include "core/json_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace headlab::core {

std::string describe_json_error(const nlohmann::json::exception& error) {
  std::string what = error.what();
  // "[json.exception.parse_error.101] parse error at line 3, column 7: syntax error while parsing
  // object - unexpected end of input; expected '}'" → "at line 3, column 7: unexpected end of
  // input; expected '}'".
  if (what.rfind("[json.exception.", 0) == 0) {
    const size_t close = what.find("] ");
    if (close != std::string::npos) what = what.substr(close + 2);
  }
  if (what.rfind("parse error ", 0) == 0) what = what.substr(12);
  const size_t syntax = what.find("syntax error while parsing ");
  if (syntax != std::string::npos) {
    const size_t dash = what.find(" - ", syntax);
    if (dash != std::string::npos) what = what.substr(0, syntax) + what.substr(dash + 3);
  }
  return what;
}

nlohmann::json parse_json_text(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
      throw std::runtime_error(origin + ": empty (no JSON in it)");
    throw std::runtime_error(origin + ": not valid JSON " + describe_json_error(e));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": cannot be read");
  return parse_json_text(text.str(), path);
}

}  // namespace headlab::core
