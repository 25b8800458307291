#include "app/state/script.h"

#include <fstream>
#include <map>
#include <stdexcept>

namespace headlab::app {

std::vector<ScriptAction> parse_script(const nlohmann::json& json, const std::string& origin) {
  // Required fields per action kind.
  static const std::map<std::string, std::vector<std::string>> kinds = {
      {"open_model", {"folder"}},  {"set_text", {"text"}},       {"run", {}},
      {"select_head", {"layer", "head"}}, {"select_token", {}},    {"set_gate", {"layer", "head", "value"}},
      {"set_ablation", {"layer", "mode"}}, {"set_mix", {"layer", "which"}}, {"reset", {}},
      {"set_view", {}},            {"save_session", {"path"}},   {"open_session", {"path"}},
      {"export", {"view", "path"}}, {"screenshot", {"path"}},    {"wait_frames", {"frames"}},
      {"show_view", {"view"}},     {"quit", {}}};
  const nlohmann::json& list = json.is_object() && json.contains("actions") ? json.at("actions") : json;
  if (!list.is_array()) throw std::runtime_error(origin + ": expected a list of actions (or {\"actions\": [...]})");
  std::vector<ScriptAction> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& a = list[i];
    const std::string where = origin + ": action " + std::to_string(i);
    if (!a.is_object() || !a.contains("action") || !a.at("action").is_string())
      throw std::runtime_error(where + ": expected an object with an \"action\" string");
    const std::string kind = a.at("action").get<std::string>();
    auto it = kinds.find(kind);
    if (it == kinds.end()) throw std::runtime_error(where + ": unknown action '" + kind + "'");
    for (const auto& field : it->second)
      if (!a.contains(field)) throw std::runtime_error(where + " (" + kind + "): missing \"" + field + "\"");
    out.push_back({kind, a, static_cast<int>(i)});
  }
  return out;
}

std::vector<ScriptAction> load_script(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open script " + path);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("script " + path + ": " + e.what());
  }
  return parse_script(json, path);
}

}  // namespace headlab::app
