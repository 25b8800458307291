// A check every LRP test shares: relevance sits on the head that made it — with head 1 of a layer
// closed by its gate, that head carries none while the heads beside it do. Header-only.
#pragma once

#include "test_common.h"  // torch before Catch2 (tests/include_order_test.sh)

#include "analysis/lrp.h"

#include <cmath>

namespace headlab::test {

// `r` explains a run whose gate closed head 1 of layer 0 in `stack`.
inline void check_closed_head_carries_none(const analysis::LrpResult& r, core::Stack stack, double share) {
  const auto& layer0 = r.heads.at(stack).at(0);
  CHECK(layer0.at(1) == 0.0);
  double others = 0;
  for (size_t i = 0; i < layer0.size(); ++i)
    if (i != 1) others += std::abs(layer0[i]);
  CHECK(others > share * std::abs(r.target));
}

}  // namespace headlab::test
