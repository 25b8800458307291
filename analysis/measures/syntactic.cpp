// Syntactic (Clark et al. 2019 §4; Voita et al. 2019 §5.2): on word-level maps, per relation and
// direction, the share of gold arcs the head's word-level argmax gets right, against the best fixed
// offset −5…+5 on the same arcs; a syntactic head when ≥ baseline + 10 points.
#include "analysis/dataset.h"
#include "analysis/head_evidence.h"
#include "analysis/head_stats.h"
#include "analysis/measure.h"
#include "analysis/measure_kit.h"
#include "core/json_integer.h"

#include <torch/torch.h>

#include <algorithm>

namespace headlab::analysis {
namespace {

nlohmann::json score_json(const SyntacticScore& s) {
  return {{"relation", s.relation}, {"direction", s.direction}, {"accuracy", s.accuracy},
          {"baseline", s.baseline}, {"baseline_offset", s.baseline_offset}, {"count", s.count},
          {"is_role", s.is_role}};
}

bool has_syntactic_role(const HeadEntry& h) {
  return std::any_of(h.syntactic.begin(), h.syntactic.end(), [](const SyntacticScore& s) { return s.is_role; });
}

std::string short_direction(const std::string& direction) { return direction == "dependent->head" ? "d→h" : "h→d"; }

class SyntacticMeasure : public Measure {
 public:
  const char* name() const override { return "syntactic"; }
  const char* definition() const override {
    return "Clark et al. 2019 §4: word-level maps; per relation (nsubj, obj, amod, advmod always, and every relation "
           "with ≥ 100 arcs) and direction, the accuracy of the head's argmax against the best fixed offset −5…+5 on "
           "the same arcs; syntactic when ≥ baseline + 10 points";
  }
  bool reads_maps() const override { return true; }

  // The sentence's gold arcs, less those touching a word with no token of its own (counted).
  void prepare(HeadReport& report, SentenceWork& work) override {
    if (!work.sentence.has_tree()) return;
    ++report.tree_sentences;
    work.layout.arcs = scored_arcs(work.sentence.heads, work.sentence.relations, report.settings.strip_subtypes,
                                   words_with_tokens(work.tokens.word_of, work.tokens.words), &report.skipped_arcs);
  }

  void add_layer(HeadReport& report, core::Stack stack, int layer, int heads_per_layer, const at::Tensor& maps,
                 const RowMaxima& /*rows*/, const SentenceLayout& layout) override {
    if (layout.arcs.empty()) return;
    const auto predicted = word_argmax(word_level_maps(maps, layout));
    auto& relations = report.relations[stack];
    for (int64_t h = 0; h < static_cast<int64_t>(predicted.size()); ++h) {
      const size_t index = size_t(layer) * size_t(heads_per_layer) + size_t(h);
      for (const auto& arc : layout.arcs) {
        RelationStats& r = relations[arc.relation];
        if (r.dependent_to_head.size() <= index) {
          r.dependent_to_head.resize(index + 1, 0);
          r.head_to_dependent.resize(index + 1, 0);
        }
        if (predicted[size_t(h)][size_t(arc.dependent)] == arc.head) ++r.dependent_to_head[index];
        if (predicted[size_t(h)][size_t(arc.head)] == arc.dependent) ++r.head_to_dependent[index];
      }
    }
  }

  // The arcs' counts and the fixed-offset baselines: once per sentence and stack.
  void add_stack(HeadReport& report, core::Stack stack, int heads_in_stack, const SentenceLayout& layout) override {
    const int max_offset = report.settings.baseline_max_offset;
    auto& relations = report.relations[stack];
    for (const auto& arc : layout.arcs) {
      RelationStats& r = relations[arc.relation];
      if (static_cast<int>(r.dependent_to_head.size()) < heads_in_stack) {
        r.dependent_to_head.resize(heads_in_stack, 0);
        r.head_to_dependent.resize(heads_in_stack, 0);
      }
      ++r.count;
      // The baseline from the dependent: offset head − dependent predicts the head when it is within
      // −max…+max (never 0: a word is not its own head).
      const int offset = arc.head - arc.dependent;
      if (offset != 0 && std::abs(offset) <= max_offset) ++r.baseline_hits[offset];
    }
  }

