// A small hand-made head report for the head table and figure tests: 2 layers × 3 heads of one
// encoder, 100 queries each (L1 H2: none), with the nsubj arcs that make L1 H0 syntactic
// (dependent->head 80% against a 40% baseline). Callers add what their measures need and finalize.
#pragma once

#include "analysis/head_report.h"

#include <map>
#include <string>
#include <vector>

namespace headlab::test {

inline analysis::HeadReport sample_report(const std::vector<std::string>& metrics,
                                          const std::map<int, int64_t> (&offsets)[6], const double (&confidence)[6]) {
  analysis::HeadReport r;
  r.model = "sample";
  r.sentences = 10;
  r.tree_sentences = 10;
  r.settings.metrics = metrics;
  for (int i = 0; i < 6; ++i) {
    analysis::HeadEntry e;
    e.stack = headlab::core::Stack::Encoder;
    e.layer = i / 3;
    e.head = i % 3;
    e.offsets = offsets[i];
    e.queries = i == 5 ? 0 : 100;
    e.confidence_sum = e.confidence_all_keys_sum = confidence[i];
    r.heads.push_back(e);
  }
  analysis::RelationStats nsubj;
  nsubj.count = 200;
  nsubj.baseline_hits = {{-1, 80}, {1, 20}};
  nsubj.dependent_to_head = {20, 40, 60, 160, 90, 0};
  nsubj.head_to_dependent = {10, 10, 90, 10, 70, 0};
  r.relations[headlab::core::Stack::Encoder]["nsubj"] = nsubj;
  r.finalize();
  return r;
}

}  // namespace headlab::test
