// Several inputs in one padded forward pass (core/model/run_batch.h): each trace equals the input's
// own core::run up to summation order, on an encoder (padding masked as keys), a causal decoder
// with GQA and sinks, and an encoder-decoder (cross-attention over padded memory).
#include "test_common.h"
#include "small_models.h"

#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/run_batch.h"
#include "core/model/stacks.h"

#include <string>
#include <utility>
#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

std::vector<std::pair<std::string, core::ModelConfig>> models() {
  using headlab::test::attention;
  std::vector<std::pair<std::string, core::ModelConfig>> out;
  auto bert = headlab::test::small_model(core::StackKind::Encoder, attention(4, 4, 4, 4), 2, 40);
  bert.norm_placement = core::NormPlacement::Post;
  out.emplace_back("encoder", bert);
  auto llama = headlab::test::llama_like(headlab::test::small_model(core::StackKind::Decoder, attention(4, 2, 4, 4), 3, 40));
  llama.decoder->attention.sinks = true;
  out.emplace_back("decoder with GQA and sinks", llama);
  auto t5 = headlab::test::small_model(core::StackKind::EncoderDecoder, attention(4, 4, 4, 4), 2, 40);
  out.emplace_back("encoder-decoder", t5);
  for (auto& [name, c] : out) c.validate();
  return out;
}

core::RunRequest request(const core::ModelConfig& c, std::vector<int64_t> ids) {
  core::RunRequest r;
  if (c.kind == core::StackKind::EncoderDecoder) r.decoder_ids = std::vector<int64_t>(ids.begin(), ids.begin() + std::max<size_t>(1, ids.size() - 2));
  r.ids = std::move(ids);
  r.capture = core::kCaptureWeights | core::kCaptureMixedWeights | core::kCaptureLogits | core::kCaptureHeadOutputs |
              core::kCaptureResidual;
  const size_t out_len = c.kind == core::StackKind::EncoderDecoder ? r.decoder_ids.size() : r.ids.size();
  r.logit_positions = {0, static_cast<int64_t>(out_len) - 1};
  r.controls.at(c.decoder ? core::Stack::Decoder : core::Stack::Encoder, 1).gates = {1.0f, 0.0f, 0.5f, 1.0f};
  return r;
}

}  // namespace

TEST_CASE("a batch of inputs gives each input's own run", "[run][batch]") {
  for (const auto& [name, c] : models()) {
    INFO(name);
    auto model = core::make_random_model(c, 6);
    const std::vector<core::RunRequest> requests = {request(c, {1, 5, 9, 2, 17, 4, 11}), request(c, {3, 8, 30}),
                                                    request(c, {12, 7, 7, 2, 19, 21, 33, 6, 1, 9, 14})};
    const auto batched = core::run_batch(*model, requests);
    REQUIRE(batched.size() == requests.size());
    for (size_t b = 0; b < requests.size(); ++b) {
      INFO("input " << b);
      const auto alone = core::run(*model, requests[b]);
      const auto& t = *batched[b];
      CHECK(t.ids == requests[b].ids);
      REQUIRE(t.logits.sizes() == alone->logits.sizes());
      CHECK(max_abs_diff(t.logits, alone->logits) < 1e-5);
      for (const core::Stack stack : core::stacks_of(c)) {
        const int layers = core::layers_config(c, stack).layers;
        for (int l = 0; l < layers; ++l) {
          INFO(core::stack_name(stack) << " layer " << l);
          const auto& a = core::stages_of(t, stack, l);
          const auto& e = core::stages_of(*alone, stack, l);
          for (const auto& [x, y] : {std::pair{&a.weights, &e.weights}, std::pair{&a.mixed_weights, &e.mixed_weights},
                                     std::pair{&a.logits, &e.logits}, std::pair{&a.sink_share, &e.sink_share},
                                     std::pair{&a.head_outputs, &e.head_outputs}}) {
            REQUIRE(x->defined() == y->defined());
            if (!y->defined()) continue;
            REQUIRE(x->sizes() == y->sizes());  // the padding is cut off
            CHECK(max_abs_diff(*x, *y) < 1e-5);
          }
        }
        const auto& hs = layers_of(stack) == core::Stack::Encoder ? t.encoder.hidden : t.decoder.hidden;
        const auto& he = layers_of(stack) == core::Stack::Encoder ? alone->encoder.hidden : alone->decoder.hidden;
        REQUIRE(hs.size() == he.size());
        for (size_t i = 0; i < hs.size(); ++i) CHECK(max_abs_diff(hs[i], he[i]) < 1e-5);
      }
    }
  }
}

TEST_CASE("a batch refuses what only a single run does", "[run][batch]") {
  const auto c = models()[1].second;
  auto model = core::make_random_model(c, 1);
  auto a = request(c, {1, 2, 3}), b = request(c, {4, 5});
  auto other = b;
  other.controls = {};
  CHECK_THROWS_WITH(core::run_batch(*model, {a, other}), Catch::Contains("share their capture and controls"));
  auto patched = b;
  patched.previous = core::run(*model, b);
  CHECK_THROWS_WITH(core::run_batch(*model, {a, patched}), Catch::Contains("one input at a time"));
  auto no_positions = b;
  no_positions.logit_positions.clear();
  CHECK_THROWS_WITH(core::run_batch(*model, {a, no_positions}), Catch::Contains("logit positions"));
  auto outside = b;
  outside.logit_positions = {2};
  CHECK_THROWS_WITH(core::run_batch(*model, {a, outside}), Catch::Contains("outside 0..1"));
  auto mean = b;
  mean.controls.at(core::Stack::Decoder, 1).ablation = core::Ablation::Mean;
  auto mean_a = a;
  mean_a.controls = mean.controls;
  CHECK_THROWS_WITH(core::run_batch(*model, {mean_a, mean}), Catch::Contains("mean ablation"));
  // A batch of one is checked alike, then runs as core::run.
  CHECK_THROWS_WITH(core::run_batch(*model, {no_positions}), Catch::Contains("logit positions"));
  CHECK(max_abs_diff(core::run_batch(*model, {b})[0]->logits, core::run(*model, b)->logits) == 0);
  CHECK(core::run_batch(*model, {}).empty());
}
