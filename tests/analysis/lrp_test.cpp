// LRP head relevance (analysis/LRP.md; Ali et al. 2022; Achtibat et al. 2024; Voita et al. 2019 §5)
// and head importance (Michel et al. 2019), checked against what they must satisfy and against
// independent computations: conservation on every attention variant, a hand-written forward-mode
// propagation of each head's contribution, the failure of plain gradient × input, finite differences
// of the loss in the gates, and the `headlab run --lrp` dump.
#include "test_common.h"

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

  auto llama = headlab::test::llama_like(small_model(K::Decoder, attention(4, 2, 4, 4)));
  llama.lm_head.bias = false;
  out.push_back({"SwiGLU + RMSNorm pre-norm, RoPE, GQA, untied head", llama, {}});

  auto bert = small_model(K::Encoder, attention(4, 4, 4, 4));
  bert.norm_placement = core::NormPlacement::Post;
  bert.embedding_norm = true;
  bert.final_norm = false;
  bert.type_vocab_size = 2;
  bert.lm_head.transform = true;
  out.push_back({"BERT-like: post-LN, embedding norm, token types, LM head transform", bert, {}});

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
  CHECK(r.relative_residual() <= 1e-3);
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
    CHECK(lrp.relative_residual() <= 1e-3);
  }
}

