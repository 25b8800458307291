// The head controls a picture of a run draws — the Heads grid, the Attention map and their
// figures: the gates and mixing the run on show was computed with (RunSnapshot::input.controls),
// never the session's newer ones, which have not run yet or belong to an input the model refused.
#pragma once

#include "app/document/document.h"

#include <string>

namespace headlab::app {

// True when `stage`'s maps are one per gated head, so that a head's gate is drawn on its map: U (the
// weights that multiply the values) always, and every stage of an attention without talking heads,
// whose logit, softmax and output heads are the same heads.
bool stage_shows_gates(const AttentionSummary& attention, Stage stage);

// The controls layer `layer` of `stack` ran with in the snapshot on show (the defaults before any run).
const core::HeadControls& shown_controls(const Document& doc, core::Stack stack, int layer);

// The gate drawn on head `head`'s map at `stage`: the one it ran with where the stage shows gates,
// else 1.
float shown_gate(const Document& doc, core::Stack stack, int layer, int head, Stage stage);

// How much of head `head`'s output the run on show took from the counterfactual (the Mixer's "take
// from counterfactual", layer `layer` of the main stack), drawn where its gate would be: 0 when
// none was taken, or the run could not take it (RunSnapshot::counterfactual_note).
float shown_take(const Document& doc, core::Stack stack, int layer, int head, Stage stage);

// "" while the session's controls are those the run on show was computed with; otherwise a short
// line for the views: the gates and mixing set since are not drawn, and why.
std::string controls_not_shown(const Document& doc);

}  // namespace headlab::app
