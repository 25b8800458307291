#include "core/stop_tokens.h"

#include "core/json_file.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

namespace headlab::core {

namespace fs = std::filesystem;

namespace {

// The eos_token_id of `file`, when the file is there and names one (null names none).
std::optional<std::vector<int64_t>> eos_of(const fs::path& file, bool hugging_face_only) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  const nlohmann::json j = read_json_file(file.string());
  if (!j.is_object()) throw std::runtime_error(file.string() + ": not a JSON object");
  if (hugging_face_only && j.value("format", "") == "headlab-model") return std::nullopt;
  if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) return std::nullopt;
  const nlohmann::json& v = j["eos_token_id"];
  std::vector<int64_t> ids;
  auto add = [&](const nlohmann::json& id) {
    if (!id.is_number_integer()) throw std::runtime_error(file.string() + ": eos_token_id must be a token id or a list of them");
    ids.push_back(id.get<int64_t>());
  };
  if (v.is_array())
    for (const auto& id : v) add(id);
  else
    add(v);
  return ids;
}

}  // namespace

std::vector<int64_t> generation_stop_ids(const std::string& folder, const Tokenizer* tokenizer, bool encoder_decoder,
                                         int64_t vocab) {
  std::optional<std::vector<int64_t>> named;
  if (!folder.empty()) {
    named = eos_of(fs::path(folder) / "generation_config.json", false);
    if (!named) named = eos_of(fs::path(folder) / "config.json", true);
  }
  std::vector<int64_t> ids;
  if (named) {
    ids = *named;
  } else if (tokenizer) {
    if (auto eos = tokenizer->eos_id()) ids.push_back(*eos);
    if (encoder_decoder)
      if (auto sep = tokenizer->sep_id()) ids.push_back(*sep);
  }
  std::vector<int64_t> kept;
  for (int64_t id : ids)
    if (id >= 0 && id < vocab && std::find(kept.begin(), kept.end(), id) == kept.end()) kept.push_back(id);
  return kept;
}

}  // namespace headlab::core
