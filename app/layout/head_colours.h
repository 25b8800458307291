// The colour of an attention head wherever heads are told apart by colour — the Head view's lines
// and buttons, and its figure: matplotlib's tab10 for heads 0–9, then hues spaced by the golden
// ratio, so that a model of more than ten heads gives no two of them one colour. Window-free.
#pragma once

#include "app/layout/colormap.h"

namespace headlab::app {

Rgb head_rgb(int head);

}  // namespace headlab::app
