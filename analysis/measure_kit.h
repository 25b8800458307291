// What the measures share (internal to analysis/): shares and best offsets, head_report.csv's cells,
// the Markdown's number formats, and the JSON of offsets, spectra and relation scores.
#pragma once

#include "analysis/dataset.h"
#include "analysis/head_report.h"
#include "analysis/report_columns.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace headlab::analysis::kit {

inline double share(int64_t part, int64_t whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

// The offset holding the most queries; ties go to the smaller |offset|, then the negative one.
inline std::pair<int, int64_t> best_offset(const std::map<int, int64_t>& offsets) {
  int best = 0;
  int64_t best_count = -1;
  for (const auto& [offset, count] : offsets) {
    const bool better = count > best_count ||
                        (count == best_count && (std::abs(offset) < std::abs(best) ||
                                                 (std::abs(offset) == std::abs(best) && offset < best)));
    if (better) {
      best = offset;
      best_count = count;
    }
  }
  return {best, std::max<int64_t>(best_count, 0)};
}

inline std::string signed_offset(int offset) { return (offset > 0 ? "+" : "") + std::to_string(offset); }

inline std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

// ---- head_report.csv cells ----
inline ReportCell integer(int64_t v) {
  ReportCell c;
  c.kind = ReportCell::Kind::integer;
  c.integer = v;
  return c;
}
inline ReportCell real(double v) {
  ReportCell c;
  c.kind = ReportCell::Kind::real;
  c.real = v;
  return c;
}
inline ReportCell text(std::string v) {
  ReportCell c;
  c.kind = ReportCell::Kind::text;
  c.text = std::move(v);
  return c;
}
// ---- HeadEntry::values, the statistics and values of the measures that keep them there ----
inline double stat_of(const HeadEntry& h, const std::string& key) {  // 0 when absent (nothing measured)
  const auto it = h.values.find(key);
  return it == h.values.end() ? 0.0 : it->second;
}
inline std::optional<double> value_of(const HeadEntry& h, const std::string& key) {  // empty when absent
  const auto it = h.values.find(key);
  return it == h.values.end() ? std::nullopt : std::optional<double>(it->second);
}

// Shares and means exist only where something was measured: an empty cell otherwise, not a zero.
inline ReportCell real_if(bool present, double v) { return present ? real(v) : ReportCell{}; }
inline ReportCell integer_if(bool present, int64_t v) { return present ? integer(v) : ReportCell{}; }
inline ReportCell value_cell(const HeadEntry& h, const char* key) {
  const auto v = value_of(h, key);
  return v ? real(*v) : ReportCell{};
}

// ---- Markdown numbers ----
inline std::string percent(double share) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f%%", 100.0 * share);
  return s;
}
inline std::string fixed(double v, int digits) {
  char s[40];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}
inline std::string general(double v) {
  char s[40];
  std::snprintf(s, sizeof s, "%.4g", v);
  return s;
}
inline std::string head_name(const HeadEntry& h) { return "L" + std::to_string(h.layer) + " H" + std::to_string(h.head); }

// A Markdown table: a cell with pipes escaped and line breaks flattened; rows; a header row.
inline std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}
inline std::string md_row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + md_cell(c) + " |";
  return out + "\n";
}
inline std::string md_header(const std::vector<std::string>& names) {
  std::string out = md_row(names) + "|";
  for (size_t i = 0; i < names.size(); ++i) out += " --- |";
  return out + "\n";
}

// The position a sentence's explanations read: its last word token (the top-1 logit there). A
// masked LM's default (the first [MASK]) does not exist in plain sentences, and its last token is [SEP].
int64_t last_word_token(const TokenizedSentence& ts);

// ---- JSON pieces ----
nlohmann::json offsets_json(const std::map<int, int64_t>& offsets);
std::map<int, int64_t> offsets_from(const nlohmann::json& j);
nlohmann::json spectrum_json(const Spectrum& s);
Spectrum spectrum_from(const nlohmann::json& j);

}  // namespace headlab::analysis::kit
