// Thumbnails of the captured maps (core/map_detail.h): a run that keeps every map max-pooled but
// one layer's equals a full run pooled afterwards, the layer kept whole is exact, moving the whole
// layer re-runs that one block, and the memory estimate counts the thumbnails.
#include "test_common.h"
#include "small_models.h"

#include "core/memory_budget.h"
#include "core/model/map_pool.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/stacks.h"

#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

// The pooling written out cell by cell: block b = ⌈n / side⌉, cell (i, j) the largest of rows
// [i·bt, min(T, (i+1)·bt)) × columns [j·bs, min(S, (j+1)·bs)).
torch::Tensor pool_by_hand(const torch::Tensor& maps, int side) {
  auto m = maps.to(torch::kDouble).contiguous();
  const int64_t H = m.size(0), T = m.size(1), S = m.size(2);
  const int64_t bt = (T + side - 1) / side, bs = (S + side - 1) / side;
  const int64_t t = (T + bt - 1) / bt, s = (S + bs - 1) / bs;
  auto out = torch::empty({H, t, s}, torch::kDouble);
  auto a = m.accessor<double, 3>();
  auto o = out.accessor<double, 3>();
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t q = i * bt; q < std::min(T, (i + 1) * bt); ++q)
          for (int64_t k = j * bs; k < std::min(S, (j + 1) * bs); ++k) best = std::max(best, a[h][q][k]);
        o[h][i][j] = best;
      }
  return out;
}

const torch::Tensor* stage(const core::AttentionStages& s, int i) {
  const torch::Tensor* all[] = {&s.logits, &s.mixed_logits, &s.weights, &s.mixed_weights, &s.sink_share};
  return all[i];
}

core::ModelConfig decoder_with_sinks() {
  auto c = headlab::test::llama_like(headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(4, 2, 4, 4), 3, 40));
  c.decoder->attention.sinks = true;
  c.validate();
  return c;
}

core::ModelConfig encoder_decoder() {
  auto c = headlab::test::small_model(core::StackKind::EncoderDecoder, headlab::test::attention(4, 4, 4, 4), 3, 40);
  c.encoder->layers = 2;
  c.validate();
  return c;
}

core::RunRequest request_for(const core::ModelConfig& c) {
  core::RunRequest r;
  r.ids = {1, 5, 9, 2, 17, 4, 11, 3, 8, 30, 12};  // 11 tokens: side 4 pools blocks of 3 (4 cells, the last of 2)
  if (c.kind == core::StackKind::EncoderDecoder) r.decoder_ids = {3, 8, 8, 20, 6, 7, 9};
  r.capture = core::kCaptureLogits | core::kCaptureMixedLogits | core::kCaptureWeights | core::kCaptureMixedWeights |
              core::kCaptureResidual;
  return r;
}

