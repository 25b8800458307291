// A synthetic token stream the training tests learn from: specials 0..3 ([PAD] [MASK] [CLS]
// [SEP]), content tokens 4..47 following a noisy cycle, so a masked or causal LM can do much
// better than chance within a few hundred steps. Header-only.
#pragma once

#include "core/train/data.h"
#include "core/train/trainer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headlab::test {

constexpr int64_t kSyntheticVocab = 48;

inline core::train::SpecialTokens synthetic_specials() {
  core::train::SpecialTokens s;
  s.vocab_size = kSyntheticVocab;
  s.pad = 0;
  s.mask = 1;
  s.begin = 2;
  s.end = 3;
  s.specials = {0, 1, 2, 3};
  return s;
}

inline std::vector<std::vector<int64_t>> synthetic_documents(int docs, int length, uint64_t seed) {
  std::vector<std::vector<int64_t>> out;
  uint64_t state = seed;
  for (int d = 0; d < docs; ++d) {
    std::vector<int64_t> doc;
    int64_t t = 4 + d % 44;
    for (int i = 0; i < length; ++i) {
      state = core::train::mix_seed(state, i);
      t = (state % 10 == 0) ? 4 + int64_t(state >> 8) % 44 : 4 + (t - 4 + 7) % 44;
      doc.push_back(t);
    }
    out.push_back(std::move(doc));
  }
  return out;
}

// Options for a short run on the stream: `steps` steps of 16 sequences of 32 tokens, one thread,
// no progress line, one held-out evaluation at the start and one at the end.
inline core::train::TrainOptions quick_train_options(const std::string& out, core::train::Objective objective,
                                                     int64_t steps) {
  core::train::TrainOptions o;
  o.objective = objective;
  o.steps = steps;
  o.seed = 3;
  o.seq_len = 32;
  o.batch_tokens = 512;
  o.lr = 3e-3;
  o.warmup = 0.1;
  o.eval_every = steps;
  o.eval_batches = 4;
  o.threads = 1;
  o.out = out;
  o.progress = false;
  return o;
}

}  // namespace headlab::test
