#include "app/cli/cmd_tokenize.h"

#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"

namespace headlab::app {

int run_tokenize_command(const std::string& tokenizer_path, bool add_special, std::istream& in, std::ostream& out) {
  std::shared_ptr<const core::Tokenizer> tokenizer;
  try {
    tokenizer = core::Tokenizer::load(tokenizer_path);
  } catch (const std::exception& e) {
    std::cerr << "headlab tokenize: " << e.what() << "\n";
    return 1;
  }
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    nlohmann::json text;
    try {
      text = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      text = nullptr;
    }
    if (!text.is_string()) {
      // A record a line, so that the output's lines match the input's: a blank line is no record.
      if (line.find_first_not_of(" \t\r") == std::string::npos)
        std::cerr << "headlab tokenize: line " << line_no << " is blank: give one JSON string a line (\"\" for an "
                  << "empty text)\n";
      else
        std::cerr << "headlab tokenize: line " << line_no << ": expected a JSON string such as \"Hello\", got: "
                  << line.substr(0, 80) << (line.size() > 80 ? "..." : "") << "\n";
      return 2;
    }
    const core::Encoding e = tokenizer->encode(text.get<std::string>(), add_special);
    nlohmann::ordered_json offsets = nlohmann::ordered_json::array();
    for (const auto& [s, t] : e.offsets) offsets.push_back({s, t});
    nlohmann::ordered_json record;  // keys in the documented order
    record["ids"] = e.ids;
    record["tokens"] = e.tokens;
    record["offsets"] = std::move(offsets);
    // Tokens are vocabulary strings; `replace` keeps a malformed one from aborting the stream.
    out << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.flush();
  }
  return 0;
}

}  // namespace headlab::app
