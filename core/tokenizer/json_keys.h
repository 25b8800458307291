// Strict reading of tokenizer.json objects: a key HeadLab does not implement is an error naming
// it, never silently ignored (it would change the ids). Private to core/tokenizer/.
#pragma once

#include <initializer_list>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace headlab::core::tok {

// Throws std::runtime_error "<where>: unsupported key '<k>'" for a key of `j` not in `known`.
inline void require_known_keys(const nlohmann::json& j, std::initializer_list<const char*> known, const std::string& where) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) throw std::runtime_error(where + ": unsupported key '" + it.key() + "'");
  }
}

// The pattern of a Replace / Split: {"String": literal} or {"Regex": pattern}, as a regex.
std::string pattern_from_json(const nlohmann::json& p, const std::string& where);

}  // namespace headlab::core::tok
