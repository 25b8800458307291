// head_report.md: the report as a page for a reader (head_report.csv is analysis/report_csv.cpp).
#include "analysis/head_report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace headlab::analysis {
namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string percent(double share) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f%%", 100.0 * share);
  return s;
}

std::string fixed(double v, int digits) {
  char s[40];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

std::string general(double v) {
  char s[40];
  std::snprintf(s, sizeof s, "%.4g", v);
  return s;
}

std::string signed_offset(int offset) { return (offset > 0 ? "+" : "") + std::to_string(offset); }

// A Markdown table cell: pipes escaped, line breaks flattened.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string row(const std::vector<std::string>& cells) {
  std::string out = "|";
  for (const auto& c : cells) out += " " + cell(c) + " |";
  return out + "\n";
}

std::string table_header(const std::vector<std::string>& names) {
  std::string out = row(names) + "|";
  for (size_t i = 0; i < names.size(); ++i) out += " --- |";
  return out + "\n";
}

std::string head_name(const HeadEntry& h) { return "L" + std::to_string(h.layer) + " H" + std::to_string(h.head); }

// One line per role: which head, which role, and the number behind it.
std::vector<std::string> role_lines(const HeadReport& report) {
  std::vector<std::string> lines;
  for (const auto& h : report.heads) {
    const std::string who = "- " + head_name(h) + " (" + h.stack + "): ";
    if (h.positional)
      lines.push_back(who + "positional(" + signed_offset(h.positional_offset) + ") — " + percent(h.positional_share) +
                      " of queries");
    if (h.rare)
      lines.push_back(who + "rare-word — " + percent(h.rare_share) + " of " + std::to_string(h.rare_queries) +
                      " queries on the sentence's rarest token");
    for (const auto& sc : h.syntactic)
      if (sc.is_role)
        lines.push_back(who + "syntactic(" + sc.relation + " " + sc.direction + ") — " + percent(sc.accuracy) +
                        " of " + std::to_string(sc.count) + " arcs vs baseline " + percent(sc.baseline) +
                        " (offset " + signed_offset(sc.baseline_offset) + ")");
  }
  return lines;
}

}  // namespace

