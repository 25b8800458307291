#include "analysis/composition_figures.h"

#include "analysis/heatmap_figure.h"

#include <cmath>

namespace headlab::analysis {
namespace {

void composition_heatmap(const CompositionTable& t, const std::string& kind, std::vector<std::string>& written,
                         const std::string& folder) {
  if (t.size() < 2) return;
  Heatmap map;
  map.title = kind + "-composition scores (Elhage et al. 2021)";
  map.subtitle = std::string("how much of what each head writes a later head reads through its ") +
                 (kind == "Q" ? "queries" : kind == "K" ? "keys" : "values") + "; 0–1";
  map.row_axis = "sender (writes)";
  map.col_axis = "receiver (reads)";
  auto name = [](size_t l, size_t h) { return "L" + std::to_string(l) + " H" + std::to_string(h); };
  std::vector<std::pair<size_t, size_t>> senders, receivers;
  for (size_t l = 0; l + 1 < t.size(); ++l)
    for (size_t h = 0; h < t[l].size(); ++h) senders.emplace_back(l, h);
  const auto& row0 = t[0][0];
  for (size_t l = 1; l < row0.size(); ++l)
    for (size_t h = 0; h < row0[l].size(); ++h) receivers.emplace_back(l, h);
  for (const auto& [l, h] : senders) map.rows.push_back(name(l, h)), map.row_groups.push_back(int(l));
  for (const auto& [l, h] : receivers) map.cols.push_back(name(l, h)), map.col_groups.push_back(int(l));
  for (const auto& [l1, h1] : senders) {
    std::vector<double> row;
    for (const auto& [l2, h2] : receivers) row.push_back(l2 > l1 ? t[l1][h1][l2][h2] : std::nan(""));
    map.values.push_back(row);
  }
  map.range = std::make_pair(0.0, 1.0);
  std::string file = "composition_" + std::string(1, char(std::tolower(kind[0])));
  write_heatmap(map, folder, file, written);
}

}  // namespace

std::vector<std::string> write_composition_figures(const Composition& composition, const std::string& folder) {
  std::vector<std::string> written;
  if (!composition.q.empty()) composition_heatmap(composition.q, "Q", written, folder);
  if (!composition.k.empty()) composition_heatmap(composition.k, "K", written, folder);
  composition_heatmap(composition.v, "V", written, folder);
  return written;
}

}  // namespace headlab::analysis
