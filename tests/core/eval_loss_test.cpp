// The loss and top-1 the trainer reports on held-out data (evaluate_examples: batched, padded, the
// loss the optimiser sees) against an independent computation: each example run alone through
// core::run, and the cross-entropy −log softmax(logits)[label] and the argmax taken with plain
// float64 loops over its logits — for the masked-LM, next-token and sequence-to-sequence objectives.
#include "test_common.h"

#include "core/config.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/train/data.h"
#include "core/train/trainer.h"
#include "synthetic_text.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <random>

using namespace headlab;
using namespace headlab::core::train;
using nlohmann::json;

namespace {

json shipped_config(const std::string& name) {
  std::ifstream in(std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json");
  return json::parse(in);
}

// pad 0, [MASK] 1, begin 2, end 3, as the synthetic text has them; the rest of the vocabulary is words.
SpecialTokens specials_of(int64_t vocab) {
  SpecialTokens s = headlab::test::synthetic_specials();
  s.vocab_size = vocab;
  return s;
}

// Examples of different lengths (so batches are padded), words drawn from 4 … vocab − 1.
std::vector<Example> examples_of(int64_t vocab, bool framed, bool with_targets) {
  std::mt19937_64 rng(5);
  std::vector<Example> out;
  for (int e = 0; e < 7; ++e) {
    Example ex;
    const int n = 4 + e % 4;
    if (framed) ex.source.push_back(2);
    for (int i = 0; i < n; ++i) ex.source.push_back(4 + int64_t(rng() % uint64_t(vocab - 4)));
    if (framed) ex.source.push_back(3);
    if (with_targets)
      for (int i = 0; i < 3 + e % 3; ++i) ex.target.push_back(4 + int64_t(rng() % uint64_t(vocab - 4)));
    out.push_back(ex);
  }
  return out;
}

struct Sums {
  double loss = 0;
  int64_t correct = 0, targets = 0;
  // One prediction: logits [V] (any float type) against `label`.
  void add(const torch::Tensor& logits, int64_t label) {
    const auto l = logits.to(torch::kFloat64).contiguous();
    const double* x = l.data_ptr<double>();
    const int64_t V = l.numel();
    double top = x[0];
    int64_t argmax = 0;
    for (int64_t v = 1; v < V; ++v)
      if (x[v] > top) top = x[v], argmax = v;
    double z = 0;
    for (int64_t v = 0; v < V; ++v) z += std::exp(x[v] - top);
    loss += -(x[label] - top - std::log(z));
    correct += argmax == label;
    ++targets;
  }
};

void compare(const EvalResult& got, const Sums& want) {
  REQUIRE(want.targets > 0);
  CHECK(got.targets == want.targets);
  CHECK(got.loss == Approx(want.loss / double(want.targets)).epsilon(1e-5));
  CHECK(got.accuracy == Approx(double(want.correct) / double(want.targets)).margin(1e-12));
}

}  // namespace

TEST_CASE("held-out loss and top-1 equal an independent cross-entropy, masked LM", "[train][loss]") {
  auto model = core::make_random_model(core::model_config_from_json(shipped_config("mha")), 3);
  const int64_t V = model->config.vocab_size;
  const auto specials = specials_of(V);
  const auto examples = examples_of(V, true, false);
  // Every word a target, replaced by [MASK]: the inputs are then known without the mask draw.
  Masking all;
  all.rate = 1.0;
  all.mask = 1.0;
  all.random = 0.0;
  const auto got = evaluate_examples(model->module, examples, Objective::Mlm, specials, all, 1, 3);
  Sums want;
  for (const auto& ex : examples) {
    core::RunRequest r;
    for (const int64_t id : ex.source) r.ids.push_back(id >= 4 ? 1 : id);
    const auto trace = core::run(*model, r);  // logits [T, V]
    for (size_t t = 0; t < ex.source.size(); ++t)
      if (ex.source[t] >= 4) want.add(trace->logits[int64_t(t)], ex.source[t]);
  }
  compare(got, want);
}

TEST_CASE("held-out loss and top-1 equal an independent cross-entropy, next token", "[train][loss]") {
  json j = shipped_config("mha");
  j["kind"] = "decoder";
  j["objective"] = "causal";
  j["decoder"] = j["encoder"];
  j.erase("encoder");
  auto model = core::make_random_model(core::model_config_from_json(j), 4);
  const int64_t V = model->config.vocab_size;
  const auto examples = examples_of(V, false, false);
  const auto got = evaluate_examples(model->module, examples, Objective::Causal, specials_of(V), {}, 1, 3);
  Sums want;
  for (const auto& ex : examples) {
    core::RunRequest r;
    r.ids = ex.source;
    const auto trace = core::run(*model, r);
    for (size_t t = 0; t + 1 < ex.source.size(); ++t) want.add(trace->logits[int64_t(t)], ex.source[t + 1]);
  }
  compare(got, want);
}

TEST_CASE("held-out loss and top-1 equal an independent cross-entropy, sequence to sequence", "[train][loss]") {
  auto model = core::make_random_model(core::model_config_from_json(shipped_config("encoder-decoder")), 5);
  const int64_t V = model->config.vocab_size;
  const auto examples = examples_of(V, false, true);
  const auto got = evaluate_examples(model->module, examples, Objective::Seq2Seq, specials_of(V), {}, 1, 3);
  Sums want;
  for (const auto& ex : examples) {
    // The decoder reads begin + target and predicts target + end.
    core::RunRequest r;
    r.ids = ex.source;
    r.decoder_ids = {2};
    r.decoder_ids.insert(r.decoder_ids.end(), ex.target.begin(), ex.target.end());
    const auto trace = core::run(*model, r);  // logits [S, V] at the decoder's positions
    for (size_t s = 0; s < r.decoder_ids.size(); ++s)
      want.add(trace->logits[int64_t(s)], s < ex.target.size() ? ex.target[s] : 3);
  }
  compare(got, want);
}
