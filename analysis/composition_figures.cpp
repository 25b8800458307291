#include "analysis/composition_figures.h"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace headlab::analysis {

Heatmap composition_heatmap(const Composition& composition, const std::string& kind, const std::string& model) {
  if (kind != "Q" && kind != "K" && kind != "V") throw std::invalid_argument("no " + kind + "-composition (Q, K or V)");
  const CompositionTable& t = kind == "Q" ? composition.q : kind == "K" ? composition.k : composition.v;
  Heatmap map;
  map.title = kind + "-composition scores (Elhage et al. 2021)";
  map.subtitle = std::string("how much of what each head writes a later head reads through its ") +
                 (kind == "Q" ? "queries" : kind == "K" ? "keys" : "values") + "; 0–1";
  if (!model.empty()) map.notes.push_back("model: " + model);
  map.row_axis = "sender (writes)";
  map.col_axis = "receiver (reads)";
  map.range = std::make_pair(0.0, 1.0);
  if (t.empty() || t[0].empty()) return map;
  auto name = [](size_t l, size_t h) { return "L" + std::to_string(l) + " H" + std::to_string(h); };
  // Senders: every head of layers 0 … L−2; receivers: every head of layers 1 … L−1.
  std::vector<std::pair<size_t, size_t>> senders, receivers;
  for (size_t l = 0; l + 1 < t.size(); ++l)
    for (size_t h = 0; h < t[l].size(); ++h) senders.emplace_back(l, h);
  const auto& row0 = t[0][0];
  for (size_t l = 1; l < row0.size(); ++l)
    for (size_t h = 0; h < row0[l].size(); ++h) receivers.emplace_back(l, h);
  auto no_qk = [&](size_t l, size_t h) {
    return kind != "V" && l < composition.qk_zero.size() && h < composition.qk_zero[l].size() && composition.qk_zero[l][h];
  };
  for (const auto& [l, h] : senders) map.rows.push_back(name(l, h)), map.row_groups.push_back(int(l));
  bool any_grey = false;
  for (const auto& [l, h] : receivers) {
    map.cols.push_back(name(l, h)), map.col_groups.push_back(int(l));
    any_grey = any_grey || no_qk(l, h);
  }
  for (const auto& [l1, h1] : senders) {
    std::vector<double> row;
    for (const auto& [l2, h2] : receivers) row.push_back(l2 > l1 && !no_qk(l2, h2) ? t[l1][h1][l2][h2] : std::nan(""));
    map.values.push_back(row);
  }
  if (any_grey)
    map.notes.push_back("grey columns: receivers whose QK circuit is zero or negligible; nothing composes into their " +
                        std::string(kind == "Q" ? "queries" : "keys") + " (the score would rate rounding noise)");
  return map;
}

std::vector<std::string> write_composition_figures(const Composition& composition, const std::string& model,
                                                   const std::string& folder) {
  std::vector<std::string> written;
  for (const char* kind : {"Q", "K", "V"}) {
    const CompositionTable& t = kind[0] == 'Q' ? composition.q : kind[0] == 'K' ? composition.k : composition.v;
    if (t.size() < 2) continue;  // a kind without scores, or one layer: nothing composes
    const std::string file = std::string("composition_") + char(std::tolower(kind[0]));
    write_heatmap(composition_heatmap(composition, kind, model), folder, file, written);
  }
  return written;
}

}  // namespace headlab::analysis
