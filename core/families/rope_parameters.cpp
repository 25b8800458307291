#include "core/families/rope_parameters.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

// A number of a rope object, or `fallback` when absent or null.
double rope_number(const HfConfig& c, const json& object, const std::string& key, const char* name, double fallback) {
  if (!object.contains(name) || object[name].is_null()) return fallback;
  if (!object[name].is_number()) c.fail("'" + key + "." + name + "' must be a number, got " + object[name].dump());
  return object[name].get<double>();
}

double required_number(const HfConfig& c, const json& object, const std::string& key, const char* name) {
  if (!object.contains(name) || object[name].is_null())
    c.fail("'" + key + "' of type " + object.value("rope_type", object.value("type", std::string("?"))) + " needs '" +
           name + "' (" + object.dump() + ")");
  return rope_number(c, object, key, name, 0.0);
}

// A count of positions: a whole number from 1 to 2³⁰ (checked before the cast, which would be
// undefined for a value out of int's range).
int positions_of(const HfConfig& c, const std::string& key, double value) {
  if (!(value >= 1 && value <= double(1 << 30)) || value != std::floor(value))
    c.fail("'" + key + ".original_max_position_embeddings' must be a whole number from 1 to 2^30, got " +
           json(value).dump());
  return static_cast<int>(value);
}

}  // namespace