std::string to_markdown(const HeadReport& report) {
  const auto& s = report.settings;
  std::ostringstream md;
  md << "# Head report: " << (report.model.empty() ? "(unnamed model)" : report.model) << "\n\n";
  if (report.partial)
    md << "**Partial report:** the measurement stopped before the end of the data; every number below covers only "
          "the sentences measured.\n\n";

  md << "## Roles\n\n";
  const auto roles = role_lines(report);
  if (roles.empty())
    md << "No head reaches a role threshold.\n";
  for (const auto& line : roles) md << line << "\n";
  md << "\n";

  md << "## Data\n\n";
  md << "- model: " << report.model << "\n";
  md << "- files: " << (report.files.empty() ? "(none)" : join(report.files, ", ")) << "\n";
  md << "- sentences: " << report.sentences << ", tokens: " << report.tokens << ", skipped: " << report.skipped;
  if (!report.skipped_reasons.empty()) {
    std::vector<std::string> reasons;
    for (const auto& [why, n] : report.skipped_reasons) reasons.push_back(why + ": " + std::to_string(n));
    md << " (" << join(reasons, "; ") << ")";
  }
  md << "\n";
  if (s.has("syntactic") && report.skipped_arcs > 0)
    md << "- arcs not scored: " << report.skipped_arcs
       << " (they touch a word with no token of its own: a word inside a token that starts in the word before it)\n";
  if (s.has("rare")) {
    md << "- frequency source: " << (s.frequency_source.empty() ? "(none)" : s.frequency_source);
    if (!s.frequency_files.empty()) md << " (" << join(s.frequency_files, ", ") << ")";
    md << "\n";
  }
  if (s.limit > 0) md << "- limit: first " << s.limit << " sentences\n";
  if (s.shard_count > 1) md << "- shard " << s.shard_index << " of " << s.shard_count << "\n";
  md << "- partial: " << (report.partial ? "yes — stopped before the end" : "no") << "\n";
  md << "- measures: " << (s.metrics.empty() ? "(none)" : join(s.metrics, ", ")) << "\n\n";

  md << "## Thresholds\n\n";
  if (s.has("positional"))
    md << "- positional head: ≥ " << percent(s.positional_threshold)
       << " of queries put their maximum attention at one relative offset (Voita et al. 2019)\n";
  if (s.has("rare"))
    md << "- rare-word head: > " << percent(s.rare_threshold)
       << " of queries put their maximum attention on the sentence's rarest token, over sentences whose rarest "
          "token's frequency rank is > "
       << s.rare_min_rank << "; this threshold is HeadLab's (Voita et al. 2019 give none)\n";
  if (s.has("syntactic"))
    md << "- syntactic head: accuracy ≥ baseline + " << fixed(100.0 * s.syntactic_margin, 0)
       << " points; baseline: the best fixed offset −" << s.baseline_max_offset << "…+" << s.baseline_max_offset
       << " on the same arcs; relations scored: " << join(s.always_relations, ", ") << " always, others with ≥ "
       << s.min_relation_count << " arcs; subtypes " << (s.strip_subtypes ? "stripped (nsubj:pass → nsubj)" : "kept")
       << "\n";
  if (s.has("lrp")) md << "- LRP conservation tolerance: residual ≤ " << general(s.lrp_tolerance) << " · |f|\n";
  md << "\n";

  // Per-head measures.
  md << "## Per-head measures\n\n";
  {
    std::vector<std::string> names{"stack", "layer", "head"};
    if (s.has("confidence")) names.insert(names.end(), {"confidence", "confidence (all keys)"});
    if (s.has("positional")) names.insert(names.end(), {"top offset", "share at offset"});
    if (s.has("rare")) names.insert(names.end(), {"rare share", "rare share (two rarest)"});
    if (s.has("syntactic")) names.insert(names.end(), {"best relation", "accuracy", "baseline"});
    if (s.has("lrp")) names.insert(names.end(), {"LRP raw", "LRP normalised"});
    if (s.has("importance")) names.push_back("importance");
    names.push_back("roles");
    md << table_header(names);
    for (const auto& h : report.heads) {
      std::vector<std::string> c{h.stack, std::to_string(h.layer), std::to_string(h.head)};
      const bool q = h.queries > 0;
      if (s.has("confidence")) {
        c.push_back(q ? fixed(h.confidence, 3) : "");
        c.push_back(q ? fixed(h.confidence_all_keys, 3) : "");
      }
      if (s.has("positional")) {
        c.push_back(q ? signed_offset(h.positional_offset) : "");
        c.push_back(q ? percent(h.positional_share) : "");
      }
      if (s.has("rare")) {
        c.push_back(h.rare_queries > 0 ? percent(h.rare_share) : "");
        c.push_back(h.rare_queries > 0 ? percent(h.rare_share_two) : "");
      }
      if (s.has("syntactic")) {
        const auto& b = h.best_relation;
        c.push_back(b ? b->relation + " " + b->direction : "");
        c.push_back(b ? percent(b->accuracy) : "");
        c.push_back(b ? percent(b->baseline) : "");
      }
      if (s.has("lrp")) {
        c.push_back(h.lrp_sentences > 0 ? general(h.lrp_raw) : "");
        c.push_back(h.lrp_sentences > 0 ? fixed(h.lrp_normalized, 3) : "");
      }
      if (s.has("importance")) c.push_back(h.importance_sentences > 0 ? general(h.importance) : "");
      c.push_back(join(h.roles, ", "));
      md << row(c);
    }
    md << "\n";
  }

  // Syntactic heads against their baselines: per relation and direction, the best head.
  if (s.has("syntactic")) {
    md << "## Syntactic heads against baselines\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& best : best_heads_per_relation(report)) {
      const SyntacticScore& sc = *best.score;
      rows.push_back({best.stack, sc.relation, sc.direction, head_name(*best.head), percent(sc.accuracy),
                      percent(sc.baseline), signed_offset(sc.baseline_offset), std::to_string(sc.count),
                      sc.is_role ? "yes" : "no"});
    }
    if (rows.empty()) {
      md << "No relation was scored.\n\n";
    } else {
      md << table_header({"stack", "relation", "direction", "best head", "accuracy", "baseline", "baseline offset",
                          "count", "syntactic head"});
      for (const auto& r : rows) md << row(r);
      md << "\n";
    }
  }

  if (s.has("spectra")) {
    md << "## Key-query spectra\n\n";
    md << "Energy ranks: the smallest k whose singular values hold 90 / 95 / 99% of Σσ² of W_Q W_Kᵀ.\n\n";
    md << "Per head:\n\n";
    md << table_header({"stack", "layer", "head", "rank90", "rank95", "rank99", "singular values"});
    for (const auto& h : report.heads) {
      if (!h.spectrum) continue;
      if (!h.spectrum->applicable) {
        md << row({h.stack, std::to_string(h.layer), std::to_string(h.head), "", "", "", "no bilinear form"});
        continue;
      }
      md << row({h.stack, std::to_string(h.layer), std::to_string(h.head), std::to_string(h.spectrum->rank90),
                 std::to_string(h.spectrum->rank95), std::to_string(h.spectrum->rank99),
                 std::to_string(h.spectrum->singular_values.size())});
    }
    md << "\n";
    if (!report.layers.empty()) {
      md << "Per layer (W_Q, W_K and W_Q W_Kᵀ over the layer's heads; ranks 90 / 95 / 99):\n\n";
      md << table_header({"stack", "layer", "query", "key", "product"});
      auto ranks = [](const Spectrum& sp) {
        return std::to_string(sp.rank90) + " / " + std::to_string(sp.rank95) + " / " + std::to_string(sp.rank99);
      };
      for (const auto& l : report.layers)
        md << row({l.stack, std::to_string(l.layer), ranks(l.query), ranks(l.key), ranks(l.product)});
      md << "\n";
    }
  }

  if (s.has("lrp")) {
    md << "## LRP conservation\n\n";
    md << "- max relative residual: " << general(report.lrp_max_relative_residual) << "\n";
    md << "- sentences over tolerance (" << general(s.lrp_tolerance) << " · |f|): " << report.lrp_sentences_over_tolerance
       << "\n";
    if (!report.lrp_failures.empty()) md << "- examples: " << join(report.lrp_failures, ", ") << "\n";
    md << "\n";
  }

  md << "## Notes\n\n";
  if (report.notes.empty()) md << "None.\n";
  for (const auto& n : report.notes) md << "- " << n << "\n";
  return md.str();
}

}  // namespace headlab::analysis
