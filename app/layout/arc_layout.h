// Layout of a sentence's dependency arcs for the Syntax view: word positions along a line, the gold
// tree drawn as nested arcs above the words and a head's word-level argmax arcs below them, and the
// per-relation accuracy of that head on the sentence. No ImGui: the view draws from these numbers.
#pragma once

#include <string>
#include <vector>

namespace headlab::app {

// An arc between two words (0-based), drawn from the dependent to its head.
struct Arc {
  int dependent = 0, head = 0;
  std::string label;  // the relation; may be empty (argmax arcs)
};

// Nesting levels: an arc's level is 1 + the highest level of the arcs strictly inside its span (1
// when none), so nested arcs stack and disjoint ones share a height. Arcs that cross (non-projective
// trees) or share a span are moved up until they do not share a level with one already placed.
// Self-arcs and arcs to a word outside [0, words) get level 0 (not drawn as arcs).
std::vector<int> arc_levels(const std::vector<Arc>& arcs, int words);

// The x of each word's centre: words of the given widths laid out left to right from x = 0 with
// `spacing` between neighbours.
std::vector<float> word_centres(const std::vector<float>& widths, float spacing);

struct ArcLayout {
  std::vector<float> word_x;        // centre of each word
  float width = 0;                  // from the first word's left edge to the last word's right edge
  std::vector<int> above_levels;    // per arc of `above`
  std::vector<int> below_levels;    // per arc of `below`
  int above_max_level = 0, below_max_level = 0;
};

// Word centres plus the levels of two arc sets: `above` (the gold tree) and `below` (a head's
// argmax arcs), each nested on its own side of the words.
ArcLayout layout_arcs(const std::vector<float>& word_widths, float spacing, const std::vector<Arc>& above,
                      const std::vector<Arc>& below);

// The gold tree's arcs: one per word whose head is another word of the sentence (heads 0-based,
// −1 = root, which gets no arc), labelled with its relation as written.
std::vector<Arc> tree_arcs(const std::vector<int>& heads, const std::vector<std::string>& relations);
// The arcs of a head's word-level argmax (per word the word it attends to most, −1 = none): one per
// word pointing at another word, unlabelled.
std::vector<Arc> argmax_arcs(const std::vector<int>& predicted);

// Which way an arc counts as found: the dependent's argmax is its head (Clark et al.'s direction
// for most relations), or the head's argmax is its dependent.
enum class ArcDirection { DependentToHead, HeadToDependent };

struct RelationAccuracy {
  std::string relation;
  int count = 0, correct = 0;
  double accuracy() const { return count ? double(correct) / count : 0.0; }
};

// Per relation of one sentence (sorted by name), how many of its gold arcs the head's argmax finds.
// The arcs scored are the dataset report's (analysis::scored_arcs): root and punct left out,
// relations normalised, subtypes stripped on request, arcs touching a word without a token of its own
// (`word_has_token`, when given) left out. Throws when the sizes disagree.
std::vector<RelationAccuracy> sentence_relation_accuracy(const std::vector<int>& gold_heads,
                                                         const std::vector<std::string>& relations,
                                                         const std::vector<int>& predicted,
                                                         ArcDirection direction = ArcDirection::DependentToHead,
                                                         bool strip_subtypes = false,
                                                         const std::vector<bool>& word_has_token = {});

}  // namespace headlab::app
