#include "analysis/head_evidence.h"

#include <algorithm>

namespace headlab::analysis {

std::vector<OffsetShare> offset_histogram(const HeadEntry& head, int max_abs_offset) {
  std::vector<OffsetShare> bars;
  if (head.queries <= 0) return bars;
  OffsetShare below{-(max_abs_offset + 1), 0, 0, true}, above{max_abs_offset + 1, 0, 0, true};
  for (const auto& [offset, queries] : head.offsets) {  // std::map: ascending offsets
    if (max_abs_offset > 0 && offset < -max_abs_offset) below.queries += queries;
    else if (max_abs_offset > 0 && offset > max_abs_offset) above.queries += queries;
    else bars.push_back({offset, queries, 0, false});
  }
  if (below.queries > 0) bars.insert(bars.begin(), below);
  if (above.queries > 0) bars.push_back(above);
  for (auto& bar : bars) bar.share = double(bar.queries) / double(head.queries);
  return bars;
}

std::vector<RelationBar> relation_bars(const HeadEntry& head, bool by_gain) {
  std::vector<RelationBar> bars;
  for (const auto& s : head.syntactic) {
    RelationBar bar;
    bar.relation = s.relation;
    bar.direction = s.direction;
    bar.label = s.relation + (s.direction == "dependent->head" ? " d\u2192h" : " h\u2192d");
    bar.accuracy = s.accuracy;
    bar.baseline = s.baseline;
    bar.baseline_offset = s.baseline_offset;
    bar.count = s.count;
    bar.is_role = s.is_role;
    bars.push_back(std::move(bar));
  }
  if (by_gain)
    std::stable_sort(bars.begin(), bars.end(), [](const RelationBar& a, const RelationBar& b) { return a.gain() > b.gain(); });
  return bars;
}

}  // namespace headlab::analysis
