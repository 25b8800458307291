// The induction probe (Olsson et al. 2022): sequences of random tokens, each repeated once, framed as
// the model's tokenizer frames text. analysis/measures/induction.cpp measures heads on it.
#pragma once

#include <cstdint>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

struct InductionProbe {
  std::vector<std::vector<int64_t>> sequences;  // each [begin] r r [end]
  int64_t length = 0;  // N, the tokens of r
  int64_t start = 0;   // the first copy's first position (1 after a begin token)
};

// `count` sequences [frame begin] r r [frame end], r of `length` tokens (0: as many as fit, at most
// 50) drawn uniformly from the ordinary ids (not special, not unknown) of the vocabulary the model and
// its tokenizer share — without a tokenizer, unframed, from every id of the model's vocabulary — with
// a 64-bit Mersenne twister seeded by `seed` and rejection sampling, so the same seed gives the same
// ids on every platform. Throws std::invalid_argument for a length under 2 or one that does not fit
// the model's positions.
InductionProbe make_induction_probe(const core::Model& model, int64_t length, int64_t count, uint64_t seed);

}  // namespace headlab::analysis