namespace {

// An independent reference for a pre-LN MHA encoder with learned positions, GELU MLP and a tied LM
// head with bias, written from the equations with plain tensor algebra in float64 (nothing from the
// engine's modules): the forward pass records the attention weights, LayerNorm denominators and
// GELU ratios; then, with those held fixed (analysis/LRP.md rules 1–3) the network is linear, and the share
// of f that comes from one source (one head's output, one position's token embedding) is found by
// propagating that source alone forward, without biases. By Euler's theorem this share equals the
// backward gradient × input at the source, which is what lrp_relevance computes.
struct Reference {
  double f = 0;
  std::vector<std::vector<double>> heads;  // [layer][head]
  std::vector<double> input;               // [T]
};

Reference reference_relevance(core::Model& model, const std::vector<int64_t>& ids, int64_t position, int64_t token) {
  torch::NoGradGuard no_grad;
  auto& m = *model.module;
  const auto& c = model.config;
  // An encoder, or a causal decoder (its queries see keys up to their own position).
  const bool causal = c.kind == core::StackKind::Decoder;
  const auto& stack = causal ? *c.decoder : *c.encoder;
  const std::string name = causal ? "decoder" : "encoder";
  const auto& a = stack.attention;
  // Query head i reads key/value head i / (H / H_kv) (grouped-query and multi-query attention).
  const int64_t T = ids.size(), H = a.heads, Hkv = a.kv_heads, dk = a.key_size, dv = a.value_size;
  const auto kv_of = torch::arange(H, torch::kLong).div(H / Hkv, "floor");
  // Talking heads (Shazeer et al. 2020): the H = h_k logit heads mix into h softmax heads (P_l)
  // before the softmax and into h_v output heads (P_w) after it; each output head has its values.
  const bool talking = a.talking_heads.has_value();
  const int64_t Ho = a.output_heads();
  auto param = [&](const std::string& name) { return m.named_parameters()[name].to(torch::kFloat64); };
  auto E = param("tokens.weight");
  auto x = E.index_select(0, torch::tensor(ids, torch::kLong)) + param("positions.weight").narrow(0, 0, T);  // [T, D]
  struct Frozen {
    torch::Tensor attn_sigma, ffn_sigma, weights, ratio, head_outputs;  // weights [H, T, T]; O [H, T, dv]
  };
  std::vector<Frozen> frozen(stack.layers);
  auto layer_norm = [&](const torch::Tensor& h, const std::string& prefix, torch::Tensor& sigma) {
    auto centred = h - h.mean(-1, true);
    sigma = (centred.pow(2).mean(-1, true) + double(c.norm_eps)).sqrt();
    return centred / sigma * param(prefix + ".weight") + param(prefix + ".bias");
  };
  auto linear = [&](const torch::Tensor& h, const std::string& prefix, bool bias) {
    auto y = torch::matmul(h, param(prefix + ".weight").t());
    return bias ? y + param(prefix + ".bias") : y;
  };
  const auto future = torch::ones({T, T}, torch::kBool).triu(1);  // key after query
  for (int l = 0; l < stack.layers; ++l) {
    const std::string p = name + "." + std::to_string(l) + ".";
    auto& fz = frozen[l];
    auto n = layer_norm(x, p + "attn_norm", fz.attn_sigma);
    auto q = linear(n, p + "attn.q", true).view({T, H, dk}).transpose(0, 1);
    auto k = linear(n, p + "attn.k", true).view({T, Hkv, dk}).transpose(0, 1).index_select(0, kv_of);
    auto v = talking ? linear(n, p + "attn.v", true).view({T, Ho, dv}).transpose(0, 1)
                     : linear(n, p + "attn.v", true).view({T, Hkv, dv}).transpose(0, 1).index_select(0, kv_of);
    // The scale 1/√d_k as the folder format holds it: a float32 (core::AttentionConfig::logit_scale).
    auto scores = torch::matmul(q, k.transpose(1, 2)) * double(1.0f / std::sqrt(float(dk)));  // [H, T, T]
    // Mixing heads: M [from, to], out[to] = Σ_from M[from, to] · in[from].
    auto mix = [&](const torch::Tensor& x, const torch::Tensor& m) {
      return torch::matmul(m.t(), x.reshape({x.size(0), T * T})).view({m.size(1), T, T});
    };
    if (talking) scores = mix(scores, param(p + "attn.pre_mix"));
    if (causal) scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    fz.weights = torch::softmax(scores, -1);
    if (talking) fz.weights = mix(fz.weights, param(p + "attn.post_mix"));  // U: what multiplies the values
    fz.head_outputs = torch::matmul(fz.weights, v);
    x = x + linear(fz.head_outputs.transpose(0, 1).reshape({T, Ho * dv}), p + "attn.o", true);
    auto z = linear(layer_norm(x, p + "ffn_norm", fz.ffn_sigma), p + "ffn.up", true);
    fz.ratio = torch::gelu(z) / z;
    x = x + linear(torch::gelu(z), p + "ffn.down", true);
  }
  torch::Tensor final_sigma;
  const std::string final_norm = name + "_norm";
  auto logits = torch::matmul(layer_norm(x, final_norm, final_sigma), E.t()) + param("head_bias");
  Reference ref;
  ref.f = logits[position][token].item<double>();

  // The linear map with the recorded constants, biases left out.
  auto norm_lin = [&](const torch::Tensor& h, const torch::Tensor& sigma, const std::string& prefix) {
    return (h - h.mean(-1, true)) / sigma * param(prefix + ".weight");
  };
  auto ffn_lin = [&](const torch::Tensor& h, int l) {
    const std::string p = name + "." + std::to_string(l) + ".";
    auto z = linear(norm_lin(h, frozen[l].ffn_sigma, p + "ffn_norm"), p + "ffn.up", false);
    return h + linear(z * frozen[l].ratio, p + "ffn.down", false);
  };
  auto layer_lin = [&](const torch::Tensor& h, int l) {
    const std::string p = name + "." + std::to_string(l) + ".";
    auto values = linear(norm_lin(h, frozen[l].attn_sigma, p + "attn_norm"), p + "attn.v", false);
    auto v = talking ? values.view({T, Ho, dv}).transpose(0, 1)
                     : values.view({T, Hkv, dv}).transpose(0, 1).index_select(0, kv_of);
    auto o = torch::matmul(frozen[l].weights, v).transpose(0, 1).reshape({T, Ho * dv});
    return ffn_lin(h + linear(o, p + "attn.o", false), l);
  };
  auto logit_lin = [&](torch::Tensor h, int from) {
    for (int l = from; l < stack.layers; ++l) h = layer_lin(h, l);
    return torch::dot(norm_lin(h, final_sigma, final_norm)[position], E[token]).item<double>();
  };
  for (int64_t t = 0; t < T; ++t) {
    auto source = torch::zeros({T, c.hidden_size}, torch::kFloat64);
    source[t] = E[ids[t]];
    ref.input.push_back(logit_lin(source, 0));
  }
  for (int l = 0; l < stack.layers; ++l) {
    const std::string p = name + "." + std::to_string(l) + ".";
    auto Wo = param(p + "attn.o.weight");  // [D, H·dv]
    std::vector<double> row;
    for (int64_t i = 0; i < Ho; ++i) {
      // Head i's output alone, through W_O, then the rest of layer l and the layers above.
      auto contribution = torch::matmul(frozen[l].head_outputs[i], Wo.narrow(1, i * dv, dv).t());  // [T, D]
      row.push_back(logit_lin(ffn_lin(contribution, l), l + 1));
    }
    ref.heads.push_back(row);
  }
  return ref;
}

}  // namespace

