// LRP head relevance (analysis/LRP.md; Ali et al. 2022; Achtibat et al. 2024; Voita et al. 2019 §4)
// and head importance (Michel et al. 2019), checked against what they must satisfy and against
// independent computations: conservation on every attention variant, a hand-written forward-mode
// propagation of each head's contribution, the failure of plain gradient × input, finite differences
// of the loss in the gates, and the `headlab run --lrp` dump.
#include "test_common.h"

#include "lrp_reference.h"
#include "relevance_checks.h"
#include "small_models.h"

#include "analysis/lrp.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/safetensors_torch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace core = headlab::core;
namespace analysis = headlab::analysis;
using headlab::test::run_command;
using headlab::test::TempDir;

namespace {

using headlab::test::attention;

core::ModelConfig small_model(core::StackKind kind, const core::AttentionConfig& a, int layers = 2) {
  auto c = headlab::test::small_model(kind, a, layers, 29);
  c.lm_head.bias = true;
  return c;
}

// HeadLab's initialisation leaves biases at 0 and attention nearly uniform; these weights make every
// additive constant count and the attention weights far from uniform, so the checks see every term.
std::shared_ptr<core::Model> random_model(const core::ModelConfig& config, uint64_t seed) {
  auto model = core::make_random_model(config, seed);
  torch::NoGradGuard no_grad;
  torch::manual_seed(seed);
  for (auto& item : model->module->named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    auto ends_with = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with("bias")) {
      p.copy_(0.2 * torch::randn(p.sizes()));
    } else if (ends_with("norm.weight")) {
      p.copy_(1 + 0.2 * torch::randn(p.sizes()));
    } else if (ends_with(".mix") || ends_with("_mix")) {  // collaborative mixing, talking heads' P_l and P_w
      p.copy_(p + 0.3 * torch::randn(p.sizes()));
    } else if (p.dim() >= 2) {
      p.copy_(torch::randn(p.sizes()) / std::sqrt(double(p.size(-1))) * 1.5);
    }
  }
  return model;
}

struct Variant {
  std::string name;
  core::ModelConfig config;
  core::ModelControls controls;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  using K = core::StackKind;
  out.push_back({"MHA encoder, pre-LN, learned positions, GELU", small_model(K::Encoder, attention(4, 4, 4, 4)), {}});
  out.push_back({"MQA decoder", small_model(K::Decoder, attention(4, 1, 4, 4)), {}});
  out.push_back({"GQA decoder", small_model(K::Decoder, attention(4, 2, 4, 4)), {}});

  auto talking = small_model(K::Encoder, attention(3, 3, 4, 4));
  talking.encoder->attention.talking_heads = core::TalkingHeads{3, 4, 2};
  out.push_back({"talking heads 3/4/2", talking, {}});

  auto collab = small_model(K::Decoder, attention(4, 4, 4, 4));
  collab.decoder->attention.collaborative = core::Collaborative{10};
  out.push_back({"collaborative (content bias)", collab, {}});

  auto additive = small_model(K::Encoder, attention(4, 4, 4, 4));
  additive.encoder->attention.scoring = core::Scoring::Additive;
  out.push_back({"additive scoring", additive, {}});

  out.push_back({"decoupled key size (d_k 6, d_v 3)", small_model(K::Encoder, attention(4, 4, 6, 3)), {}});
  auto attention_only = small_model(K::Decoder, attention(4, 4, 4, 4));
  attention_only.ffn.kind = core::FfnKind::None;
  out.push_back({"attention-only decoder (no FFN)", attention_only, {}});

  auto llama = headlab::test::llama_like(small_model(K::Decoder, attention(4, 2, 4, 4)));
  llama.lm_head.bias = false;
  out.push_back({"SwiGLU + RMSNorm pre-norm, RoPE, GQA, untied head", llama, {}});

  // Multi-head latent attention: values from a normalised latent (rule 2 holds its RMS), a query latent.
  auto latent = headlab::test::llama_like(small_model(K::Decoder, attention(4, 4, 6, 3)));
  latent.lm_head.bias = false;
  latent.decoder->attention.latent = core::LatentAttention{5, 4, 2, 1e-6f};
  out.push_back({"multi-head latent attention (query latent, a rotated part of 2)", latent, {}});

