// Integers from JSON documents a user hands HeadLab (configs, sessions, reports, scripts). nlohmann's
// get<int>() converts a floating value with a plain cast — undefined behaviour when it is out of
// range (a config saying 2.5e30) — and silently wraps a large integer. get_integer<T> accepts
// integers within T's range only and otherwise throws nlohmann's own type_error / out_of_range, so
// every caller's existing handler names the key.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace headlab::core {

template <class T>
T get_integer(const nlohmann::json& value) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "get_integer reads integer types");
  using limits = std::numeric_limits<T>;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u <= static_cast<uint64_t>(limits::max())) return static_cast<T>(u);
  } else if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();
    if ((!std::is_unsigned_v<T> || i >= 0) && (std::is_unsigned_v<T> || i >= static_cast<int64_t>(limits::min())) &&
        static_cast<uint64_t>(i < 0 ? 0 : i) <= static_cast<uint64_t>(limits::max()))
      return static_cast<T>(i);
  } else {
    throw nlohmann::json::type_error::create(302, std::string("type must be an integer, but is ") + value.type_name() +
                                                      (value.is_number() ? " " + value.dump() : ""),
                                             &value);
  }
  throw nlohmann::json::out_of_range::create(406, "integer " + value.dump() + " is out of range", &value);
}

// Any value a document holds: integers through get_integer, everything else as nlohmann reads it.
template <class T>
T get_value(const nlohmann::json& value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return get_integer<T>(value);
  else return value.get<T>();
}

}  // namespace headlab::core
