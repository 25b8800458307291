#include "analysis/measure_kit.h"

#include "core/json_integer.h"

namespace headlab::analysis::kit {

int64_t last_word_token(const TokenizedSentence& ts) {
  for (int64_t t = static_cast<int64_t>(ts.word_of.size()) - 1; t >= 0; --t)
    if (!ts.special[size_t(t)]) return t;
  return static_cast<int64_t>(ts.ids.size()) - 1;
}

nlohmann::json offsets_json(const std::map<int, int64_t>& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : m) j[std::to_string(k)] = v;
  return j;
}

std::map<int, int64_t> offsets_from(const nlohmann::json& j) {
  std::map<int, int64_t> m;
  for (const auto& [k, v] : j.items()) m[std::stoi(k)] = core::get_integer<int64_t>(v);
  return m;
}

nlohmann::json spectrum_json(const Spectrum& s) {
  return {{"singular_values", s.singular_values}, {"cumulative_energy", s.cumulative_energy}, {"rank90", s.rank90},
          {"rank95", s.rank95}, {"rank99", s.rank99}, {"applicable", s.applicable}};
}

Spectrum spectrum_from(const nlohmann::json& j) {
  Spectrum s;
  s.singular_values = j.at("singular_values").get<std::vector<double>>();
  s.cumulative_energy = j.at("cumulative_energy").get<std::vector<double>>();
  s.rank90 = core::get_integer<int>(j.at("rank90"));
  s.rank95 = core::get_integer<int>(j.at("rank95"));
  s.rank99 = core::get_integer<int>(j.at("rank99"));
  s.applicable = j.value("applicable", true);
  return s;
}

}  // namespace headlab::analysis::kit