  void finalize(HeadReport& report) const override {
    const auto& s = report.settings;
    // Relations scored per stack: the always-scored ones (when seen) and those with enough arcs.
    std::map<core::Stack, std::vector<std::string>> scored;
    for (const auto& [stack, relations_of_stack] : report.relations)
      for (const auto& [name, stats] : relations_of_stack) {
        const bool always = std::count(s.always_relations.begin(), s.always_relations.end(), name) > 0;
        if (stats.count > 0 && (always || stats.count >= s.min_relation_count)) scored[stack].push_back(name);
      }
    const std::string no_trees = "syntactic: the data has no dependency trees (give CoNLL-U files); not measured";
    auto& notes = report.notes;
    notes.erase(std::remove(notes.begin(), notes.end(), no_trees), notes.end());
    if (s.has(name()) && report.tree_sentences == 0) notes.push_back(no_trees);
    // Heads are indexed within their stack as layer · heads + head.
    std::map<core::Stack, int> heads_per_layer;
    for (const auto& h : report.heads) heads_per_layer[h.stack] = std::max(heads_per_layer[h.stack], h.head + 1);
    for (auto& h : report.heads) {
      h.syntactic.clear();
      h.best_relation.reset();
      const size_t index = size_t(h.layer) * size_t(heads_per_layer[h.stack]) + size_t(h.head);
      auto rel_stack = report.relations.find(h.stack);
      if (s.has(name()) && rel_stack != report.relations.end())
        for (const auto& relation : scored[h.stack]) {
          const RelationStats& r = rel_stack->second.at(relation);
          const auto [base_offset, base_hits] = kit::best_offset(r.baseline_hits);
          for (int dir = 0; dir < 2; ++dir) {
            const auto& hits = dir == 0 ? r.dependent_to_head : r.head_to_dependent;
            SyntacticScore score;
            score.relation = relation;
            score.direction = dir == 0 ? "dependent->head" : "head->dependent";
            score.count = r.count;
            score.accuracy = index < hits.size() ? kit::share(hits[index], r.count) : 0.0;
            // One fixed offset per relation serves both directions (the same arcs, read from either
            // end), as Clark et al.'s baseline is defined: the dependent's offset to its head, or back.
            score.baseline = kit::share(base_hits, r.count);
            score.baseline_offset = dir == 0 ? base_offset : -base_offset;
            score.is_role = score.accuracy >= score.baseline + s.syntactic_margin - 1e-12;
            if (!h.best_relation ||
                score.accuracy - score.baseline > h.best_relation->accuracy - h.best_relation->baseline)
              h.best_relation = score;
            h.syntactic.push_back(score);
          }
        }
      for (const auto& score : h.syntactic)
        if (score.is_role) h.roles.push_back("syntactic(" + score.relation + " " + score.direction + ")");
    }
  }

  void merge(HeadReport& into, const HeadReport& other) const override {
    for (const auto& [stack, rels] : other.relations)
      for (const auto& [name, st] : rels) {
        RelationStats& r = into.relations[stack][name];
        r.count += st.count;
        for (const auto& [k, v] : st.baseline_hits) r.baseline_hits[k] += v;
        auto add = [](std::vector<int64_t>& x, const std::vector<int64_t>& y) {
          if (x.size() < y.size()) x.resize(y.size(), 0);
          for (size_t i = 0; i < y.size(); ++i) x[i] += y[i];
        };
        add(r.dependent_to_head, st.dependent_to_head);
        add(r.head_to_dependent, st.head_to_dependent);
      }
  }

  void write_values(const HeadReport& report, const HeadEntry& h, nlohmann::json& entry) const override {
    if (!report.settings.has(name())) return;
    entry["syntactic"] = nlohmann::json::array();
    for (const auto& score : h.syntactic) entry["syntactic"].push_back(score_json(score));
    entry["best_relation"] = h.best_relation ? score_json(*h.best_relation) : nlohmann::json(nullptr);
  }

  void write_report(const HeadReport& report, nlohmann::json& out) const override {
    nlohmann::json relations = nlohmann::json::object();
    for (const auto& [stack, rels] : report.relations)
      for (const auto& [name, st] : rels)
        relations[core::stack_name(stack)][name] = {{"count", st.count}, {"baseline_hits", kit::offsets_json(st.baseline_hits)},
                                  {"dependent_to_head", st.dependent_to_head},
                                  {"head_to_dependent", st.head_to_dependent}};
    out["relations"] = relations;
  }

  void read_report(const nlohmann::json& in, HeadReport& report) const override {
    for (const auto& [stack, rels] : in.at("relations").items())
      for (const auto& [name, st] : rels.items()) {
        RelationStats rs;
        rs.count = core::get_integer<int64_t>(st.at("count"));
        rs.baseline_hits = kit::offsets_from(st.at("baseline_hits"));
        rs.dependent_to_head = st.at("dependent_to_head").get<std::vector<int64_t>>();
        rs.head_to_dependent = st.at("head_to_dependent").get<std::vector<int64_t>>();
        report.relations[core::stack_from_name(stack)][name] = std::move(rs);
      }
  }

  std::vector<ReportColumn> columns() const override {
    using H = const HeadEntry&;
    return {{"best_relation", "syntactic", false, false,
             [](H h) { return h.best_relation ? kit::text(h.best_relation->relation) : ReportCell{}; }},
            {"best_relation_direction", "syntactic", false, false,
             [](H h) { return h.best_relation ? kit::text(h.best_relation->direction) : ReportCell{}; }},
            {"best_relation_accuracy", "syntactic", true, false,
             [](H h) { return h.best_relation ? kit::real(h.best_relation->accuracy) : ReportCell{}; }, 0, 1},
            {"best_relation_baseline", "syntactic", true, false,
             [](H h) { return h.best_relation ? kit::real(h.best_relation->baseline) : ReportCell{}; }, 0, 1},
            {"syntactic", "syntactic", true, false, [](H h) { return kit::integer(has_syntactic_role(h) ? 1 : 0); }, 0, 1}};
  }

