#include "app/document/script.h"

#include "core/json_file.h"

#include <fstream>
#include <stdexcept>

namespace headlab::app {

std::vector<ScriptAction> parse_script(const nlohmann::json& json, const std::string& origin) {
  const nlohmann::json& list = json.is_object() && json.contains("actions") ? json.at("actions") : json;
  if (!list.is_array()) throw std::runtime_error(origin + ": expected a list of actions (or {\"actions\": [...]})");
  std::vector<ScriptAction> out;
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      out.push_back({command_from_json(list[i]), static_cast<int>(i)});
    } catch (const std::exception& e) {
      throw std::runtime_error(origin + ": action " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

std::vector<ScriptAction> load_script(const std::string& path) {
  return parse_script(core::read_json_file(path), path);
}

}  // namespace headlab::app
