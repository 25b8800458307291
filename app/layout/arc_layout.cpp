#include "app/layout/arc_layout.h"

#include "analysis/head_stats.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace headlab::app {
namespace {

struct Span {
  int lo = 0, hi = 0;
  size_t arc = 0;
  bool same(const Span& o) const { return lo == o.lo && hi == o.hi; }
  // o lies inside this span (shared end points allowed) without being the same span.
  bool holds(const Span& o) const { return o.lo >= lo && o.hi <= hi && !same(o); }
  // The spans interleave: their arcs would cross.
  bool crosses(const Span& o) const { return (lo < o.lo && o.lo < hi && hi < o.hi) || (o.lo < lo && lo < o.hi && o.hi < hi); }
};

}  // namespace

std::vector<int> arc_levels(const std::vector<Arc>& arcs, int words) {
  std::vector<int> levels(arcs.size(), 0);
  std::vector<Span> spans;
  for (size_t i = 0; i < arcs.size(); ++i) {
    const Arc& a = arcs[i];
    if (a.dependent == a.head || a.dependent < 0 || a.head < 0 || a.dependent >= words || a.head >= words) continue;
    spans.push_back({std::min(a.dependent, a.head), std::max(a.dependent, a.head), i});
  }
  // Shorter spans first: everything strictly inside an arc is placed before it.
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.hi - a.lo < b.hi - b.lo; });
  std::vector<Span> placed;
  for (const Span& s : spans) {
    int level = 1;
    for (const Span& p : placed)
      if (s.holds(p)) level = std::max(level, levels[p.arc] + 1);
    for (bool moved = true; moved;) {
      moved = false;
      for (const Span& p : placed)
        if (levels[p.arc] == level && (s.same(p) || s.crosses(p))) {
          ++level;
          moved = true;
        }
    }
    levels[s.arc] = level;
    placed.push_back(s);
  }
  return levels;
}

std::vector<float> word_centres(const std::vector<float>& widths, float spacing) {
  std::vector<float> centres;
  centres.reserve(widths.size());
  float x = 0;
  for (float w : widths) {
    centres.push_back(x + w / 2);
    x += w + spacing;
  }
  return centres;
}

ArcLayout layout_arcs(const std::vector<float>& word_widths, float spacing, const std::vector<Arc>& above,
                      const std::vector<Arc>& below) {
  ArcLayout layout;
  const int words = static_cast<int>(word_widths.size());
  layout.word_x = word_centres(word_widths, spacing);
  for (float w : word_widths) layout.width += w;
  if (words > 1) layout.width += spacing * static_cast<float>(words - 1);
  layout.above_levels = arc_levels(above, words);
  layout.below_levels = arc_levels(below, words);
  for (int l : layout.above_levels) layout.above_max_level = std::max(layout.above_max_level, l);
  for (int l : layout.below_levels) layout.below_max_level = std::max(layout.below_max_level, l);
  return layout;
}

std::vector<Arc> tree_arcs(const std::vector<int>& heads, const std::vector<std::string>& relations) {
  std::vector<Arc> arcs;
  const int words = static_cast<int>(heads.size());
  for (int d = 0; d < words; ++d) {
    const int h = heads[d];
    if (h < 0 || h >= words || h == d) continue;
    arcs.push_back({d, h, size_t(d) < relations.size() ? relations[d] : ""});
  }
  return arcs;
}

std::vector<Arc> argmax_arcs(const std::vector<int>& predicted) {
  std::vector<Arc> arcs;
  const int words = static_cast<int>(predicted.size());
  for (int i = 0; i < words; ++i)
    if (predicted[i] >= 0 && predicted[i] < words && predicted[i] != i) arcs.push_back({i, predicted[i], ""});
  return arcs;
}

std::vector<RelationAccuracy> sentence_relation_accuracy(const std::vector<int>& gold_heads,
                                                         const std::vector<std::string>& relations,
                                                         const std::vector<int>& predicted, ArcDirection direction,
                                                         bool strip_subtypes, const std::vector<bool>& word_has_token) {
  if (relations.size() != gold_heads.size() || predicted.size() != gold_heads.size())
    throw std::invalid_argument("sentence_relation_accuracy: " + std::to_string(gold_heads.size()) + " gold heads, " +
                                std::to_string(relations.size()) + " relations and " +
                                std::to_string(predicted.size()) + " predicted heads; all must be one per word");
  std::map<std::string, RelationAccuracy> by_relation;
  for (const auto& arc : analysis::scored_arcs(gold_heads, relations, strip_subtypes, word_has_token)) {
    RelationAccuracy& r = by_relation[arc.relation];
    r.relation = arc.relation;
    ++r.count;
    const bool found = direction == ArcDirection::DependentToHead ? predicted[size_t(arc.dependent)] == arc.head
                                                                  : predicted[size_t(arc.head)] == arc.dependent;
    if (found) ++r.correct;
  }
  std::vector<RelationAccuracy> out;
  for (auto& [name, r] : by_relation) out.push_back(std::move(r));
  return out;
}

}  // namespace headlab::app