  std::vector<std::string> markdown_data(const HeadReport& report) const override {
    if (report.skipped_arcs <= 0) return {};
    return {"- arcs not scored: " + std::to_string(report.skipped_arcs) +
            " (they touch a word with no token of its own: a word inside a token that starts in the word before it)"};
  }
  std::vector<std::string> markdown_thresholds(const ReportSettings& s) const override {
    return {"- syntactic head: accuracy ≥ baseline + " + kit::fixed(100.0 * s.syntactic_margin, 0) +
            " points; baseline: the best fixed offset −" + std::to_string(s.baseline_max_offset) + "…+" +
            std::to_string(s.baseline_max_offset) + " on the same arcs; relations scored: " +
            kit::join(s.always_relations, ", ") + " always, others with ≥ " + std::to_string(s.min_relation_count) +
            " arcs; subtypes " + (s.strip_subtypes ? "stripped (nsubj:pass → nsubj)" : "kept")};
  }
  std::vector<std::string> markdown_roles(const HeadEntry& h) const override {
    std::vector<std::string> lines;
    for (const auto& sc : h.syntactic)
      if (sc.is_role)
        lines.push_back("syntactic(" + sc.relation + " " + sc.direction + ") — " + kit::percent(sc.accuracy) + " of " +
                        std::to_string(sc.count) + " arcs vs baseline " + kit::percent(sc.baseline) + " (offset " +
                        kit::signed_offset(sc.baseline_offset) + ")");
    return lines;
  }
  std::vector<std::string> markdown_columns() const override { return {"best relation", "accuracy", "baseline"}; }
  std::vector<std::string> markdown_cells(const HeadEntry& h) const override {
    const auto& b = h.best_relation;
    return {b ? b->relation + " " + b->direction : "", b ? kit::percent(b->accuracy) : "", b ? kit::percent(b->baseline) : ""};
  }
  // Per relation and direction, the best head against its baseline.
  std::string markdown_section(const HeadReport& report) const override {
    std::string md = "## Syntactic heads against baselines\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& best : best_heads_per_relation(report)) {
      const SyntacticScore& sc = *best.score;
      rows.push_back({core::stack_name(best.stack), sc.relation, sc.direction, kit::head_name(*best.head), kit::percent(sc.accuracy),
                      kit::percent(sc.baseline), kit::signed_offset(sc.baseline_offset), std::to_string(sc.count),
                      sc.is_role ? "yes" : "no"});
    }
    if (rows.empty()) return md + "No relation was scored.\n\n";
    md += kit::md_header({"stack", "relation", "direction", "best head", "accuracy", "baseline", "baseline offset",
                          "count", "syntactic head"});
    for (const auto& r : rows) md += kit::md_row(r);
    return md + "\n";
  }

  std::vector<GridFigureSpec> grids(const ReportSettings& s) const override {
    return {{"best_relation_gain", "Best relation: accuracy − positional baseline",
             "outlined: syntactic heads (≥ baseline + " + kit::fixed(100 * s.syntactic_margin, 0) +
                 " points); small: the relation",
             false,
             [](const HeadEntry& h) {
               return h.best_relation ? std::optional<double>(h.best_relation->accuracy - h.best_relation->baseline)
                                      : std::nullopt;
             },
             [](const HeadEntry& h) {
               return h.best_relation ? h.best_relation->relation + " " + short_direction(h.best_relation->direction)
                                      : std::string();
             },
             has_syntactic_role}};
  }

  // The head's relations with the largest gains over their baselines (at most 8).
  std::vector<Evidence> evidence(const HeadEntry& h, const ReportSettings& /*settings*/) const override {
    auto bars = relation_bars(h, true);
    if (bars.empty()) return {};
    if (bars.size() > 8) bars.resize(8);
    Evidence e;
    e.kind = Evidence::Kind::bars;
    e.text = "Relations: this head against the best fixed offset";
    e.y_label = "accuracy";
    e.series = {"head", "baseline (best fixed offset)"};
    e.values.resize(2);
    std::vector<std::string> parts;
    for (const auto& b : bars) {
      e.categories.push_back(b.label);
      e.values[0].push_back(b.accuracy);
      e.values[1].push_back(b.baseline);
      e.notes.push_back(b.is_role ? "*" : "");
      parts.push_back(b.label + " " + kit::fixed(b.accuracy, 3) + " vs " + kit::fixed(b.baseline, 3) + " at " +
                      kit::signed_offset(b.baseline_offset));
    }
    e.description = "relations: " + kit::join(parts, "; ");
    return {e};
  }
};

}  // namespace

std::unique_ptr<Measure> make_syntactic_measure() { return std::make_unique<SyntacticMeasure>(); }

}  // namespace headlab::analysis
