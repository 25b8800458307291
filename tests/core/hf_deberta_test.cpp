#include "test_common.h"

#include "hf_fixtures.h"

#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

// DeBERTa-v3 and DeBERTa-v2 against their float64 references (tests/data/hf/fixtures_deberta.py):
// disentangled attention with shared or own position projections, log buckets or clamped offsets, and
// both MLM head spellings.
using namespace headlab::core;
using namespace headlab::test::hf;
using Catch::Matchers::Contains;

TEST_CASE("hf import: DeBERTa-v3: shared position keys, log buckets, a normalised table, the lm_predictions head",
          "[hf_import][deberta]") {
  auto model = load_model(fixture("deberta-v3"));
  const ModelConfig& c = model->config;
  CHECK(c.family == "deberta_v2");
  CHECK(c.positions == PositionKind::None);  // position_biased_input false: positions only through the table
  const auto& a = c.encoder->attention;
  REQUIRE(a.disentangled);
  const Disentangled& d = *a.disentangled;
  CHECK((d.buckets == 8 && d.max_distance == 64 && d.span() == 8));  // max_relative_positions −1: max_position_embeddings
  CHECK((d.c2p && d.p2c && d.shared_keys && d.table_norm));
  CHECK(a.logit_scale() == Approx(1.0 / std::sqrt(8.0 * 3)));
  CHECK(c.parameter_count() == stored_parameters(*model));
  CHECK_THAT(c.summary(), Contains("disentangled(c2p+p2c, 8 log buckets to 64)"));

  const Errors errors = compare(*model, read_expected(fixture("deberta-v3")));
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);

  // Each detail matters: the buckets' reach, the terms named (and the scale they set), the table's norm,
  // the shared projections.
  const FixtureVariants v("deberta-v3");
  CHECK(v.errors_with([](auto& j) { j["max_relative_positions"] = 8; }).attention > 1e-3);
  CHECK(v.errors_with([](auto& j) { j["pos_att_type"] = nlohmann::json::array({"c2p"}); }).attention > 1e-3);
  CHECK(v.errors_with([](auto&) {}).logits <= kLogitTolerance);  // the edits above are what moved it
  CHECK_THAT(v.refused([](auto& j) { j["norm_rel_ebd"] = "none"; }),
             Contains("unexpected tensor 'deberta.encoder.LayerNorm."));
  CHECK_THAT(v.refused([](auto& j) { j["share_att_key"] = false; }), Contains("pos_key_proj"));
  CHECK_THAT(v.refused([](auto& j) { j["conv_kernel_size"] = 3; }), Contains("conv_kernel_size 3"));
  CHECK_THAT(v.refused([](auto& j) { j["pos_att_type"] = "c2p|p2x"; }), Contains("pos_att_type 'p2x'"));
  // A folder whose config asks for the legacy head but holds only lm_predictions (the hub's v3 files) is
  // read as stored, and the model says so.
  v.write([](auto& j) { j["legacy"] = true; });
  auto legacy = load_model(v.dir.str());
  CHECK_THAT(legacy->config.name, Contains("lm_predictions.lm_head"));
  CHECK(compare(*legacy, v.expected).logits <= kLogitTolerance);
}

TEST_CASE("hf import: DeBERTa-v2: own position projections, clamped offsets, absolute positions and token types",
          "[hf_import][deberta]") {
  auto model = load_model(fixture("deberta-v2"));
  const ModelConfig& c = model->config;
  CHECK(c.positions == PositionKind::Learned);  // position_biased_input (the default)
  CHECK(c.type_vocab_size == 2);
  const auto& a = c.encoder->attention;
  REQUIRE(a.disentangled);
  const Disentangled& d = *a.disentangled;
  CHECK((d.buckets == 0 && d.max_distance == 6 && d.span() == 6));
  CHECK((d.c2p && d.p2c && !d.shared_keys && !d.table_norm));  // "p2c|c2p", share_att_key false, norm_rel_ebd absent
  CHECK(c.parameter_count() == stored_parameters(*model));

  const Errors errors = compare(*model, read_expected(fixture("deberta-v2")));
  CHECK(errors.attention <= kAttentionTolerance);
  CHECK(errors.logits <= kLogitTolerance);

  const FixtureVariants v("deberta-v2");
  // One term only: the other's projections are left in the file, unread, and the import says which.
  CHECK_THAT(v.refused([](auto& j) { j["pos_att_type"] = "p2c"; }), Contains("pos_key_proj"));
  // A table of another size than the file's is refused naming it.
  CHECK_THAT(v.refused([](auto& j) { j["max_relative_positions"] = 5; }), Contains("rel_embeddings"));
  // position_biased_input defaults to true; false leaves the file's absolute table unread, as
  // transformers does, and the logits move.
  CHECK(v.errors_with([](auto& j) { j.erase("position_biased_input"); }).logits <= kLogitTolerance);
  CHECK(v.errors_with([](auto& j) { j["position_biased_input"] = false; }).logits > 1e-3);
  // A duplicated term counts once, as DebertaV2Config's membership tests do.
  CHECK(v.errors_with([](auto& j) { j["pos_att_type"] = "p2c|c2p|c2p"; }).logits <= kLogitTolerance);
  // relative_attention false: plain attention at the scale the terms named; the unread tables are skipped.
  CHECK(v.errors_with([](auto& j) { j["relative_attention"] = false; }).attention > 1e-3);
}
