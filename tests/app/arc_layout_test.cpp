// The Syntax view's arc layout: nesting levels of dependency arcs above and below the words, word
// positions, and a head's per-relation accuracy on one sentence.
#include "test_common.h"

#include "app/layout/arc_layout.h"

#include <stdexcept>

using namespace headlab::app;

namespace {

// "The cat sat on the mat ." — heads 0-based, −1 = root.
const std::vector<int> kHeads = {1, 2, -1, 5, 5, 2, 2};
const std::vector<std::string> kRelations = {"det", "nsubj", "root", "case", "det", "obl", "punct"};

}  // namespace

TEST_CASE("an arc sits one level above the highest arc inside its span", "[plot]") {
  const auto arcs = tree_arcs(kHeads, kRelations);
  REQUIRE(arcs.size() == 6);  // every word but the root
  CHECK(arcs[0].dependent == 0);
  CHECK(arcs[0].head == 1);
  CHECK(arcs[0].label == "det");
  const auto levels = arc_levels(arcs, 7);
  // det(0→1) 1, nsubj(1→2) 1, case(3→5) 2 over det(4→5) 1, obl(5→2) 3 over case, punct(6→2) 4 over obl.
  CHECK(levels == std::vector<int>{1, 1, 2, 1, 3, 4});

  // Disjoint arcs share a level; an arc sharing an end point with a shorter one still nests over it.
  CHECK(arc_levels({{0, 1, ""}, {2, 3, ""}, {0, 3, ""}}, 4) == std::vector<int>{1, 1, 2});
  CHECK(arc_levels({{0, 2, ""}, {0, 1, ""}}, 3) == std::vector<int>{2, 1});
  // The level is 1 + the highest inside, not 1 + the number inside.
  CHECK(arc_levels({{0, 1, ""}, {1, 2, ""}, {2, 3, ""}, {0, 4, ""}}, 5) == std::vector<int>{1, 1, 1, 2});
}

TEST_CASE("crossing or repeated arcs never share a level, loops and stray arcs get none", "[plot]") {
  // 0–2 and 1–3 cross (a non-projective pair): the second placed moves up.
  const auto crossing = arc_levels({{0, 2, ""}, {1, 3, ""}}, 4);
  CHECK(crossing[0] != crossing[1]);
  CHECK(std::min(crossing[0], crossing[1]) == 1);
  // The same span in both directions.
  const auto both = arc_levels({{0, 2, ""}, {2, 0, ""}}, 3);
  CHECK(both[0] != both[1]);
  // A self-arc, a negative head, a head past the last word.
  CHECK(arc_levels({{1, 1, ""}, {0, -1, ""}, {0, 5, ""}, {0, 1, ""}}, 3) == std::vector<int>{0, 0, 0, 1});
  CHECK(arc_levels({}, 0).empty());
}

TEST_CASE("words are laid out left to right with arcs above and below", "[plot]") {
  const std::vector<float> widths = {20, 40, 10};
  CHECK(word_centres(widths, 5) == std::vector<float>{10, 45, 75});
  CHECK(word_centres({}, 5).empty());

  // A head whose argmax points every word at its left neighbour (word 0 at itself: no arc).
  const std::vector<int> predicted = {0, 0, 1};
  const auto below = argmax_arcs(predicted);
  REQUIRE(below.size() == 2);
  CHECK(below[1].dependent == 2);
  CHECK(below[1].head == 1);
  CHECK(argmax_arcs({-1, 5, 0}).size() == 1);  // −1 and heads outside the sentence are dropped

  const ArcLayout layout = layout_arcs(widths, 5, {{0, 2, "obj"}, {1, 2, "amod"}}, below);
  CHECK(layout.word_x == word_centres(widths, 5));
  CHECK(layout.width == 80);
  CHECK(layout.above_levels == std::vector<int>{2, 1});
  CHECK(layout.above_max_level == 2);
  CHECK(layout.below_levels == std::vector<int>{1, 1});
  CHECK(layout.below_max_level == 1);
  CHECK(layout_arcs({}, 5, {}, {}).width == 0);
}

TEST_CASE("per-relation accuracy of one sentence, dependent to head", "[plot]") {
  // The head finds det(0→1) and obl(5→2), points case's dependent (3) at 4 instead of 5, and the
  // second det's dependent (4) at 3.
  const std::vector<int> predicted = {1, 0, 1, 4, 3, 2, 5};
  const auto acc = sentence_relation_accuracy(kHeads, kRelations, predicted);
  // root and punct are not scored, as in the dataset report.
  REQUIRE(acc.size() == 4);
  CHECK(acc[0].relation == "case");
  CHECK(acc[0].count == 1);
  CHECK(acc[0].correct == 0);
  CHECK(acc[1].relation == "det");
  CHECK(acc[1].count == 2);
  CHECK(acc[1].correct == 1);
  CHECK(acc[1].accuracy() == 0.5);
  CHECK(acc[2].relation == "nsubj");
  CHECK(acc[2].correct == 0);  // word 1 points at 0, its dependent, not at its head 2
  CHECK(acc[3].relation == "obl");
  CHECK(acc[3].correct == 1);

  // The other direction: the head's argmax finds its dependent. nsubj: word 2 points at 1.
  const auto back = sentence_relation_accuracy(kHeads, kRelations, predicted, ArcDirection::HeadToDependent);
  REQUIRE(back.size() == 4);
  CHECK(back[2].relation == "nsubj");
  CHECK(back[2].correct == 1);
  CHECK(back[1].correct == 1);  // det(0→1): word 1 points at 0
  CHECK(back[3].correct == 0);  // obl(5→2): word 2 points at 1

  CHECK_THROWS_AS(sentence_relation_accuracy(kHeads, kRelations, {1, 2}), std::invalid_argument);
  CHECK(RelationAccuracy{}.accuracy() == 0);
}

TEST_CASE("sentence relations are normalised like the dataset report's", "[plot]") {
  const std::vector<int> heads = {1, -1, 1};
  const std::vector<std::string> relations = {"nsubj:pass", "root", "dobj"};
  const std::vector<int> predicted = {1, 0, 1};
  const auto full = sentence_relation_accuracy(heads, relations, predicted);
  REQUIRE(full.size() == 2);
  CHECK(full[0].relation == "nsubj:pass");
  CHECK(full[1].relation == "obj");  // UD v1's dobj read as obj
  CHECK(full[1].correct == 1);
  const auto stripped = sentence_relation_accuracy(heads, relations, predicted, ArcDirection::DependentToHead, true);
  CHECK(stripped[0].relation == "nsubj");
}