  auto bert = small_model(K::Encoder, attention(4, 4, 4, 4));
  bert.norm_placement = core::NormPlacement::Post;
  bert.embedding_norm = true;
  bert.final_norm = false;
  bert.type_vocab_size = 2;
  bert.lm_head.transform = true;
  out.push_back({"BERT-like: post-LN, embedding norm, token types, LM head transform", bert, {}});

  // Disentangled attention (DeBERTa): the position terms reach the logits only, which rule 1 holds.
  auto deberta = bert;
  deberta.positions = core::PositionKind::None;
  deberta.type_vocab_size = 0;
  deberta.encoder->attention.disentangled = core::Disentangled{4, 8, true, true, false, true, 1e-7f};
  out.push_back({"disentangled attention (own position projections, log buckets)", deberta, {}});

  auto rope = small_model(K::Encoder, attention(4, 4, 4, 4));
  rope.positions = core::PositionKind::RopeLearned;
  rope.rope_dim = 2;
  rope.encoder->nope_layers = {1};
  out.push_back({"RoPE (partial) + learned positions, a NoPE layer", rope, {}});

  auto window = small_model(K::Encoder, attention(4, 4, 4, 4));
  window.encoder->attention.pattern = {2, 1, {0}};
  out.push_back({"sliding window 2 + global token", window, {}});

  auto dilated = small_model(K::Decoder, attention(4, 4, 4, 4));
  dilated.decoder->attention.pattern = {2, 2, {}};
  dilated.ffn.activation = core::Activation::Relu;
  out.push_back({"dilated window, causal, ReLU", dilated, {}});

  auto neox = small_model(K::Decoder, attention(4, 4, 4, 4));
  neox.positions = core::PositionKind::Rope;
  neox.rope_dim = 2;
  neox.parallel_residual = true;
  out.push_back({"parallel attention and FFN, partial RoPE (GPT-NeoX)", neox, {}});
  auto gptj = neox;
  gptj.rope_interleaved = true;
  out.push_back({"parallel, interleaved partial RoPE (GPT-J)", gptj, {}});
  auto alibi = small_model(K::Decoder, attention(4, 4, 4, 4));
  alibi.positions = core::PositionKind::None;
  alibi.embedding_norm = true;
  alibi.decoder->attention.alibi = true;
  out.push_back({"ALiBi decoder, no position embeddings (BLOOM)", alibi, {}});
  auto alibi_encoder = small_model(K::Encoder, attention(3, 3, 4, 4));
  alibi_encoder.positions = core::PositionKind::None;
  alibi_encoder.encoder->attention.alibi = true;
  out.push_back({"ALiBi encoder (symmetric distances)", alibi_encoder, {}});

  auto t5 = small_model(K::EncoderDecoder, attention(4, 4, 4, 4));
  t5.positions = core::PositionKind::Sinusoidal;
  out.push_back({"encoder-decoder, pre-LN with final norms, sinusoidal", t5, {}});

  auto post = small_model(K::EncoderDecoder, attention(4, 4, 4, 4));
  post.norm_placement = core::NormPlacement::Post;
  post.final_norm = false;
  post.ffn.activation = core::Activation::GeluTanh;
  out.push_back({"encoder-decoder, post-LN, learned positions", post, {}});

