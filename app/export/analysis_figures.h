// Figures of the Analyse workspace's views without a window (cairo): the head table as shown, one
// head's evidence (offset histogram, relations against the baseline, spectrum), a layer's key-query
// spectra, the relevance of an input's tokens and heads, and a sentence's gold and argmax arcs.
// Plain data in, one file out: SVG or PDF (or PNG) by the path's extension; another extension
// throws naming the path. Pages are sized to their content, titles included.
#pragma once

#include "analysis/head_report.h"
#include "analysis/spectra.h"

#include <optional>
#include <string>
#include <vector>

namespace headlab::app {

// The head table: `rows` (indices into report.heads, filtered and sorted as shown) under a "roles"
// column of role badges as text, then the columns of head_table_columns(report).
void write_head_table_figure(const std::string& path, const std::string& title, const analysis::HeadReport& report,
                             const std::vector<int>& rows);

// One head's evidence, each panel where the report measured it: where its maximum attention goes
// (offset histogram with the positional threshold), its relations against the best fixed offset
// (largest gains first), and its key-query spectrum's cumulative energy with the 90/95/99% ranks.
void write_head_detail_figure(const std::string& path, const std::string& title, const analysis::HeadEntry& head,
                              const analysis::ReportSettings& settings);

// A layer's key-query spectra: σ_k / σ_1 on a log axis and the cumulative energy with ● 90%, ■ 95%,
// ▲ 99% markers; head `selected` drawn bold in its colour, the layer's other heads faint.
void write_spectra_figure(const std::string& path, const std::string& title, const std::vector<analysis::Spectrum>& heads,
                          int selected);

struct RelevanceFigure {
  std::string title;                   // names the target: token, position, logit and residual
  std::string shading;                 // "LRP", "rollout" or "flow"
  std::vector<std::string> tokens;     // [T] token labels
  std::vector<double> values;          // [T] the shading's value per token
  int target = -1;                     // the explained position among `tokens` (outlined), -1 = none
  std::optional<core::Stack> stack;  // the stack of `heads`, named in the caption when set
  std::vector<std::vector<double>> heads;  // [layers][heads] head relevance R_i
};

// Tokens shaded by `values` (relevance_colors.h: red positive, blue negative) and the layer × head
// grid of head relevance, with a colour key for each.
void write_relevance_figure(const std::string& path, const RelevanceFigure& figure);

// A sentence's gold tree as labelled arcs above the words and a head's word-level argmax arcs below
// (`predicted` per word, −1 = none; empty = none drawn): green where the argmax is the gold head,
// red where it is another word, grey for words the syntactic measure does not score (`word_has_token`
// as analysis::scored_arcs takes it).
void write_syntax_figure(const std::string& path, const std::string& title, const std::vector<std::string>& words,
                         const std::vector<int>& gold_heads, const std::vector<std::string>& relations,
                         const std::vector<int>& predicted, const std::vector<bool>& word_has_token = {});

}  // namespace headlab::app
