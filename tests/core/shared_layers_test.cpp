// Two engine options ALBERT and ELECTRA need, usable by any native model: shared layers (one set of
// layer weights run in every layer, StackConfig::shared_layers) and factorised embeddings
// (ModelConfig::embedding_size: tables of width E, a projection E → D). Each is checked against its
// definition: a shared stack equals a stack whose layers hold copies of the same weights, the
// factorised embedding and head against the formulas written out with the module's tensors.
#include "test_common.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"
#include "core/train/forward.h"

#include <nlohmann/json.hpp>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

int64_t numel(const core::Transformer& module) {
  int64_t n = 0;
  for (const auto& p : module->parameters()) n += p.numel();
  return n;
}

// Random weights with norms near 1, so every layer changes the stream visibly.
void randomize(core::Model& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model.module->named_parameters()) {
    auto& p = item.value();
    if (item.key().find("norm") != std::string::npos) p.copy_(1 + 0.3 * torch::randn(p.sizes()));
    else p.copy_(0.4 * torch::randn(p.sizes()));
  }
}

std::shared_ptr<const core::Trace> run_ids(core::Model& model, const std::vector<int64_t>& ids) {
  core::RunRequest request;
  request.ids = ids;
  request.capture = core::kCaptureWeights | core::kCaptureResidual;
  return core::run(model, request);
}

// Largest difference between two traces' attention weights over every layer of `stack`.
double attention_diff(const core::StackTrace& a, const core::StackTrace& b) {
  double worst = 0;
  for (size_t l = 0; l < a.layers.size(); ++l) worst = std::max(worst, max_abs_diff(a.layers[l].self.weights, b.layers[l].self.weights));
  return worst;
}

}  // namespace

TEST_CASE("shared_layers: a shared stack equals a stack whose layers hold copies of one layer", "[config][shared_layers]") {
  for (auto kind : {core::StackKind::Encoder, core::StackKind::Decoder}) {
    const bool encoder = kind == core::StackKind::Encoder;
    const headlab::core::Stack stack = encoder ? headlab::core::Stack::Encoder : headlab::core::Stack::Decoder;
    DYNAMIC_SECTION(stack) {
      auto copies_config = headlab::test::small_model(kind, headlab::test::attention(4, 2, 4, 4), 3, 37);
      auto shared_config = copies_config;
      (encoder ? shared_config.encoder : shared_config.decoder)->shared_layers = true;
      auto shared = core::make_random_model(shared_config, 5);
      randomize(*shared, 5);
      auto copies = core::make_random_model(copies_config, 6);
      {
        // Every layer of `copies` ← layer 0 of `shared`; everything else as in `shared`.
        torch::NoGradGuard no_grad;
        auto source = shared->module->named_parameters();
        for (auto& item : copies->module->named_parameters()) {
          std::string name = item.key();
          const std::string layer_prefix = std::string(headlab::core::stack_name(stack)) + ".";
          if (name.rfind(layer_prefix, 0) == 0) name = layer_prefix + "0" + name.substr(name.find('.', layer_prefix.size()));
          item.value().copy_(source[name]);
        }
      }
      // One layer's parameters instead of three; the config's count is the module's.
      CHECK(shared->module->blocks(stack)->size() == 1);
      CHECK(shared->module->layer_count(stack) == 3);
      CHECK(shared_config.parameter_count() == numel(shared->module));
      CHECK(copies_config.parameter_count() == numel(copies->module));
      const int64_t per_layer = numel(core::Transformer(copies_config)) - numel(core::Transformer(shared_config));
      int64_t block_params = 0;
      for (const auto& p : shared->module->block(stack, 0)->parameters()) block_params += p.numel();
      CHECK(per_layer == 2 * block_params);
      CHECK(shared->module->block(stack, 2).get() == shared->module->block(stack, 0).get());
      CHECK_THROWS_WITH(shared->module->block(stack, 3), Catch::Contains("layer 3 does not exist (3 layers)"));

      const std::vector<int64_t> ids = {3, 17, 5, 36, 0, 12, 8};
      auto a = run_ids(*shared, ids), b = run_ids(*copies, ids);
      const auto& sa = encoder ? a->encoder : a->decoder;
      const auto& sb = encoder ? b->encoder : b->decoder;
      REQUIRE(sa.layers.size() == 3);
      CHECK(attention_diff(sa, sb) < 1e-6);
      CHECK(max_abs_diff(a->logits, b->logits) < 1e-5);
      // The layers really differ from one another (each sees its own input), and the comparison
      // can fail: a copy that differs in one layer changes the result.
      CHECK(max_abs_diff(sa.layers[0].self.weights, sa.layers[2].self.weights) > 1e-2);
      {
        torch::NoGradGuard no_grad;
        copies->module->block(stack, 2)->attn->q->weight.add_(0.3);
      }
      auto c = run_ids(*copies, ids);
      CHECK(attention_diff(sa, encoder ? c->encoder : c->decoder) > 1e-3);

      // Training runs every layer too: its forward equals the run's last hidden state.
      core::train::Batch batch;
      batch.ids = torch::tensor(ids, torch::kLong).unsqueeze(0);
      torch::NoGradGuard no_grad;
      shared->module->eval();
      auto hidden = core::train::forward_hidden(shared->module, batch).squeeze(0);
      CHECK(max_abs_diff(hidden, sa.hidden.back()) < 1e-5);
    }
  }
}

