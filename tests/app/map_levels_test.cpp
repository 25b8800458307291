// The levels a map is drawn with when it is smaller on screen than it is: max-pooled, so a sharp head
// stays as bright as it is at every size, and forbidden keys stay forbidden only where a whole block is.
#include "test_common.h"

#include "app/layout/map_levels.h"

#include <cmath>

using headlab::app::max_levels;

TEST_CASE("a map's drawing levels keep the largest weight of each block down to one cell", "[app][layout]") {
  // A previous-token head over 300 tokens: weight 0.9 on the diagonal below the main one, the rest
  // spread thinly. Averaging 2×2 blocks would give 0.45 on the first level and 0.11 three levels down.
  const int T = 300;
  std::vector<float> map(static_cast<size_t>(T) * T, 0.001f);
  for (int q = 1; q < T; ++q) map[static_cast<size_t>(q) * T + q - 1] = 0.9f;
  const auto levels = max_levels(map.data(), T, T, nullptr);
  // 300, 150, 75, 37, 18, 9, 4, 2, 1: GL's mipmap sizes, or the texture would be incomplete.
  REQUIRE(levels.size() == 9);
  CHECK(levels[3].rows == 37);
  CHECK(levels[3].cols == 37);
  CHECK(levels.back().rows == 1);
  CHECK(levels.back().values[0] == 0.9f);
  for (const auto& lv : levels) {
    INFO(lv.rows << " x " << lv.cols);
    // Every row of every level still reaches the head's weight (row 0 of level 0 has no previous token).
    for (int r = lv.rows == T ? 1 : 0; r < lv.rows; ++r) {
      float row_max = 0;
      for (int c = 0; c < lv.cols; ++c) row_max = std::max(row_max, lv.values[static_cast<size_t>(r) * lv.cols + c]);
      CHECK(row_max == 0.9f);
    }
  }
  // Level 1's cell (r, c) is the largest of level 0's block 2r..2r+1 × 2c..2c+1.
  CHECK(levels[1].values[static_cast<size_t>(10) * 150 + 9] == 0.9f);  // holds (20, 19) and (21, 20)
  CHECK(levels[1].values[static_cast<size_t>(10) * 150 + 20] == 0.001f);
}

TEST_CASE("a forbidden key stays forbidden in a drawing level only where its whole block is", "[app][layout]") {
  // A causal 5×5 map: keys after the query are forbidden.
  const int T = 5;
  std::vector<float> map(T * T, 0.2f);
  std::vector<uint8_t> masked(T * T, 0);
  for (int q = 0; q < T; ++q)
    for (int k = q + 1; k < T; ++k) masked[static_cast<size_t>(q * T + k)] = 1;
  const auto levels = max_levels(map.data(), T, T, masked.data());
  REQUIRE(levels.size() == 3);  // 5, 2, 1
  CHECK(std::isnan(levels[0].values[1]));                         // (0, 1)
  CHECK(levels[0].values[5] == 0.2f);                             // (1, 0)
  // Level 1 (2×2): block (0, 1) covers rows 0..1 and keys 2..4 (the odd last key joins it), all
  // forbidden; block (0, 0) and the diagonal block (rows 2..4, keys 2..4) hold allowed cells.
  REQUIRE(levels[1].rows == 2);
  CHECK(std::isnan(levels[1].values[1]));
  CHECK(levels[1].values[0] == 0.2f);
  CHECK(levels[1].values[3] == 0.2f);
  // A 3×1 map halves to 1×1 with its last row joined in.
  const float column[3] = {0.1f, 0.2f, 0.7f};
  const auto narrow = max_levels(column, 3, 1, nullptr);
  REQUIRE(narrow.size() == 2);
  CHECK(narrow[1].values[0] == 0.7f);
  // One cell at the end: some key is allowed.
  CHECK(levels.back().values[0] == 0.2f);
  CHECK(max_levels(map.data(), 0, 5, nullptr).empty());
}

TEST_CASE("a figure pools a layer's forbidden keys as the run pools its thumbnails", "[app][layout]") {
  // Causal 5×5 in blocks of 2×2 (the last ones short): a block is forbidden only when all of it is.
  const int T = 5;
  std::vector<uint8_t> masked(T * T, 0);
  for (int q = 0; q < T; ++q)
    for (int k = q + 1; k < T; ++k) masked[static_cast<size_t>(q * T + k)] = 1;
  const auto pooled = headlab::app::pool_masked(masked.data(), T, T, 2, 2);
  REQUIRE(pooled.size() == 9);  // 3 × 3
  CHECK(pooled == std::vector<uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  // Blocks of 1: the mask itself.
  CHECK(headlab::app::pool_masked(masked.data(), T, T, 1, 1) == masked);
}