namespace {

// The same reference for a pre-LN encoder-decoder with learned positions shared by the stacks: the
// encoder as above into the memory (after the encoder's final norm); the decoder's layers each with
// causal self-attention, cross-attention whose keys and values read the memory, and the MLP. With
// the constants held, f is linear in the sources of both stacks jointly: an encoder source reaches f
// through the memory and the cross-attention's values, a decoder source through the decoder.
struct Seq2SeqReference {
  double f = 0;
  std::vector<std::vector<double>> encoder, decoder, cross;  // [layer][head]
  std::vector<double> input, decoder_input;                  // [T], [S]
};

Seq2SeqReference seq2seq_reference(core::Model& model, const std::vector<int64_t>& ids,
                                   const std::vector<int64_t>& decoder_ids, int64_t position, int64_t token) {
  torch::NoGradGuard no_grad;
  auto& m = *model.module;
  const auto& c = model.config;
  const auto& ea = c.encoder->attention;
  const auto& da = c.decoder->attention;
  const auto& ca = *c.decoder->cross_attention;
  const int64_t T = ids.size(), S = decoder_ids.size(), D = c.hidden_size;
  auto param = [&](const std::string& name) { return m.named_parameters()[name].to(torch::kFloat64); };
  auto E = param("tokens.weight"), P = param("positions.weight");
  auto layer_norm = [&](const torch::Tensor& h, const std::string& prefix, torch::Tensor& sigma) {
    auto centred = h - h.mean(-1, true);
    sigma = (centred.pow(2).mean(-1, true) + double(c.norm_eps)).sqrt();
    return centred / sigma * param(prefix + ".weight") + param(prefix + ".bias");
  };
  auto norm_lin = [&](const torch::Tensor& h, const torch::Tensor& sigma, const std::string& prefix) {
    return (h - h.mean(-1, true)) / sigma * param(prefix + ".weight");
  };
  auto linear = [&](const torch::Tensor& h, const std::string& prefix, bool bias) {
    auto y = torch::matmul(h, param(prefix + ".weight").t());
    return bias ? y + param(prefix + ".bias") : y;
  };
  // Multi-head attention of queries from `hq` onto keys and values from `hkv` ([rows, D] each).
  auto heads_of = [&](const torch::Tensor& x, int64_t heads, int64_t size) {
    return x.view({x.size(0), heads, size}).transpose(0, 1);  // [heads, rows, size]
  };
  struct Frozen {
    torch::Tensor sigma, weights, outputs, cross_sigma, cross_weights, cross_outputs, ffn_sigma, ratio;
  };
  std::vector<Frozen> enc(c.encoder->layers), dec(c.decoder->layers);
  auto mlp = [&](torch::Tensor& x, const std::string& p, Frozen& fz) {
    auto z = linear(layer_norm(x, p + "ffn_norm", fz.ffn_sigma), p + "ffn.up", true);
    fz.ratio = torch::gelu(z) / z;
    x = x + linear(torch::gelu(z), p + "ffn.down", true);
  };
  auto attend = [&](const torch::Tensor& n, const torch::Tensor& kv, const std::string& w, const core::AttentionConfig& a,
                    bool causal, torch::Tensor& weights, torch::Tensor& outputs) {
    auto q = heads_of(linear(n, w + ".q", true), a.heads, a.key_size);
    auto k = heads_of(linear(kv, w + ".k", true), a.heads, a.key_size);
    auto v = heads_of(linear(kv, w + ".v", true), a.heads, a.value_size);
    // The scale 1/√d_k as the folder format holds it: a float32 (core::AttentionConfig::logit_scale).
    auto scores = torch::matmul(q, k.transpose(1, 2)) * double(1.0f / std::sqrt(float(a.key_size)));
    if (causal)
      scores = scores.masked_fill(torch::ones({n.size(0), kv.size(0)}, torch::kBool).triu(1),
                                  -std::numeric_limits<double>::infinity());
    weights = torch::softmax(scores, -1);
    outputs = torch::matmul(weights, v);  // [heads, rows, d_v]
    return linear(outputs.transpose(0, 1).reshape({n.size(0), a.heads * a.value_size}), w + ".o", true);
  };
  auto x = E.index_select(0, torch::tensor(ids, torch::kLong)) + P.narrow(0, 0, T);
  for (int l = 0; l < c.encoder->layers; ++l) {
    const std::string p = "encoder." + std::to_string(l) + ".";
    auto n = layer_norm(x, p + "attn_norm", enc[l].sigma);
    x = x + attend(n, n, p + "attn", ea, false, enc[l].weights, enc[l].outputs);
    mlp(x, p, enc[l]);
  }
  torch::Tensor memory_sigma;
  const auto memory = layer_norm(x, "encoder_norm", memory_sigma);
  auto y = E.index_select(0, torch::tensor(decoder_ids, torch::kLong)) + P.narrow(0, 0, S);
  for (int l = 0; l < c.decoder->layers; ++l) {
    const std::string p = "decoder." + std::to_string(l) + ".";
    auto n = layer_norm(y, p + "attn_norm", dec[l].sigma);
    y = y + attend(n, n, p + "attn", da, true, dec[l].weights, dec[l].outputs);
    auto nc = layer_norm(y, p + "cross_norm", dec[l].cross_sigma);
    y = y + attend(nc, memory, p + "cross_attn", ca, false, dec[l].cross_weights, dec[l].cross_outputs);
    mlp(y, p, dec[l]);
  }
  torch::Tensor final_sigma;
  Seq2SeqReference ref;
  ref.f = (torch::matmul(layer_norm(y, "decoder_norm", final_sigma), E.t()) + param("head_bias"))[position][token]
              .item<double>();

  // The linear map with the constants held and the biases left out.
  auto mlp_lin = [&](const torch::Tensor& h, const std::string& p, const Frozen& fz) {
    auto z = linear(norm_lin(h, fz.ffn_sigma, p + "ffn_norm"), p + "ffn.up", false);
    return h + linear(z * fz.ratio, p + "ffn.down", false);
  };
  auto values = [&](const torch::Tensor& weights, const torch::Tensor& from, const std::string& w,
                    const core::AttentionConfig& a) {  // the value path of one attention call
    auto v = heads_of(linear(from, w + ".v", false), a.heads, a.value_size);
    auto o = torch::matmul(weights, v).transpose(0, 1).reshape({weights.size(1), a.heads * a.value_size});
    return linear(o, w + ".o", false);
  };
  // Encoder stream h (entering layer `from`) → the memory's linear part.
  auto memory_lin = [&](torch::Tensor h, int from) {
    for (int l = from; l < c.encoder->layers; ++l) {
      const std::string p = "encoder." + std::to_string(l) + ".";
      h = h + values(enc[l].weights, norm_lin(h, enc[l].sigma, p + "attn_norm"), p + "attn", ea);
      h = mlp_lin(h, p, enc[l]);
    }
    return norm_lin(h, memory_sigma, "encoder_norm");
  };
  // Decoder stream g entering layer `from` at the point `part` (0: its start, 1: after self-attention,
  // 2: after cross-attention), with the memory's linear part `mem` (or undefined: none) → f's share.
  auto f_lin = [&](torch::Tensor g, const torch::Tensor& mem, int from, int part) {
    for (int l = from; l < c.decoder->layers; ++l) {
      const std::string p = "decoder." + std::to_string(l) + ".";
      if (l > from || part == 0) g = g + values(dec[l].weights, norm_lin(g, dec[l].sigma, p + "attn_norm"), p + "attn", da);
      if ((l > from || part <= 1) && mem.defined()) g = g + values(dec[l].cross_weights, mem, p + "cross_attn", ca);
      g = mlp_lin(g, p, dec[l]);
    }
    return torch::dot(norm_lin(g, final_sigma, "decoder_norm")[position], E[token]).item<double>();
  };
  const auto no_decoder = torch::zeros({S, D}, torch::kFloat64);
  for (int64_t t = 0; t < T; ++t) {
    auto source = torch::zeros({T, D}, torch::kFloat64);
    source[t] = E[ids[t]];
    ref.input.push_back(f_lin(no_decoder, memory_lin(source, 0), 0, 0));
  }
  for (int64_t t = 0; t < S; ++t) {
    auto source = torch::zeros({S, D}, torch::kFloat64);
    source[t] = E[decoder_ids[t]];
    ref.decoder_input.push_back(f_lin(source, {}, 0, 0));
  }
  auto head_alone = [&](const torch::Tensor& outputs, int64_t i, const std::string& w, const core::AttentionConfig& a) {
    return torch::matmul(outputs[i], param(w + ".o.weight").narrow(1, i * a.value_size, a.value_size).t());
  };
  for (int l = 0; l < c.encoder->layers; ++l) {
    const std::string p = "encoder." + std::to_string(l) + ".";
    std::vector<double> row;
    for (int64_t i = 0; i < ea.heads; ++i) {
      auto h = mlp_lin(head_alone(enc[l].outputs, i, p + "attn", ea), p, enc[l]);
      // The rest of the encoder from layer l + 1, into the memory.
      auto mem = memory_lin(h, l + 1);
      row.push_back(f_lin(no_decoder, mem, 0, 0));
    }
    ref.encoder.push_back(row);
  }
  for (int l = 0; l < c.decoder->layers; ++l) {
    const std::string p = "decoder." + std::to_string(l) + ".";
    std::vector<double> self_row, cross_row;
    for (int64_t i = 0; i < da.heads; ++i) self_row.push_back(f_lin(head_alone(dec[l].outputs, i, p + "attn", da), {}, l, 1));
    for (int64_t i = 0; i < ca.heads; ++i)
      cross_row.push_back(f_lin(head_alone(dec[l].cross_outputs, i, p + "cross_attn", ca), {}, l, 2));
    ref.decoder.push_back(self_row);
    ref.cross.push_back(cross_row);
  }
  return ref;
}

// Talking heads with 3 logit, 4 softmax and 2 output heads, as the variants list has them.
core::ModelConfig talking_heads_model() {
  auto c = small_model(core::StackKind::Encoder, attention(3, 3, 4, 4), 3);
  c.encoder->attention.talking_heads = core::TalkingHeads{3, 4, 2};
  return c;
}

}  // namespace