TEST_CASE("embedding_size: factorised embeddings and the head follow their formulas", "[config][embedding_size]") {
  auto config = headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(4, 4, 4, 4), 2, 29);
  config.embedding_size = 6;  // E = 6, D = 16
  config.type_vocab_size = 2;
  config.embedding_norm = true;
  config.norm_placement = core::NormPlacement::Post;
  config.final_norm = false;
  config.lm_head = core::LmHeadConfig{true, true, true};
  auto model = core::make_random_model(config, 9);
  randomize(*model, 9);
  auto& m = *model->module;
  CHECK(m.tokens->weight.sizes() == std::vector<int64_t>{29, 6});
  CHECK(m.embed_project->weight.sizes() == std::vector<int64_t>{16, 6});
  CHECK(m.head_transform->weight.sizes() == std::vector<int64_t>{6, 16});
  CHECK(config.parameter_count() == numel(model->module));

  const std::vector<int64_t> ids = {1, 28, 4, 0, 9};
  const int64_t T = 5;
  auto trace = run_ids(*model, ids);
  torch::NoGradGuard no_grad;
  auto f64 = [](const torch::Tensor& t) { return t.detach().to(torch::kFloat64); };
  auto layer_norm = [&](const torch::Tensor& x, const core::Norm& n) {
    auto centred = x - x.mean(-1, true);
    return centred / (centred.pow(2).mean(-1, true) + double(config.norm_eps)).sqrt() * f64(n->weight) + f64(n->bias);
  };
  // x_t = W_proj · LN(E_tok[id_t] + P[t] + types[0]) + b_proj: the input of layer 0, [T, D].
  auto index = torch::tensor(ids, torch::kLong);
  auto e = f64(m.tokens->weight).index_select(0, index) + f64(m.positions->weight).narrow(0, 0, T) + f64(m.token_types->weight)[0];
  auto x = torch::matmul(layer_norm(e, m.embed_norm), f64(m.embed_project->weight).t()) + f64(m.embed_project->bias);
  CHECK(max_abs_diff(trace->encoder.hidden[0], x) < 1e-5);
  // logits = LN(gelu(W_t h + b_t)) · E_tokᵀ + b: the head maps back to E and reads the [V, E] table.
  auto h = f64(trace->encoder.hidden.back());
  auto t = layer_norm(torch::gelu(torch::matmul(h, f64(m.head_transform->weight).t()) + f64(m.head_transform->bias)), m.head_norm);
  auto logits = torch::matmul(t, f64(m.tokens->weight).t()) + f64(m.head_bias);
  CHECK(max_abs_diff(trace->logits, logits) < 1e-4);
  CHECK(max_abs_diff(trace->logits, logits) / logits.abs().max().item<double>() < 1e-6);

  // Without a transform the tied head scores against the projected table E_tok · W_projᵀ [V, D].
  auto bare_config = config;
  bare_config.lm_head = core::LmHeadConfig{false, true, false};
  auto bare = core::make_random_model(bare_config, 9);
  {
    auto source = model->module->named_parameters();
    for (auto& item : bare->module->named_parameters()) item.value().copy_(source[item.key()]);
  }
  CHECK(bare_config.parameter_count() == numel(bare->module));
  auto bare_trace = run_ids(*bare, ids);
  auto projected = torch::matmul(f64(m.tokens->weight), f64(m.embed_project->weight).t());  // [V, D]
  CHECK(max_abs_diff(bare_trace->logits, torch::matmul(h, projected.t())) < 1e-4);
  // E = D with embedding_size set still has the projection (ALBERT always projects).
  auto square = config;
  square.embedding_size = square.hidden_size;
  CHECK_FALSE(core::Transformer(square)->embed_project.is_empty());
  CHECK(square.parameter_count() == numel(core::Transformer(square)));
}

