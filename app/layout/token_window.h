// A focus window over a long token column (the head view): the tokens of the window get full,
// readable rows and the rest share what height is left, so a 512-token input keeps every token
// in place while the part being read stays legible. Display-free; pixels from the column's top.
#pragma once

namespace headlab::app {

struct TokenWindow {
  int count = 0;             // tokens in the column
  int begin = 0, end = 0;    // the window: [begin, end)
  float big = 0, small = 0;  // row heights in and outside the window
};

// A window of as many `row_px` rows as fit in `fraction` of `height`, centred on `centre` and
// kept inside the column; when every token fits at `row_px` the window is the whole column.
TokenWindow token_window(int count, float height, float row_px, int centre, float fraction = 0.6f);
// The top of token i's row.
float token_window_y(const TokenWindow& w, int i);
// The height of token i's row.
float token_window_row(const TokenWindow& w, int i);
// The token whose row holds y (clamped to the column).
int token_window_at(const TokenWindow& w, float y);
// The column's total height.
float token_window_height(const TokenWindow& w);

}  // namespace headlab::app
