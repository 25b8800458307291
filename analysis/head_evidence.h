// A head's evidence as data, from one head of a report: where its maximum attention goes (the
// argmax-offset histogram behind the positional measure, Voita et al. 2019 §5.1) and how often its
// word-level argmax finds each relation's other word against the best fixed offset (Clark et al.
// 2019 §4). The measures' evidence (the Head detail view, its figure) is drawn from these.
#pragma once

#include "analysis/head_report.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::analysis {

// One bar of the offset histogram.
struct OffsetShare {
  int offset = 0;        // key − query of the maximum attention
  int64_t queries = 0;   // non-special queries whose maximum is there
  double share = 0;      // queries / the head's queries
  bool beyond = false;   // the bar gathers every offset past ±max_abs_offset on its side
};

// The head's argmax offsets as shares of its queries, ordered by offset (HeadEntry::offsets). With
// max_abs_offset > 0, offsets further out are gathered into one bar at each end (offset
// ±(max_abs_offset + 1), `beyond` set) so long sentences do not stretch the axis. Empty for a head
// with no queries.
std::vector<OffsetShare> offset_histogram(const HeadEntry& head, int max_abs_offset = 0);

// One relation and direction of the head beside its baseline.
struct RelationBar {
  std::string relation;   // "nsubj"
  std::string direction;  // "dependent->head" or "head->dependent"
  std::string label;      // "nsubj d→h"
  double accuracy = 0;    // share of arcs the head's word-level argmax gets right
  double baseline = 0;    // share the best fixed offset gets right on the same arcs
  int baseline_offset = 0;
  int64_t count = 0;      // arcs
  bool is_role = false;   // accuracy ≥ baseline + the report's margin
  double gain() const { return accuracy - baseline; }
};

// Every scored relation and direction of the head (HeadEntry::syntactic): in the report's order, or
// by accuracy − baseline, largest first (ties in the report's order).
std::vector<RelationBar> relation_bars(const HeadEntry& head, bool by_gain = false);

}  // namespace headlab::analysis