  // Controls as the GUI sets them: a closed gate, a mean-ablated half-open gate (its replacement is
  // an additive constant), a dataset-mean ablation and user mixing matrices.
  core::ModelControls controls;
  controls.at(headlab::core::Stack::Encoder, 0).gates = {1, 0, 1, 1};
  controls.at(headlab::core::Stack::Encoder, 1).gates = {0.5f, 1, 0.25f, 1};
  controls.at(headlab::core::Stack::Encoder, 1).ablation = core::Ablation::Mean;
  controls.at(headlab::core::Stack::Encoder, 0).post_mix = {0.7f, 0.3f, 0, 0, 0, 1, 0, 0, 0.2f, 0, 0.8f, 0, 0, 0, 0, 1};
  controls.at(headlab::core::Stack::Encoder, 0).pre_mix = {1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  out.push_back({"MHA encoder with gates, mean ablation and user mixing", small_model(K::Encoder, attention(4, 4, 4, 4)),
                 controls});
  core::ModelControls dataset_mean;
  auto& d = dataset_mean.at(headlab::core::Stack::Decoder, 1);
  d.gates = {0.3f, 1, 1, 1};
  d.ablation = core::Ablation::Mean;
  d.mean_outputs.assign(4 * 4, 0.0f);
  for (size_t i = 0; i < d.mean_outputs.size(); ++i) d.mean_outputs[i] = 0.5f * float(i % 5) - 1.0f;
  dataset_mean.at(headlab::core::Stack::Cross, 0).gates = {0, 1};
  out.push_back({"encoder-decoder with dataset-mean ablation and a closed cross gate", t5, dataset_mean});
  return out;
}

const std::vector<int64_t> kIds = {1, 5, 9, 2, 17, 4, 11, 23, 8};
const std::vector<int64_t> kDecoderIds = {3, 8, 20, 6, 12};

std::vector<int64_t> decoder_ids_for(const core::ModelConfig& c) {
  return c.kind == core::StackKind::EncoderDecoder ? kDecoderIds : std::vector<int64_t>{};
}

double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("LRP conserves the target logit on every attention variant", "[lrp]") {
  for (const auto& v : variants()) {
    DYNAMIC_SECTION(v.name) {
      auto model = random_model(v.config, 17);
      const auto r = analysis::lrp_relevance(*model, kIds, {}, v.controls, decoder_ids_for(v.config));
      INFO(v.name << ": f = " << r.target << ", input " << total(r.input) + total(r.decoder_input) << ", bias "
                  << r.bias << ", residual " << r.residual);
      CHECK(std::abs(r.target) > 0.1);
      CHECK(r.relative_residual() <= 1e-5);  // float32; measured ≤ 1e-6
      // The bookkeeping adds up: Σ input + bias − f is the reported residual.
      CHECK(std::abs(total(r.input) + total(r.decoder_input) + r.bias - r.target) == Approx(r.residual).margin(1e-12));
      // Every stack and layer has one value per output head.
      const bool enc_dec = v.config.kind == core::StackKind::EncoderDecoder;
      const auto& main = v.config.kind == core::StackKind::Decoder ? *v.config.decoder : *v.config.encoder;
      const headlab::core::Stack key = v.config.kind == core::StackKind::Decoder ? headlab::core::Stack::Decoder : headlab::core::Stack::Encoder;
      REQUIRE(r.heads.count(key) == 1);
      CHECK(r.heads.at(key).size() == size_t(main.layers));
      for (const auto& layer : r.heads.at(key)) CHECK(layer.size() == size_t(main.attention.output_heads()));
      CHECK(r.input.size() == kIds.size());
      if (enc_dec) {
        CHECK(r.heads.count(headlab::core::Stack::Decoder) == 1);
        CHECK(r.heads.count(headlab::core::Stack::Cross) == 1);
        CHECK(r.decoder_input.size() == kDecoderIds.size());
        CHECK(r.position == int64_t(kDecoderIds.size()) - 1);
      } else {
        CHECK(r.decoder_input.empty());
        CHECK(r.position == int64_t(kIds.size()) - 1);
      }
      // The default token is the top-1 logit of the ordinary forward pass.
      core::RunRequest request;
      request.ids = kIds;
      request.decoder_ids = decoder_ids_for(v.config);
      request.controls = v.controls;
      auto trace = core::run(*model, request);
      const auto row = trace->logits[r.position];
      CHECK(r.token == row.argmax().item<int64_t>());
      CHECK(r.target == Approx(row[r.token].item<double>()).margin(1e-4));

      // In float64 the rules conserve f up to rounding; and a head whose gate is closed carries no
      // relevance while the heads beside it do (relevance sits on the head that made it).
      model->module->to(torch::kFloat64);
      core::ModelControls closed = v.controls;
      auto& gates = closed.at(key, 0).gates;
      gates.resize(size_t(main.attention.output_heads()), 1.0f);
      gates[1] = 0.0f;
      const auto r64 = analysis::lrp_relevance(*model, kIds, {}, closed, decoder_ids_for(v.config));
      CHECK(r64.relative_residual() <= 1e-9);
      headlab::test::check_closed_head_carries_none(r64, key, 1e-6);
    }
  }
}

TEST_CASE("LRP explains a chosen position and token, and rejects targets outside the input", "[lrp]") {
  auto model = random_model(small_model(core::StackKind::Encoder, attention(4, 4, 4, 4)), 3);
  const auto r = analysis::lrp_relevance(*model, kIds, {2, 7});
  CHECK(r.position == 2);
  CHECK(r.token == 7);
  core::RunRequest request;
  request.ids = kIds;
  CHECK(r.target == Approx(core::run(*model, request)->logits[2][7].item<double>()).margin(1e-4));
  CHECK(r.relative_residual() <= 1e-5);  // float32; measured ≤ 1e-6
  CHECK_THROWS_AS(analysis::lrp_relevance(*model, kIds, {int64_t(kIds.size()), -1}), std::invalid_argument);
  CHECK_THROWS_AS(analysis::lrp_relevance(*model, kIds, {0, 29}), std::invalid_argument);
  CHECK_THROWS_AS(analysis::lrp_relevance(*model, {1, 99}), std::invalid_argument);
}

TEST_CASE("plain gradient x input does not conserve, the LRP rules do", "[lrp]") {
  // The same bookkeeping without the rules: the softmax, the norms' denominators and GELU are not
  // linear, so Σ input + bias misses f. This is what makes the conservation check able to fail.
  for (uint64_t seed : {1u, 2u, 3u, 6u}) {
    auto model = random_model(small_model(core::StackKind::Encoder, attention(4, 4, 4, 4)), seed);
    const auto plain = analysis::gradient_x_input(*model, kIds);
    const auto lrp = analysis::lrp_relevance(*model, kIds);
    INFO("seed " << seed << ": f = " << lrp.target << ", plain residual " << plain.residual << ", LRP residual "
                 << lrp.residual);
    CHECK(plain.target == Approx(lrp.target).margin(1e-5));
    CHECK(plain.relative_residual() > 0.1);  // 100× the tolerance
    CHECK(lrp.relative_residual() <= 1e-5);
  }
}

TEST_CASE("head and input relevance equal an independent forward-mode computation on every variant", "[lrp]") {
  // Relevance must land on the head that produced it: grouped and shared key/value heads, talking
  // heads' mixed value heads, keys of another size than values, causal and windowed patterns,
  // post-LN, gated FFNs, cross-attention and the GUI's gates, ablations and mixing are where an index
  // slip or a missed constant would show. The reference (tests/lrp_reference.h) propagates each
  // source alone through the linear map the rules leave.
  for (const auto& v : variants()) {
    DYNAMIC_SECTION(v.name) {
      auto model = random_model(v.config, 23);
      model->module->to(torch::kFloat64);
      const bool enc_dec = v.config.kind == core::StackKind::EncoderDecoder;
      const analysis::LrpTarget target = enc_dec ? analysis::LrpTarget{} : analysis::LrpTarget{4, -1};
      const auto r = analysis::lrp_relevance(*model, kIds, target, v.controls, decoder_ids_for(v.config));
      const auto ref = headlab::test::lrp_reference(*model, kIds, decoder_ids_for(v.config), v.controls, r.position, r.token);
      CHECK(r.relative_residual() < 1e-10);  // float64: conservation is exact up to rounding
      headlab::test::check_against_reference(r, ref, 1e-10);
      // Each head's share differs from the plain gradient × input share: the rules change the numbers.
      const auto plain = analysis::gradient_x_input(*model, kIds, target, v.controls, decoder_ids_for(v.config));
      double differs = 0, scale = 0;
      for (const auto& [stack, layers] : ref.heads)
        for (size_t l = 0; l < layers.size(); ++l)
          for (size_t i = 0; i < layers[l].size(); ++i) {
            differs = std::max(differs, std::abs(plain.heads.at(stack)[l][i] - layers[l][i]));
            scale = std::max(scale, std::abs(layers[l][i]));
          }
      CHECK(differs > 1e-3 * scale);
    }
  }
}

TEST_CASE("normalize_per_layer divides by the layer's total absolute relevance", "[lrp]") {
  analysis::HeadValues raw;
  raw[headlab::core::Stack::Encoder] = {{1, -3, 0, 4}, {0, 0, 0, 0}};
  raw[headlab::core::Stack::Cross] = {{-2, 2}};
  const auto n = analysis::normalize_per_layer(raw);
  REQUIRE(n.at(headlab::core::Stack::Encoder).size() == 2);
  CHECK(n.at(headlab::core::Stack::Encoder)[0] == std::vector<double>{0.125, -0.375, 0, 0.5});
  CHECK(n.at(headlab::core::Stack::Encoder)[1] == std::vector<double>{0, 0, 0, 0});
  CHECK(n.at(headlab::core::Stack::Cross)[0] == std::vector<double>{-0.5, 0.5});
}

namespace {

// Mean cross-entropy of `targets` at `positions` of a [T, V] logits tensor.
double mean_cross_entropy(const torch::Tensor& logits, const std::vector<int64_t>& positions,
                          const std::vector<int64_t>& targets) {
  auto logp = torch::log_softmax(logits.to(torch::kFloat64), -1);
  double sum = 0;
  for (size_t k = 0; k < positions.size(); ++k) sum -= logp[positions[k]][targets[k]].item<double>();
  return sum / double(positions.size());
}

// ∂L/∂g for one head by a central difference of the gate through core::run.
double gate_derivative(core::Model& model, core::RunRequest request, headlab::core::Stack stack, int layer, int head,
                       int heads, const std::vector<int64_t>& positions, const std::vector<int64_t>& targets) {
  // A power of two: g ± eps and 1 − (g ± eps) stay exact in the float32 gates (0, 0.25, 0.5, 1).
  const double eps = 1.0 / 8192;
  auto& c = request.controls.at(stack, layer);
  if (c.gates.size() < size_t(heads)) c.gates.resize(heads, 1.0f);
  const float g = c.gates[head];
  // Gates are float32: the step actually taken is what the float gate holds.
  const float up = g + float(eps), down = g - float(eps);
  c.gates[head] = up;
  const double l_up = mean_cross_entropy(core::run(model, request)->logits, positions, targets);
  c.gates[head] = down;
  const double l_down = mean_cross_entropy(core::run(model, request)->logits, positions, targets);
  return (l_up - l_down) / (double(up) - double(down));
}

void check_importance(core::Model& model, const core::RunRequest& base, const analysis::ImportanceResult& imp,
                      const std::vector<int64_t>& positions, const std::vector<int64_t>& targets,
                      const std::vector<headlab::core::Stack>& stacks, int max_heads = 1000) {
  CHECK(imp.targets == int64_t(positions.size()));
  CHECK(imp.loss == Approx(mean_cross_entropy(core::run(model, base)->logits, positions, targets)).epsilon(1e-10));
  int checked = 0;
  for (const auto& stack : stacks) {
    REQUIRE(imp.heads.count(stack) == 1);
    const auto& layers = imp.heads.at(stack);
    for (size_t l = 0; l < layers.size(); ++l)
      for (size_t i = 0; i < layers[l].size() && int(i) < max_heads; ++i) {
        const double fd = gate_derivative(model, base, stack, int(l), int(i), int(layers[l].size()), positions, targets);
        INFO(stack << " layer " << l << " head " << i << ": importance " << layers[l][i] << ", finite difference " << fd);
        CHECK(layers[l][i] == Approx(std::abs(fd)).epsilon(1e-5).margin(1e-9));
        ++checked;
      }
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_CASE("head importance is |dL/dg| of the next-token loss, by finite differences", "[lrp]") {
  auto config = small_model(core::StackKind::Decoder, attention(4, 2, 4, 4), 2);
  config.positions = core::PositionKind::Rope;
  config.ffn.kind = core::FfnKind::SwiGLU;
  config.ffn.activation = core::Activation::Silu;
  auto model = random_model(config, 31);
  model->module->to(torch::kFloat64);
  std::vector<int64_t> positions, targets;
  for (size_t t = 0; t + 1 < kIds.size(); ++t) {
    positions.push_back(int64_t(t));
    targets.push_back(kIds[t + 1]);
  }
  core::RunRequest request;
  request.ids = kIds;
  SECTION("gates at 1") {
    const auto imp = analysis::head_importance(*model, kIds);
    check_importance(*model, request, imp, positions, targets, {headlab::core::Stack::Decoder});
  }
  SECTION("a closed gate, a mean-ablated gate and a dataset-mean gate") {
    request.controls.at(headlab::core::Stack::Decoder, 0).gates = {1, 0, 1, 1};
    request.controls.at(headlab::core::Stack::Decoder, 1).gates = {0.5f, 1, 1, 0.25f};
    request.controls.at(headlab::core::Stack::Decoder, 1).ablation = core::Ablation::Mean;
    const auto imp = analysis::head_importance(*model, kIds, request.controls);
    check_importance(*model, request, imp, positions, targets, {headlab::core::Stack::Decoder});
    // A closed head still has a derivative: the loss changes as the gate opens.
    CHECK(imp.heads.at(headlab::core::Stack::Decoder)[0][1] > 1e-6);
    auto dataset = request;
    auto& c = dataset.controls.at(headlab::core::Stack::Decoder, 0);
    c.ablation = core::Ablation::Mean;
    c.mean_outputs.resize(16);
    for (size_t i = 0; i < c.mean_outputs.size(); ++i) c.mean_outputs[i] = 0.05f * float(i % 7) - 0.1f;
    check_importance(*model, dataset, analysis::head_importance(*model, kIds, dataset.controls), positions, targets,
                     {headlab::core::Stack::Decoder});
  }
}

TEST_CASE("head importance of an encoder-decoder covers encoder, decoder and cross heads", "[lrp]") {
  auto config = small_model(core::StackKind::EncoderDecoder, attention(4, 4, 4, 4), 2);
  config.positions = core::PositionKind::Sinusoidal;
  auto model = random_model(config, 37);
  model->module->to(torch::kFloat64);
  std::vector<int64_t> positions, targets;
  for (size_t t = 0; t + 1 < kDecoderIds.size(); ++t) {
    positions.push_back(int64_t(t));
    targets.push_back(kDecoderIds[t + 1]);
  }
  core::RunRequest request;
  request.ids = kIds;
  request.decoder_ids = kDecoderIds;
  request.controls.at(headlab::core::Stack::Cross, 1).gates = {0.5f, 1};
  const auto imp = analysis::head_importance(*model, kIds, request.controls, {}, kDecoderIds);
  check_importance(*model, request, imp, positions, targets, {headlab::core::Stack::Encoder, headlab::core::Stack::Decoder, headlab::core::Stack::Cross});
}

TEST_CASE("head importance of the shipped masked LM, by finite differences", "[lrp]") {
  auto model = core::load_model(std::string(HEADLAB_SOURCE_DIR) + "/assets/models/default");
  REQUIRE(model->tokenizer);
  const auto mask = model->tokenizer->mask_id();
  REQUIRE(mask);
  model->module->to(torch::kFloat64);
  const auto ids = model->tokenizer->encode("the old man looked at the sea and said nothing for a long while", true).ids;
  REQUIRE(ids.size() > 10);
  // Default positions: every 7th non-special position starting at the 3rd.
  std::vector<int64_t> non_special, positions, targets;
  for (size_t t = 0; t < ids.size(); ++t)
    if (!model->tokenizer->is_special(ids[t])) non_special.push_back(int64_t(t));
  for (size_t k = 2; k < non_special.size(); k += 7) positions.push_back(non_special[k]);
  core::RunRequest request;
  request.ids = ids;
  for (int64_t p : positions) {
    targets.push_back(ids[p]);
    request.ids[p] = *mask;
  }
  const auto imp = analysis::head_importance(*model, ids);
  CHECK(imp.targets == int64_t(positions.size()));
  check_importance(*model, request, imp, positions, targets, {headlab::core::Stack::Encoder}, /*max_heads=*/2);

  // Chosen positions.
  const std::vector<int64_t> chosen = {1, 4};
  request.ids = ids;
  targets.clear();
  for (int64_t p : chosen) {
    targets.push_back(ids[p]);
    request.ids[p] = *mask;
  }
  check_importance(*model, request, analysis::head_importance(*model, ids, {}, chosen), chosen, targets, {headlab::core::Stack::Encoder},
                   /*max_heads=*/1);
  CHECK_THROWS_AS(analysis::head_importance(*model, ids, {}, {int64_t(ids.size())}), std::invalid_argument);

  // LRP's default target of a masked LM is the first mask position.
  const auto r = analysis::lrp_relevance(*model, request.ids);
  CHECK(r.position == 1);
  CHECK(r.relative_residual() < 1e-9);
}

namespace {
std::string headlab_cmd(const std::string& args) { return std::string(HEADLAB_BINARY) + " " + args; }
std::string config_path(const std::string& name) {
  return std::string(HEADLAB_SOURCE_DIR) + "/assets/configs/" + name + ".json";
}
}  // namespace

TEST_CASE("headlab run --lrp dumps head and input relevance", "[lrp][cli]") {
  TempDir dir("cli-lrp");
  std::string out;
  REQUIRE(run_command(headlab_cmd("init --config " + config_path("mha") + " --out " + dir.str("model") + " --seed 3"), out) == 0);
  const std::string dump = dir.str("dump.safetensors");
  const std::vector<int64_t> ids = {1, 5, 9, 14, 2, 7, 3, 8, 11, 4};
  REQUIRE(run_command(headlab_cmd("run --model " + dir.str("model") + " --ids 1,5,9,14,2,7,3,8,11,4 --lrp --out " + dump),
                      out) == 0);
  INFO(out);
  CHECK(out.find("conservation residual") != std::string::npos);
  auto file = core::SafetensorsFile::open(dump);
  auto model = core::load_model(dir.str("model"));
  const auto r = analysis::lrp_relevance(*model, ids);
  for (int l = 0; l < 2; ++l) {
    auto heads = headlab::core::load_tensor(file, "lrp." + std::to_string(l));
    REQUIRE(heads.sizes() == torch::IntArrayRef({4}));
    for (int i = 0; i < 4; ++i)
      CHECK(heads[i].item<double>() == Approx(r.heads.at(headlab::core::Stack::Encoder)[l][i]).margin(1e-6 + 1e-4 * std::abs(r.target)));
  }
  auto input = headlab::core::load_tensor(file, "lrp_input");
  REQUIRE(input.sizes() == torch::IntArrayRef({10}));
  const double f = std::stod(file.metadata().at("lrp_target"));
  const double bias = std::stod(file.metadata().at("lrp_bias"));
  CHECK(std::isfinite(input.sum().item<double>()));
  CHECK(std::abs(f) > 0);
  CHECK(input.sum().item<double>() + bias == Approx(f).margin(1e-5 * std::abs(f)));
  CHECK(std::stod(file.metadata().at("lrp_residual")) <= 1e-5 * std::abs(f));
  CHECK(file.metadata().at("lrp_position") == "9");

  // A chosen target.
  REQUIRE(run_command(headlab_cmd("run --model " + dir.str("model") + " --ids 1,5,9,14,2,7,3,8,11,4 --lrp-target 3:17 --force --out " + dump),
                      out) == 0);
  auto chosen = core::SafetensorsFile::open(dump);
  CHECK(chosen.metadata().at("lrp_position") == "3");
  CHECK(chosen.metadata().at("lrp_token") == "17");

  // Bad targets: a one-line usage error, exit code 2.
  for (const std::string bad : {"x", "3:", "-1", "10", "2:1000", "1:2:3"}) {
    INFO("--lrp-target " << bad);
    CHECK(run_command(headlab_cmd("run --model " + dir.str("model") + " --ids 1,5,9,14,2,7,3,8,11,4 --lrp-target " + bad +
                                  " --force --out " + dump),
                      out) == 2);
    CHECK(out.find("--lrp-target") != std::string::npos);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
  }
}

TEST_CASE("headlab run --lrp on an encoder-decoder dumps every stack", "[lrp][cli]") {
  TempDir dir("cli-lrp-encdec");
  std::string out;
  REQUIRE(run_command(headlab_cmd("init --config " + config_path("encoder-decoder") + " --out " + dir.str("model") + " --seed 3"),
                      out) == 0);
  const std::string dump = dir.str("dump.safetensors");
  REQUIRE(run_command(headlab_cmd("run --model " + dir.str("model") + " --ids 1,5,9,14,2,7 --decoder-ids 2,6,10,3 --lrp --out " + dump),
                      out) == 0);
  auto file = core::SafetensorsFile::open(dump);
  for (const std::string prefix : {"encoder_", "decoder_", "cross_"})
    for (int l = 0; l < 2; ++l) CHECK(headlab::core::load_tensor(file, prefix + "lrp." + std::to_string(l)).sizes() == torch::IntArrayRef({4}));
  CHECK(headlab::core::load_tensor(file, "encoder_lrp_input").sizes() == torch::IntArrayRef({6}));
  CHECK(headlab::core::load_tensor(file, "decoder_lrp_input").sizes() == torch::IntArrayRef({4}));
  const double f = std::stod(file.metadata().at("lrp_target"));
  const double sum = headlab::core::load_tensor(file, "encoder_lrp_input").sum().item<double>() + headlab::core::load_tensor(file, "decoder_lrp_input").sum().item<double>() +
                     std::stod(file.metadata().at("lrp_bias"));
  CHECK(sum == Approx(f).margin(1e-5 * std::abs(f)));
  CHECK(file.metadata().at("lrp_position") == "3");
}