TEST_CASE("head and input relevance equal an independent forward-mode computation", "[lrp]") {
  using K = core::StackKind;
  struct Case {
    const char* name;
    core::ModelConfig config;
  };
  // Relevance must land on the head that produced it: grouped and shared key/value heads, keys of
  // another size than values, and a causal decoder are where an index slip would show.
  for (const Case& v : {Case{"MHA encoder", small_model(K::Encoder, attention(4, 4, 4, 4), 3)},
                        Case{"GQA encoder, 2 key/value heads", small_model(K::Encoder, attention(4, 2, 4, 4), 3)},
                        Case{"MQA encoder", small_model(K::Encoder, attention(4, 1, 4, 4), 3)},
                        Case{"keys of 6, values of 4", small_model(K::Encoder, attention(4, 4, 6, 4), 3)},
                        Case{"GQA causal decoder", small_model(K::Decoder, attention(4, 2, 4, 4), 3)},
                        Case{"talking heads 3/4/2", talking_heads_model()}}) {
    DYNAMIC_SECTION(v.name) {
      auto model = random_model(v.config, 23);
      model->module->to(torch::kFloat64);
      const auto stack = v.config.kind == K::Decoder ? headlab::core::Stack::Decoder : headlab::core::Stack::Encoder;
      const auto r = analysis::lrp_relevance(*model, kIds, {4, -1});
      const auto ref = reference_relevance(*model, kIds, r.position, r.token);
      CHECK(r.target == Approx(ref.f).epsilon(1e-10));
      CHECK(r.relative_residual() < 1e-10);  // float64: conservation is exact up to rounding
      REQUIRE(r.heads.at(stack).size() == ref.heads.size());
      double scale = 0;
      for (const auto& row : ref.heads)
        for (double x : row) scale = std::max(scale, std::abs(x));
      REQUIRE(scale > 1e-3);  // the heads matter: the comparison below is not between zeros
      for (size_t l = 0; l < ref.heads.size(); ++l)
        for (size_t i = 0; i < ref.heads[l].size(); ++i) {
          INFO("layer " << l << " head " << i);
          CHECK(r.heads.at(stack)[l][i] == Approx(ref.heads[l][i]).margin(1e-10 * scale));
        }
      REQUIRE(r.input.size() == ref.input.size());
      for (size_t t = 0; t < ref.input.size(); ++t) {
        INFO("position " << t);
        CHECK(r.input[t] == Approx(ref.input[t]).margin(1e-10 * std::abs(ref.f)));
      }
      // The heads of the last layer explain what they add at the target position only, so the sum
      // over a layer is not f; but each head's share differs from the plain gradient × input share.
      const auto plain = analysis::gradient_x_input(*model, kIds, {4, -1});
      double differs = 0;
      for (size_t l = 0; l < ref.heads.size(); ++l)
        for (size_t i = 0; i < ref.heads[l].size(); ++i)
          differs = std::max(differs, std::abs(plain.heads.at(stack)[l][i] - ref.heads[l][i]));
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
  CHECK(input.sum().item<double>() + bias == Approx(f).margin(1e-3 * std::abs(f)));
  CHECK(std::stod(file.metadata().at("lrp_residual")) <= 1e-3 * std::abs(f));
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
  CHECK(sum == Approx(f).margin(1e-3 * std::abs(f)));
  CHECK(file.metadata().at("lrp_position") == "3");
}

TEST_CASE("head and input relevance of an encoder-decoder equal the independent computation, cross heads too",
          "[lrp]") {
  auto model = random_model(small_model(core::StackKind::EncoderDecoder, attention(4, 4, 4, 4), 2), 31);
  model->module->to(torch::kFloat64);
  const auto r = analysis::lrp_relevance(*model, kIds, {}, {}, kDecoderIds);
  const auto ref = seq2seq_reference(*model, kIds, kDecoderIds, r.position, r.token);
  CHECK(r.target == Approx(ref.f).epsilon(1e-10));
  CHECK(r.relative_residual() < 1e-10);
  double scale = 0;
  for (const auto* stack : {&ref.encoder, &ref.decoder, &ref.cross})
    for (const auto& row : *stack)
      for (double x : row) scale = std::max(scale, std::abs(x));
  REQUIRE(scale > 1e-3);
  auto compare = [&](headlab::core::Stack stack, const std::vector<std::vector<double>>& want) {
    const auto& got = r.heads.at(stack);
    REQUIRE(got.size() == want.size());
    for (size_t l = 0; l < want.size(); ++l) {
      REQUIRE(got[l].size() == want[l].size());
      for (size_t i = 0; i < want[l].size(); ++i) {
        INFO(headlab::core::stack_name(stack) << " layer " << l << " head " << i);
        CHECK(got[l][i] == Approx(want[l][i]).margin(1e-10 * scale));
      }
    }
  };
  compare(headlab::core::Stack::Encoder, ref.encoder);
  compare(headlab::core::Stack::Decoder, ref.decoder);
  compare(headlab::core::Stack::Cross, ref.cross);
  REQUIRE(r.input.size() == ref.input.size());
  for (size_t t = 0; t < ref.input.size(); ++t) CHECK(r.input[t] == Approx(ref.input[t]).margin(1e-10 * std::abs(ref.f)));
  REQUIRE(r.decoder_input.size() == ref.decoder_input.size());
  for (size_t t = 0; t < ref.decoder_input.size(); ++t)
    CHECK(r.decoder_input[t] == Approx(ref.decoder_input[t]).margin(1e-10 * std::abs(ref.f)));
}