// Every captured stage of `pooled` equals `full` pooled, except (full_stack, full_layer) which equals
// `full` itself; the logits and residual stream are untouched.
void check_against_full(const core::ModelConfig& c, const core::Trace& pooled, const core::Trace& full,
                        const core::MapDetail& detail) {
  CHECK(max_abs_diff(pooled.logits, full.logits) < 1e-6);
  for (const core::Stack stack : core::stacks_of(c)) {
    const int layers = core::layers_config(c, stack).layers;
    for (int l = 0; l < layers; ++l) {
      INFO(core::stack_name(stack) << " layer " << l);
      const auto& p = core::stages_of(pooled, stack, l);
      const auto& f = core::stages_of(full, stack, l);
      for (int i = 0; i < 5; ++i) {
        const torch::Tensor& pt = *stage(p, i);
        const torch::Tensor& ft = *stage(f, i);
        INFO("stage " << i);
        REQUIRE(pt.defined() == ft.defined());
        if (!ft.defined()) continue;
        if (detail.pools(stack, l)) {
          const auto expected = ft.dim() == 2 ? pool_by_hand(ft.unsqueeze(-1), detail.thumbnail_side).squeeze(-1)
                                              : pool_by_hand(ft, detail.thumbnail_side);
          REQUIRE(pt.sizes() == expected.sizes());
          CHECK(pt.size(-1) <= std::max<int64_t>(1, detail.thumbnail_side));
          CHECK(torch::equal(pt.to(torch::kDouble), expected));
        } else {
          REQUIRE(pt.sizes() == ft.sizes());
          CHECK(torch::equal(pt, ft));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("pool_map keeps each block's largest value, the last block shorter", "[run][thumbnails]") {
  torch::manual_seed(3);
  for (const auto& [T, S, side] : std::vector<std::tuple<int, int, int>>{{11, 11, 4}, {7, 13, 3}, {64, 64, 64}, {65, 9, 64}, {5, 5, 8}}) {
    INFO(T << "×" << S << " to ≤ " << side);
    auto maps = torch::rand({3, T, S});
    maps.index_put_({0, 0, 0}, -std::numeric_limits<float>::infinity());  // a masked logit
    const auto pooled = core::pool_map(maps, side);
    const auto expected = pool_by_hand(maps, side);
    REQUIRE(pooled.sizes() == expected.sizes());
    CHECK(pooled.size(1) == core::pooled_length(T, side));
    CHECK(pooled.size(2) == core::pooled_length(S, side));
    CHECK(pooled.size(1) <= side);
    CHECK(torch::equal(pooled.to(torch::kDouble), expected));
    CHECK(pooled.max().item<float>() == maps.max().item<float>());  // the colour range is kept
  }
  // [h, T] (a sink's share per query) pools its rows alike.
  auto share = torch::rand({2, 10});
  CHECK(torch::equal(core::pool_map(share, 4).to(torch::kDouble), pool_by_hand(share.unsqueeze(-1), 4).squeeze(-1)));
  CHECK(core::pool_map(share, 0).unsafeGetTensorImpl() == share.unsafeGetTensorImpl());
  CHECK(core::pooling_block(11, 4) == 3);
  CHECK(core::pooled_length(11, 4) == 4);
  CHECK(core::pooled_length(256, 64) == 64);
  CHECK(core::pooled_length(257, 64) == 52);  // blocks of 5: 51 whole and one of 2
}

TEST_CASE("a run with thumbnails equals a full run pooled, its whole layer exact", "[run][thumbnails]") {
  const std::vector<std::pair<std::string, core::ModelConfig>> models = {
      {"decoder with GQA and sinks", decoder_with_sinks()}, {"encoder-decoder", encoder_decoder()}};
  for (const auto& [name, c] : models) {
    INFO(name);
    auto model = core::make_random_model(c, 9);
    const auto req = request_for(c);
    const auto full = core::run(*model, req);
    for (const core::Stack stack : core::stacks_of(c)) {
      auto pooled_req = req;
      pooled_req.maps = {4, stack, 1};
      const auto pooled = core::run(*model, pooled_req);
      CHECK(pooled->maps == pooled_req.maps);
      check_against_full(c, *pooled, *full, pooled_req.maps);
    }
  }
}

TEST_CASE("another whole layer re-runs only that layer, other changes recompute as before", "[run][thumbnails]") {
  const std::vector<std::pair<std::string, core::ModelConfig>> models = {
      {"decoder with GQA and sinks", decoder_with_sinks()}, {"encoder-decoder", encoder_decoder()}};
  for (const auto& [name, c] : models) {
    INFO(name);
    auto model = core::make_random_model(c, 4);
    auto req = request_for(c);
    const core::Stack main = core::Stack::Decoder;  // the decoder-only model's and the encoder-decoder's
    req.controls.at(main, 1).gates = {1.0f, 0.0f, 0.5f, 1.0f};  // a gated layer: the re-run must keep its controls
    const auto full = core::run(*model, req);
    auto first = req;
    first.maps = {4, main, 0};
    const auto a = core::run(*model, first);
    check_against_full(c, *a, *full, first.maps);

    // The whole layer moves to the gated layer 1, then to the cross-attention of layer 2 (enc-dec).
    auto second = first;
    second.maps.full_layer = 1;
    second.previous = a;
    const auto b = core::run(*model, second);
    CHECK(b->layers_computed == 1);
    CHECK(b->recomputed_stack == main);  // the layer that ran, as the status bar says it
    CHECK(b->recomputed_from == 1);
    check_against_full(c, *b, *full, second.maps);
    if (c.kind == core::StackKind::EncoderDecoder) {
      auto cross = second;
      cross.maps = {4, core::Stack::Cross, 2};
      cross.previous = b;
      const auto x = core::run(*model, cross);
      CHECK(x->layers_computed == 1);
      check_against_full(c, *x, *full, cross.maps);
    }
    // The unchanged request again: nothing runs.
    auto same = second;
    same.previous = b;
    CHECK(core::run(*model, same) == b);

    // A gate changed in the last layer while the whole layer moves back to 0: the last layer runs
    // as before and layer 0 once more.
    auto third = second;
    third.maps.full_layer = 0;
    third.controls.at(main, 2).gates = {0.0f, 1.0f, 1.0f, 1.0f};
    third.previous = b;
    const auto d = core::run(*model, third);
    CHECK(d->layers_computed == 2);
    auto third_full = third;
    third_full.maps = {};
    third_full.previous = nullptr;
    check_against_full(c, *d, *core::run(*model, third_full), third.maps);

    // Thumbnails of another size: no re-use, a whole run.
    auto other_side = second;
    other_side.maps.thumbnail_side = 3;
    other_side.previous = b;
    const auto e = core::run(*model, other_side);
    CHECK(e->layers_computed == core::layers_config(c, core::Stack::Decoder).layers +
                                     (c.encoder ? core::layers_config(c, core::Stack::Encoder).layers : 0));
    check_against_full(c, *e, *full, other_side.maps);
  }
}

TEST_CASE("each layer's whole maps reach on_layer before they are pooled", "[run][thumbnails]") {
  const auto c = decoder_with_sinks();
  auto model = core::make_random_model(c, 2);
  auto req = request_for(c);
  const auto full = core::run(*model, req);
  req.maps = {1, core::Stack::Decoder, -1};  // every map pooled to one cell
  std::vector<double> seen;
  req.on_layer = [&](core::Stack stack, int layer, const core::AttentionStages& s) {
    CHECK(stack == core::Stack::Decoder);
    seen.push_back(max_abs_diff(s.weights, core::stages_of(*full, stack, layer).weights));
  };
  const auto pooled = core::run(*model, req);
  REQUIRE(seen.size() == 3);
  for (double d : seen) CHECK(d == 0);
  CHECK(core::stages_of(*pooled, core::Stack::Decoder, 2).weights.sizes() == torch::IntArrayRef({4, 1, 1}));
}

TEST_CASE("the memory estimate counts thumbnails and the one whole layer", "[memory][thumbnails]") {
  auto c = headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(4, 2, 8, 8), 3, 50);
  const int64_t T = 1000;
  const auto full = core::estimate_run_memory(c, T, 0, core::kCaptureWeights);
  CHECK(full.maps == T * T * 4 * 3 * 4);
  const int64_t t = core::pooled_length(T, 64);  // 1000 → blocks of 16 → 63
  CHECK(t == 63);
  const auto thumbs = core::estimate_run_memory(c, T, 0, core::kCaptureWeights, 0, false, {64, core::Stack::Encoder, -1});
  CHECK(thumbs.maps == t * t * 4 * 3 * 4);
  const auto one_whole = core::estimate_run_memory(c, T, 0, core::kCaptureWeights, 0, false, {64, core::Stack::Encoder, 1});
  CHECK(one_whole.maps == (2 * t * t + T * T) * 4 * 4);
  CHECK(one_whole.captured - one_whole.maps == full.captured - full.maps);  // the rest is unchanged
  // A whole layer named in another stack keeps this one's maps all pooled.
  CHECK(core::estimate_run_memory(c, T, 0, core::kCaptureWeights, 0, false, {64, core::Stack::Decoder, 1}).maps == thumbs.maps);
}
