// The head view's focus window over a long token column: readable rows around the focus, the rest
// compressed, every token still in order, and y → token the inverse of token → y.
#include "test_common.h"

#include "app/layout/token_window.h"

using namespace headlab::app;

TEST_CASE("a short column is one window of full rows", "[viewport]") {
  const TokenWindow w = token_window(20, 400.0f, 16.0f, 5);
  CHECK(w.begin == 0);
  CHECK(w.end == 20);
  CHECK(token_window_y(w, 10) == Approx(160.0f));
  CHECK(token_window_at(w, 161.0f) == 10);
}

TEST_CASE("a long column keeps readable rows around the focus and fits the height", "[viewport]") {
  const TokenWindow w = token_window(512, 600.0f, 16.0f, 300);
  CHECK(w.end - w.begin == 22);  // 60% of 600 px in 16-px rows
  CHECK(w.begin <= 300);
  CHECK(w.end > 300);
  CHECK(token_window_row(w, 300) == Approx(16.0f));
  CHECK(token_window_row(w, 0) < 1.0f);
  CHECK(token_window_height(w) == Approx(600.0f).margin(0.01));
  // Rows are in order and every y maps back to its token.
  for (int i = 0; i + 1 < 512; ++i) CHECK(token_window_y(w, i + 1) > token_window_y(w, i));
  for (int i : {0, 100, w.begin, 300, w.end - 1, w.end, 511})
    CHECK(token_window_at(w, token_window_y(w, i) + token_window_row(w, i) * 0.5f) == i);
  CHECK(token_window_at(w, -5.0f) == 0);
  CHECK(token_window_at(w, 1e6f) == 511);
}

TEST_CASE("the window stays inside the column at both ends", "[viewport]") {
  const TokenWindow first = token_window(512, 600.0f, 16.0f, 0);
  CHECK(first.begin == 0);
  CHECK(token_window_y(first, 0) == Approx(0.0f));
  const TokenWindow last = token_window(512, 600.0f, 16.0f, 511);
  CHECK(last.end == 512);
  CHECK(token_window_y(last, 511) == Approx(600.0f - 16.0f).margin(0.01));
}