RopeObject read_rope_object(const HfConfig& c, const json& object, const std::string& key, int max_positions) {
  RopeObject out;
  if (!object.is_object()) c.fail("'" + key + "' must be an object, got " + object.dump());
  std::string type = "default";
  for (const char* type_key : {"rope_type", "type"}) {
    if (!object.contains(type_key)) continue;
    if (!object[type_key].is_string()) c.fail("'" + key + "." + type_key + "' must be a string, got " + object[type_key].dump());
    type = object[type_key].get<std::string>();
  }
  RopeScaling& r = out.scaling;
  try {
    r.kind = rope_scaling_kind_from_name(type);
  } catch (const std::invalid_argument&) {
    c.fail(key + " type '" + type + "' is not supported (HeadLab implements the rope types default, linear, dynamic, "
           "llama3 and yarn; " + key + " " + object.dump() + ")");
  }
  std::vector<std::string> known = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  switch (r.kind) {
    case RopeScalingKind::None: break;
    case RopeScalingKind::Linear: known.insert(known.end(), {"factor"}); break;
    // transformers' dynamic NTK grows the base past max_position_embeddings; it does not read
    // original_max_position_embeddings, so neither does HeadLab.
    case RopeScalingKind::Dynamic: known.insert(known.end(), {"factor", "original_max_position_embeddings"}); break;
    case RopeScalingKind::Llama3:
      known.insert(known.end(), {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
      break;
    case RopeScalingKind::Yarn:
      known.insert(known.end(), {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast",
                                 "beta_slow", "mscale", "mscale_all_dim", "truncate"});
      break;
  }
  for (const auto& [name, value] : object.items())
    if (std::find(known.begin(), known.end(), name) == known.end())
      c.fail("'" + key + "." + name + "' is not supported (rope type " + type + " reads only " + [&] {
               std::string list;
               for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
               return list;
             }() + "; " + key + " " + object.dump() + ")");
  if (object.contains("rope_theta")) {
    if (!object["rope_theta"].is_number()) c.fail("'" + key + ".rope_theta' must be a number, got " + object["rope_theta"].dump());
    out.theta = object["rope_theta"].get<double>();
  }
  if (object.contains("partial_rotary_factor") && !object["partial_rotary_factor"].is_null())
    out.rotary_fraction = rope_number(c, object, key, "partial_rotary_factor", 1.0);
  switch (r.kind) {
    case RopeScalingKind::None: break;
    case RopeScalingKind::Linear:
    case RopeScalingKind::Dynamic: r.factor = required_number(c, object, key, "factor"); break;
    case RopeScalingKind::Llama3:
      r.factor = required_number(c, object, key, "factor");
      r.low_freq_factor = required_number(c, object, key, "low_freq_factor");
      r.high_freq_factor = required_number(c, object, key, "high_freq_factor");
      r.original_max_positions = positions_of(c, key, required_number(c, object, key, "original_max_position_embeddings"));
      break;
    case RopeScalingKind::Yarn: {
      // As the current transformers reads it: original_max_position_embeddings defaults to
      // max_position_embeddings, and the factor, when absent, is their ratio. (transformers 4.4x–4.5x
      // replaced a given factor by that ratio whenever original_max_position_embeddings was given.)
      r.original_max_positions = positions_of(
          c, key, rope_number(c, object, key, "original_max_position_embeddings", static_cast<double>(max_positions)));
      r.factor = rope_number(c, object, key, "factor", double(max_positions) / std::max(1, r.original_max_positions));
      // `or` in transformers: 0 or null means the paper's default.
      const double fast = rope_number(c, object, key, "beta_fast", 0.0), slow = rope_number(c, object, key, "beta_slow", 0.0);
      r.beta_fast = fast != 0 ? fast : 32.0;
      r.beta_slow = slow != 0 ? slow : 1.0;
      if (object.contains("truncate") && !object["truncate"].is_null()) {
        if (!object["truncate"].is_boolean()) c.fail("'" + key + ".truncate' must be true or false, got " + object["truncate"].dump());
        r.truncate = object["truncate"].get<bool>();
      }
      // The attention factor: given, or from DeepSeek's mscale pair, or YaRN's 0.1·ln(s) + 1.
      const double mscale = rope_number(c, object, key, "mscale", 0.0);
      const double mscale_all_dim = rope_number(c, object, key, "mscale_all_dim", 0.0);
      if (object.contains("attention_factor") && !object["attention_factor"].is_null())
        r.attention_factor = rope_number(c, object, key, "attention_factor", 1.0);
      else if (mscale != 0 && mscale_all_dim != 0)
        r.attention_factor = yarn_mscale(r.factor, mscale) / yarn_mscale(r.factor, mscale_all_dim);
      else
        r.attention_factor = yarn_mscale(r.factor, 1.0);
      break;
    }
  }
  return out;
}

RopeSettings read_rope(const HfConfig& c, int max_positions, double default_theta, double default_fraction) {
  RopeSettings rope;
  rope.theta = c.number("rope_theta", default_theta);
  rope.rotary_fraction = c.number("partial_rotary_factor", default_fraction);
  const bool top_level_theta = c.find("rope_theta") != nullptr;
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const json* value = c.find(key);
    if (!value) continue;
    if (!value->is_object()) c.fail(std::string("'") + key + "' must be an object, got " + value->dump());
    // transformers 5 keys the parameters by layer type when layers differ ({"full_attention": {…},
    // "sliding_attention": {…}}); one RoPE for every layer means every entry must agree.
    const bool per_layer_type = !value->empty() && std::all_of(value->begin(), value->end(),
                                                               [](const json& v) { return v.is_object(); });
    std::vector<std::pair<std::string, json>> objects;
    if (per_layer_type) {
      for (const auto& [type, object] : value->items()) objects.emplace_back(std::string(key) + "." + type, object);
    } else {
      objects.emplace_back(key, *value);
    }
    std::optional<RopeSettings> first;
    for (const auto& [where, object] : objects) {
      const RopeObject read = read_rope_object(c, object, where, max_positions);
      RopeSettings one = rope;
      const bool theta_seen = read.theta.has_value();
      if (read.theta) one.theta = *read.theta;
      if (read.rotary_fraction) one.rotary_fraction = *read.rotary_fraction;
      one.scaling = read.scaling;
      if (theta_seen && top_level_theta && one.theta != c.number("rope_theta", 0.0))
        c.fail("rope_theta " + json(c.number("rope_theta", 0.0)).dump() + " and '" + where + ".rope_theta' " +
               json(one.theta).dump() + " disagree");
      if (first && (first->theta != one.theta || first->rotary_fraction != one.rotary_fraction ||
                    first->scaling != one.scaling))
        c.fail("'" + std::string(key) + "' gives a different RoPE per layer type (" + value->dump() +
               "); HeadLab runs one RoPE for every layer of this family");
      first = one;
      rope = one;
    }
  }
  if (!(rope.theta > 0) || !std::isfinite(rope.theta)) c.fail("rope_theta must be a positive number, got " + json(rope.theta).dump());
  return rope;
}

double yarn_mscale(double factor, double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; }

}  // namespace headlab::core::hf
