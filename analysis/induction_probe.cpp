#include "analysis/induction_probe.h"

#include "core/model/model.h"
#include "core/tokenizer/framing.h"
#include "core/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

namespace headlab::analysis {

InductionProbe make_induction_probe(const core::Model& model, int64_t length, int64_t count, uint64_t seed) {
  // Without a tokenizer: no framing, and every id of the vocabulary is an ordinary token.
  const core::Tokenizer* tok = model.tokenizer.get();
  const core::SentenceFrame frame = tok ? core::sentence_frame(*tok) : core::SentenceFrame{};
  const int64_t framing = int64_t(frame.begin.has_value()) + int64_t(frame.end.has_value());
  const int64_t room = (int64_t(model.config.max_positions) - framing) / 2;
  InductionProbe p;
  p.length = length > 0 ? length : std::min<int64_t>(50, room);
  if (p.length < 2 && length > 0)
    throw std::invalid_argument("induction probe: a length of " + std::to_string(length) +
                                " is too short; a copy needs at least 2 random tokens for an induction head to "
                                "predict one from the other (or 0: as many as fit, at most 50)");
  if (p.length < 2 || p.length > room)
    throw std::invalid_argument("induction probe: a length of " + std::to_string(p.length) + " repeated twice" +
                                (framing ? " with the tokenizer's framing" : "") + " does not fit this model's " +
                                std::to_string(model.config.max_positions) + " positions (2 to " +
                                std::to_string(room) + ")");
  if (count < 1) throw std::invalid_argument("induction probe: at least one sequence");
  p.start = frame.begin ? 1 : 0;
  std::vector<int64_t> ordinary;
  const int64_t vocab = tok ? std::min<int64_t>(model.config.vocab_size, tok->vocab_size()) : model.config.vocab_size;
  const auto unk = tok ? tok->unk_id() : std::nullopt;
  for (int64_t id = 0; id < vocab; ++id)
    if (!tok || (!tok->is_special(id) && (!unk || id != *unk) && !tok->id_to_token(id).empty())) ordinary.push_back(id);
  if (ordinary.size() < 2) throw std::runtime_error("induction probe: the vocabulary has no ordinary tokens to draw");
  std::mt19937_64 rng(seed);
  const uint64_t n = ordinary.size(), limit = UINT64_MAX - UINT64_MAX % n;
  auto draw = [&] {
    uint64_t x;
    do x = rng();
    while (x >= limit);
    return ordinary[size_t(x % n)];
  };
  for (int64_t k = 0; k < count; ++k) {
    std::vector<int64_t> r(size_t(p.length));
    for (auto& id : r) id = draw();
    std::vector<int64_t> ids;
    if (frame.begin) ids.push_back(*frame.begin);
    ids.insert(ids.end(), r.begin(), r.end());
    ids.insert(ids.end(), r.begin(), r.end());
    if (frame.end) ids.push_back(*frame.end);
    p.sequences.push_back(std::move(ids));
  }
  return p;
}

}  // namespace headlab::analysis