TEST_CASE("shared_layers and embedding_size: JSON, validation, saving, LRP", "[config][shared_layers][embedding_size]") {
  auto config = headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(2, 2, 8, 8), 4, 23);
  config.embedding_size = 8;
  config.encoder->shared_layers = true;
  config.lm_head = core::LmHeadConfig{true, true, true};
  const auto json = core::to_json(config);
  CHECK(json["embedding_size"] == 8);
  CHECK(json["encoder"]["shared_layers"] == true);
  const auto back = core::model_config_from_json(json);
  CHECK(back.embedding_size == 8);
  CHECK(back.encoder->shared_layers);
  CHECK_THAT(back.summary(), Catch::Contains("embeddings 8, projected") && Catch::Contains("shared by all layers"));
  // Configs without the options write neither key.
  const auto plain = core::to_json(headlab::test::small_model(core::StackKind::Encoder, headlab::test::attention(2, 2, 8, 8), 1, 23));
  CHECK_FALSE(plain.contains("embedding_size"));
  CHECK_FALSE(plain["encoder"].contains("shared_layers"));

  auto bad = json;
  bad["embedding_size"] = -1;
  CHECK_THROWS_WITH(core::model_config_from_json(bad), Catch::Contains("embedding_size must be >= 0"));
  bad = json;
  bad["encoder"]["shared_layers"] = "yes";
  CHECK_THROWS_WITH(core::model_config_from_json(bad), Catch::Contains("config.encoder.shared_layers: wrong type"));
  auto nope = headlab::test::llama_like(headlab::test::small_model(core::StackKind::Decoder, headlab::test::attention(2, 2, 8, 8), 3, 23));
  nope.decoder->shared_layers = true;
  nope.decoder->nope_layers = {1};
  CHECK_THROWS_WITH(nope.validate(), Catch::Contains("decoder.shared_layers") && Catch::Contains("nope_layers"));

  // A native folder stores the shared layer once and loads back to the same model.
  auto model = core::make_random_model(config, 4);
  randomize(*model, 4);
  headlab::test::TempDir dir("shared-layers");
  core::save_model(*model, dir.str());
  auto file = core::SafetensorsFile::open(dir.str("model.safetensors"));
  CHECK(file.contains("encoder.0.attn.q.weight"));
  CHECK_FALSE(file.contains("encoder.1.attn.q.weight"));
  CHECK(file.contains("embed_project.weight"));
  auto loaded = core::load_model(dir.str());
  const std::vector<int64_t> ids = {2, 9, 22, 0, 14, 7};
  CHECK(max_abs_diff(run_ids(*loaded, ids)->logits, run_ids(*model, ids)->logits) == 0.0);

  // LRP runs through the projection and the shared layers and conserves relevance.
  const auto lrp = headlab::analysis::lrp_relevance(*model, ids);
  CHECK(std::abs(lrp.target) > 0.1);
  CHECK(lrp.relative_residual() < 1e-5);  // float32; measured ≤ 1e-6
}
