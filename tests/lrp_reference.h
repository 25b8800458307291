// An independent reference for LRP head and input relevance (analysis/LRP.md), for every model
// HeadLab builds: each attention variant and each imported family. Header-only.
//
// It is written from the equations in float64 with plain tensor algebra over the model's named
// parameters, not with the engine's modules. The forward pass records the constants the LRP rules
// hold fixed: normalisation denominators (rule 2), activation ratios act(z)/z (rule 3) and the
// branch values of a gated FFN (rule 4). With those fixed the network is linear, and the share of
// the explained logit f that comes from one source (one head's output O_i, one position's token
// embedding) is found by propagating that source alone forward, biases left out. By Euler's theorem
// this share equals the backward gradient × input at the source, which is what lrp_relevance
// computes with autograd; the two computations share nothing but the weights.
//
// The one input taken from the engine is each attention call's weights U (what multiplies the
// values, core::value_weights of a trace): rule 1 makes them constants of the linear map, and how
// every variant computes them (RoPE, ALiBi-free T5 buckets, windows, soft caps, talking heads,
// additive and collaborative scoring) is checked against independent computations and against
// transformers elsewhere. The reference's own logit f must equal the engine's, which ties the two
// forward passes together.
#pragma once

#include "test_common.h"  // torch before Catch2 (tests/include_order_test.sh)

#include "analysis/lrp.h"
#include "core/model/model.h"
#include "core/model/run.h"
#include "core/model/transformer.h"

#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace headlab::test {

struct LrpReference {
  double f = 0;
  std::map<core::Stack, std::vector<std::vector<double>>> heads;  // [stack][layer][head]
  std::vector<double> input, decoder_input;                       // [T], [T_dec]
};

namespace lrp_reference_detail {

using torch::Tensor;

// The model's parameters in float64, by native name.
class Weights {
 public:
  explicit Weights(core::Model& model) {
    for (const auto& p : model.module->named_parameters()) params_[p.key()] = p.value().detach().to(torch::kFloat64);
    for (const auto& b : model.module->named_buffers()) params_[b.key()] = b.value().detach().to(torch::kFloat64);
  }
  bool has(const std::string& name) const { return params_.count(name) > 0; }
  const Tensor& operator()(const std::string& name) const {
    auto it = params_.find(name);
    if (it == params_.end()) throw std::logic_error("lrp reference: no parameter '" + name + "'");
    return it->second;
  }
  // x [rows, in] · Wᵀ (+ b): a Linear named `prefix`.
  Tensor linear(const Tensor& x, const std::string& prefix, bool bias) const {
    auto y = torch::matmul(x, (*this)(prefix + ".weight").t());
    return bias && has(prefix + ".bias") ? y + (*this)(prefix + ".bias") : y;
  }

 private:
  std::map<std::string, Tensor> params_;
};

// A LayerNorm or RMSNorm named `prefix` with its denominator recorded in the forward pass; an empty
// prefix is a norm the block does not have (the identity).
struct Norm {
  std::string prefix;
  bool layer_norm = true;
  double eps = 0, offset = 0;
  Tensor sigma;  // [rows, 1]

  Tensor forward(const Weights& w, const Tensor& x) {
    if (prefix.empty()) return x;
    auto centred = layer_norm ? x - x.mean(-1, true) : x;
    sigma = (centred.pow(2).mean(-1, true) + eps).sqrt();
    auto y = centred / sigma * (w(prefix + ".weight") + offset);
    return layer_norm ? y + w(prefix + ".bias") : y;
  }
  // The linear part with σ held (analysis/LRP.md rule 2), bias left out.
  Tensor linear(const Weights& w, const Tensor& x) const {
    if (prefix.empty()) return x;
    auto centred = layer_norm ? x - x.mean(-1, true) : x;
    return centred / sigma * (w(prefix + ".weight") + offset);
  }
};

inline Tensor activation(const Tensor& z, core::Activation a) {
  switch (a) {
    case core::Activation::Gelu: return 0.5 * z * (1 + torch::erf(z / std::sqrt(2.0)));
    case core::Activation::GeluTanh:
      return 0.5 * z * (1 + torch::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z.pow(3))));
    case core::Activation::Relu: return z.clamp_min(0);
    case core::Activation::Silu: return z / (1 + torch::exp(-z));
  }
  throw std::logic_error("lrp reference: unknown activation");
}

// act(z)/z, held constant by rule 3 (act'(0) where z = 0).
inline Tensor ratio_of(const Tensor& z, core::Activation a) {
  const double slope = a == core::Activation::Relu ? 0.0 : 0.5;
  return torch::where(z.eq(0), torch::full_like(z, slope), activation(z, a) / z);
}

// One attention call: its weights U [h_v, T, S] from the trace and its controls.
struct Attention {
  std::string prefix;  // "encoder.0.attn"
  core::AttentionConfig config;
  core::HeadControls controls;
  Tensor U;  // [h_v, T, S]

  std::vector<double> gates() const {
    std::vector<double> g(size_t(config.output_heads()), 1.0);
    for (size_t i = 0; i < controls.gates.size() && i < g.size(); ++i) g[i] = controls.gates[i];
    return g;
  }
  // qkv_clip (OLMo): the values clamped to [−c, c], the ratio clamp(z)/z recorded by the forward pass
  // (bias: true) and held by rule 3 when a source alone is propagated (bias: false).
  mutable Tensor clip_ratio;
  // Multi-head latent attention: the latent's RMS [S, 1], recorded by the forward pass (bias: true) and
  // held by rule 2 when a source alone is propagated; the values are W_UV^h (c / rms ⊙ γ).
  mutable Tensor latent_rms;
  // O [h_v, T, d_v] = U · V for key/value input y [S, D].
  Tensor outputs(const Weights& w, const Tensor& y, bool bias) const {
    const int64_t S = y.size(0), stored = config.value_heads_stored(), hv = config.output_heads();
    Tensor z;
    if (config.latent) {
      const auto& m = *config.latent;
      auto c = w.linear(y, prefix + ".kv_down", bias && config.qkv_bias).narrow(1, 0, m.kv_rank);  // [S, d_c]
      if (bias) latent_rms = (c.pow(2).mean(-1, true) + double(m.norm_eps)).sqrt();
      z = w.linear(c / latent_rms * w(prefix + ".kv_latent_norm"), prefix + ".v", false);  // [S, h · d_v]
    } else {
      z = w.linear(y, prefix + ".v", bias);  // [S, stored · d_v]
    }
    if (config.qkv_clip > 0) {
      if (bias) clip_ratio = torch::where(z.eq(0), torch::ones_like(z), z.clamp(-config.qkv_clip, config.qkv_clip) / z);
      z = z * clip_ratio;
    }
    auto v = z.view({S, stored, config.value_size}).transpose(0, 1);
    if (stored != hv) v = v.repeat_interleave(hv / stored, 0);
    return torch::matmul(U, v);
  }
  // What W_O reads: O after the gates; a dataset mean is an additive constant, kept only when `bias`.
  Tensor gated(const Tensor& O, bool bias) const {
    if (controls.gates.empty()) return O;
    const auto g = torch::tensor(gates(), torch::kFloat64).view({-1, 1, 1});
    if (controls.ablation == core::Ablation::Zero) return O * g;
    if (controls.mean_outputs.empty()) return O * g + O.mean(1, true) * (1 - g);  // linear in O
    if (!bias) return O * g;
    std::vector<double> mean(controls.mean_outputs.begin(), controls.mean_outputs.end());
    return O * g + torch::tensor(mean, torch::kFloat64).view({O.size(0), 1, O.size(2)}) * (1 - g);
  }
  // Concat_i(O'_i) W_O (+ b_O): [T, D].
  Tensor project(const Weights& w, const Tensor& gated_outputs, bool bias) const {
    const int64_t T = gated_outputs.size(1);
    return w.linear(gated_outputs.transpose(0, 1).reshape({T, -1}), prefix + ".o", bias);
  }
  // Head i's output alone through the gates and W_O (no bias): the source of its relevance.
  Tensor head_alone(const Weights& w, const Tensor& O, int64_t i) const {
    auto only = torch::zeros_like(O);
    only[i] = O[i];
    return project(w, gated(only, false), false);
  }
};

struct Ffn {
  std::string prefix;  // "encoder.0.ffn"
  core::FfnConfig config;
  Tensor ratio, act, up;  // rule 3's ratio of the activated branch; a gated FFN's branch values
  Tensor up_ratio, sigma;  // the clamped GLU: the up clamp's ratio, σ(1.702·g)
  // A mixture of experts: each expert (an Ffn of its own), the router's weights [rows, experts] held
  // constant (0 where an expert was not chosen), the shared expert.
  std::vector<Ffn> experts;
  Tensor routing;
  std::vector<Ffn> shared;

  static Ffn make(const std::string& prefix, const core::FfnConfig& config) {
    Ffn f;
    f.prefix = prefix;
    f.config = config;
    return f;
  }

  Tensor forward(const Weights& w, const Tensor& x) {
    if (config.moe) return mixture_forward(w, x);
    const bool bias = true;
    if (config.kind == core::FfnKind::Mlp) {
      auto z = w.linear(x, prefix + ".up", bias);
      ratio = ratio_of(z, config.activation);
      return w.linear(activation(z, config.activation), prefix + ".down", bias);
    }
    auto z = w.linear(x, prefix + ".gate", bias);
    up = w.linear(x, prefix + ".up", bias);
    if (config.kind == core::FfnKind::ClampedSwiGLU) {
      // gpt-oss: g = min(z, limit), a = g·σ(1.702 g), b = clamp(up, ±limit), out = a ⊙ (b + 1).
      const double limit = config.limit;
      auto g = z.clamp_max(limit);
      ratio = torch::where(z.eq(0), torch::ones_like(z), g / z);
      sigma = torch::sigmoid(1.702 * g);
      act = g * sigma;
      auto b = up.clamp(-limit, limit);
      up_ratio = torch::where(up.eq(0), torch::ones_like(up), b / up);
      up = b;
      return w.linear(act * (up + 1), prefix + ".down", bias);
    }
    ratio = ratio_of(z, config.activation);
    act = activation(z, config.activation);
    return w.linear(act * up, prefix + ".down", bias);
  }
  Tensor linear(const Weights& w, const Tensor& x) const {
    if (config.moe) {
      auto y = torch::zeros_like(x);
      for (size_t e = 0; e < experts.size(); ++e) y = y + routing.select(1, int64_t(e)).unsqueeze(1) * experts[e].linear(w, x);
      for (const auto& s : shared) y = y + s.linear(w, x);
      return y;
    }
    if (config.kind == core::FfnKind::Mlp)
      return w.linear(w.linear(x, prefix + ".up", false) * ratio, prefix + ".down", false);
    // Rule 4: half of the product's share through each branch, the other branch held.
    if (config.kind == core::FfnKind::ClampedSwiGLU) {
      auto a = w.linear(x, prefix + ".gate", false) * ratio * sigma;
      auto b = w.linear(x, prefix + ".up", false) * up_ratio;
      return w.linear(0.5 * act * b + 0.5 * a * up + a, prefix + ".down", false);  // a ⊙ (b + 1): a passes whole
    }
    auto a = w.linear(x, prefix + ".gate", false) * ratio;
    auto b = w.linear(x, prefix + ".up", false);
    return w.linear(0.5 * act * b + 0.5 * a * up, prefix + ".down", false);
  }

 private:
  // softmax over the router's logits, the top k kept (renormalised when `normalize`); every expert
  // runs on every row, weighted by its share (0 where not chosen).
  Tensor mixture_forward(const Weights& w, const Tensor& x) {
    const core::MoeConfig& m = *config.moe;
    const auto logits = w.linear(x, prefix + ".router", m.router_bias);  // [rows, E]
    const bool sigmoid = m.scores == core::RouterScores::Sigmoid;
    auto probs = sigmoid ? torch::sigmoid(logits) : torch::softmax(logits, -1);
    // DeepSeek: the experts chosen by the biased scores within the best groups (zero elsewhere).
    auto choice = m.choice_bias ? probs + w(prefix + ".router_choice_bias") : probs;
    if (m.groups > 1) {
      const int64_t rows = choice.size(0), per = m.experts / m.groups;
      auto grouped = choice.view({rows, m.groups, per});
      auto best = m.group_score == core::GroupScore::Max ? std::get<0>(grouped.max(-1))
                                                          : std::get<0>(grouped.topk(2, -1)).sum(-1);
      auto keep = torch::zeros_like(best).scatter(1, std::get<1>(best.topk(m.top_groups, -1)), 1.0);
      choice = choice * keep.repeat_interleave(per, 1);  // the kept groups' scores, 0 elsewhere
    }
    auto top_e = std::get<1>(choice.topk(m.top_k, -1));
    auto top_p = probs.gather(1, top_e);
    if (m.normalize) top_p = top_p / (top_p.sum(-1, true) + (sigmoid ? 1e-20 : 0.0));
    top_p = top_p * double(m.scale);
    routing = torch::zeros_like(probs).scatter(1, top_e, top_p);
    core::FfnConfig one = config;
    one.moe.reset();
    experts.clear();
    shared.clear();
    auto y = torch::zeros_like(x);
    for (int e = 0; e < m.experts; ++e) {
      experts.push_back(make(prefix + ".experts." + std::to_string(e), one));
      y = y + routing.select(1, e).unsqueeze(1) * experts.back().forward(w, x);
    }
    if (m.shared_inner_size > 0) {
      one.inner_size = m.shared_inner_size;
      shared.push_back(make(prefix + ".shared", one));
      y = y + shared.back().forward(w, x);
    }
    return y;
  }
};

// One layer of a stack: self-attention, cross-attention (a decoder's), FFN, with their norms.
struct Layer {
  Attention self, cross;
  bool has_cross = false;
  bool has_ffn = true;  // false in an attention-only model
  Ffn ffn;
  Norm attn_norm, cross_norm, ffn_norm, attn_out, cross_out, ffn_out;
  Tensor self_O, cross_O;  // [h_v, T, d_v] head outputs of the forward pass
};

class Reference {
 public:
  Reference(core::Model& model, const std::vector<int64_t>& ids, const std::vector<int64_t>& decoder_ids,
            const core::ModelControls& controls)
      : w_(model), c_(model.config), ids_(ids), decoder_ids_(decoder_ids) {
    core::RunRequest request;
    request.ids = ids;
    request.decoder_ids = decoder_ids;
    request.controls = controls;
    request.capture = core::kCaptureWeights | core::kCaptureMixedWeights;
    trace_ = core::run(model, request);
    enc_dec_ = c_.kind == core::StackKind::EncoderDecoder;
    if (c_.encoder) build(core::Stack::Encoder, *c_.encoder, trace_->encoder, controls);
    if (c_.decoder) build(core::Stack::Decoder, *c_.decoder, trace_->decoder, controls);
  }

  LrpReference compute(int64_t position, int64_t token) {
    position_ = position;
    token_ = token;
    forward();
    LrpReference ref;
    ref.f = f_;
    // Input relevance: s·E[id_t] at one position, through the embedding's linear part.
    auto inputs = [&](core::Stack stack, const std::vector<int64_t>& ids, std::vector<double>& out) {
      for (size_t t = 0; t < ids.size(); ++t) {
        auto source = torch::zeros({int64_t(ids.size()), w_("tokens.weight").size(1)}, torch::kFloat64);
        source[t] = w_("tokens.weight")[ids[t]] * double(c_.embedding_scale);
        out.push_back(share_from(stack, embed_linear(stack, source), 0, 0));
      }
    };
    inputs(c_.encoder ? core::Stack::Encoder : core::Stack::Decoder, ids_, ref.input);
    if (enc_dec_) inputs(core::Stack::Decoder, decoder_ids_, ref.decoder_input);
    for (core::Stack stack : {core::Stack::Encoder, core::Stack::Decoder}) {
      auto& layers = layers_[stack];
      for (size_t l = 0; l < layers.size(); ++l) {
        auto& L = layers[l];
        std::vector<double> self_row, cross_row;
        for (int64_t i = 0; i < L.self.config.output_heads(); ++i)
          self_row.push_back(share_from(stack, after_sublayer(L.attn_out, L.attn_norm, {}, L.self.head_alone(w_, L.self_O, i)),
                                        int(l), 1));
        ref.heads[stack].push_back(self_row);
        if (!L.has_cross) continue;
        for (int64_t i = 0; i < L.cross.config.output_heads(); ++i)
          cross_row.push_back(share_from(stack, after_sublayer(L.cross_out, L.cross_norm, {}, L.cross.head_alone(w_, L.cross_O, i)),
                                         int(l), 2));
        ref.heads[core::Stack::Cross].push_back(cross_row);
      }
    }
    return ref;
  }

 private:
  Norm norm(const std::string& prefix) const {
    return Norm{prefix, c_.norm == core::NormKind::LayerNorm, double(c_.norm_eps), double(c_.norm_weight_offset), {}};
  }
  bool pre() const { return c_.norm_placement == core::NormPlacement::Pre; }

  void build(core::Stack stack, const core::StackConfig& s, const core::StackTrace& trace, const core::ModelControls& controls) {
    const std::string name = stack == core::Stack::Encoder ? "encoder" : "decoder";
    for (int l = 0; l < s.layers; ++l) {
      const std::string p = name + "." + std::to_string(s.shared_layers ? 0 : l) + ".";
      Layer L;
      L.self = Attention{p + "attn", s.layer_attention(l), controls.get(stack, l), core::value_weights(trace.layers[l].self)};
      // Norms a block may leave out (sublayer_input_norm false, ModernBERT's layer 0): the identity.
      auto present = [&](const std::string& name) { return w_.has(name + ".weight") ? norm(name) : Norm{}; };
      L.attn_norm = present(p + "attn_norm");
      L.has_ffn = c_.ffn.kind != core::FfnKind::None;
      if (L.has_ffn) {
        L.ffn_norm = present(p + "ffn_norm");
        core::FfnConfig ffn = c_.ffn;
        if (ffn.moe && ffn.moe->is_dense(l)) {  // DeepSeek's first layers: a plain FFN
          ffn.inner_size = ffn.moe->dense_inner_size;
          ffn.moe.reset();
        }
        L.ffn = Ffn::make(p + "ffn", ffn);
      }
      if (c_.sublayer_output_norm) {
        L.attn_out = norm(p + "attn_out_norm");
        if (L.has_ffn) L.ffn_out = norm(p + "ffn_out_norm");
      }
      if (s.cross_attention) {
        L.has_cross = true;
        L.cross = Attention{p + "cross_attn", *s.cross_attention, controls.get(core::Stack::Cross, l),
                            core::value_weights(trace.layers[l].cross)};
        L.cross_norm = norm(p + "cross_norm");
        if (c_.sublayer_output_norm) L.cross_out = norm(p + "cross_out_norm");
      }
      layers_[stack].push_back(L);
    }
    if (c_.final_norm) final_norm_[stack] = norm(name + "_norm");
  }

  // Tables and norm of a stack's embeddings (the decoder's own where ModelConfig::stack_embeddings).
  std::string own(core::Stack stack, const std::string& shared, const std::string& decoders) const {
    return stack == core::Stack::Decoder && c_.stack_embeddings ? decoders : shared;
  }

  Tensor embed(core::Stack stack, const std::vector<int64_t>& ids) {
    const int64_t T = ids.size();
    auto x = w_("tokens.weight").index_select(0, torch::tensor(ids, torch::kLong)) * double(c_.embedding_scale);
    const std::string positions = own(stack, "positions.weight", "decoder_positions.weight");
    if (w_.has(positions)) x = x + w_(positions).narrow(0, 0, T);
    if (w_.has("sinusoid")) x = x + w_("sinusoid").narrow(0, 0, T);
    if (w_.has("token_types.weight")) x = x + w_("token_types.weight")[0];
    if (c_.embedding_norm) {
      embed_norm_[stack] = norm(own(stack, "embed_norm", "decoder_embed_norm"));
      x = embed_norm_[stack].forward(w_, x);
    }
    if (w_.has("embed_project.weight")) x = w_.linear(x, "embed_project", true);
    return x;
  }
  Tensor embed_linear(core::Stack stack, const Tensor& source) const {
    auto x = c_.embedding_norm ? embed_norm_.at(stack).linear(w_, source) : source;
    return w_.has("embed_project.weight") ? w_.linear(x, "embed_project", false) : x;
  }

  // Pre-LN: h + out_norm(X); post-LN: norm(h + X). `h` undefined = 0.
  // `forward`: the forward pass, which records the norm's σ; else the linear part with σ held.
  Tensor after_sublayer(Norm& out_norm, Norm& post_norm, const Tensor& h, const Tensor& X, bool forward = false) {
    auto apply = [&](Norm& n, const Tensor& x) { return forward ? n.forward(w_, x) : n.linear(w_, x); };
    if (pre()) {
      auto y = out_norm.prefix.empty() ? X : apply(out_norm, X);  // sandwich norms (Gemma)
      return h.defined() ? h + y : y;
    }
    return apply(post_norm, h.defined() ? h + X : X);
  }

  // The forward pass, recording every constant; sets f_.
  void forward() {
    Tensor memory;
    if (c_.encoder) {
      auto h = run(core::Stack::Encoder, embed(core::Stack::Encoder, ids_), {});
      if (!enc_dec_) return finish(core::Stack::Encoder, h);
      memory = final_norm_.count(core::Stack::Encoder) ? final_norm_[core::Stack::Encoder].forward(w_, h) : h;
    }
    auto h = run(core::Stack::Decoder, embed(core::Stack::Decoder, enc_dec_ ? decoder_ids_ : ids_), memory);
    finish(core::Stack::Decoder, h);
  }

  Tensor run(core::Stack stack, Tensor h, const Tensor& memory) {
    for (auto& L : layers_[stack]) {
      auto attend = [&](Attention& a, Tensor& O, const Tensor& kv) {
        O = a.outputs(w_, kv, true);
        return a.project(w_, a.gated(O, true), true);
      };
      if (c_.parallel_residual) {  // h + attn(N_a(h)) + ffn(N_f(h)): both read the block's input
        auto a = attend(L.self, L.self_O, L.attn_norm.forward(w_, h));
        h = h + a + L.ffn.forward(w_, L.ffn_norm.forward(w_, h));
        continue;
      }
      auto n = pre() ? L.attn_norm.forward(w_, h) : h;
      h = after_sublayer(L.attn_out, L.attn_norm, h, attend(L.self, L.self_O, n), true);
      if (L.has_cross) {  // the cross norm of a pre-LN layer reads the queries only: not on the value path
        h = after_sublayer(L.cross_out, L.cross_norm, h, attend(L.cross, L.cross_O, memory), true);
      }
      if (!L.has_ffn) continue;
      auto m = pre() ? L.ffn_norm.forward(w_, h) : h;
      h = after_sublayer(L.ffn_out, L.ffn_norm, h, L.ffn.forward(w_, m), true);
    }
    return h;
  }

  // The LM head at the target position and token: f, and the constants of its linear part.
  void finish(core::Stack stack, const Tensor& hidden) {
    head_stack_ = stack;
    auto h = hidden[position_].unsqueeze(0);  // [1, D]
    if (final_norm_.count(stack)) h = final_norm_[stack].forward(w_, h);
    h = h * double(c_.lm_head.input_scale);
    if (c_.lm_head.transform) {
      auto z = w_.linear(h, "head_transform", true);
      head_ratio_ = ratio_of(z, c_.ffn.activation);
      head_norm_ = norm("head_norm");
      h = head_norm_.forward(w_, activation(z, c_.ffn.activation));
    }
    auto raw = torch::dot(h[0], head_row()).item<double>();
    if (w_.has("head_bias")) raw += w_("head_bias")[token_].item<double>();
    softcap_ratio_ = 1.0;
    f_ = raw;
    if (c_.lm_head.softcap > 0) {
      const double cap = c_.lm_head.softcap;
      f_ = cap * std::tanh(raw / cap);
      softcap_ratio_ = raw == 0 ? 1.0 : f_ / raw;  // rule 3
    }
  }
  // The decoder row of the target token [D or E].
  Tensor head_row() const {
    if (!c_.lm_head.tied) return w_("head_weight")[token_];
    auto row = w_("tokens.weight")[token_];
    if (!c_.lm_head.transform && w_.has("embed_project.weight")) row = torch::matmul(w_("embed_project.weight"), row);
    return row;
  }
  double head_linear(const Tensor& hidden) const {
    auto h = hidden[position_].unsqueeze(0);
    if (final_norm_.count(head_stack_)) h = final_norm_.at(head_stack_).linear(w_, h);
    h = h * double(c_.lm_head.input_scale);
    if (c_.lm_head.transform) h = head_norm_.linear(w_, w_.linear(h, "head_transform", false) * head_ratio_);
    return torch::dot(h[0], head_row()).item<double>() * softcap_ratio_;
  }

  // The linear part of a stack from layer `from`, entering at `part` (0: the layer's start, 1: after
  // self-attention, 2: after cross-attention); `memory` is the linear part of the encoder's output
  // (undefined: none reaches the decoder).
  Tensor stack_linear(core::Stack stack, Tensor h, const Tensor& memory, int from, int part) {
    auto& layers = layers_[stack];
    for (int l = from; l < int(layers.size()); ++l) {
      auto& L = layers[l];
      if (c_.parallel_residual) {
        // A source entering after this layer's attention joins the stream beside the FFN, which read
        // the layer's input without it.
        if (l > from || part == 0)
          h = h + L.self.project(w_, L.self.gated(L.self.outputs(w_, L.attn_norm.linear(w_, h), false), false), false) +
              L.ffn.linear(w_, L.ffn_norm.linear(w_, h));
        continue;
      }
      if (l > from || part == 0) {
        auto n = pre() ? L.attn_norm.linear(w_, h) : h;
        h = after_sublayer(L.attn_out, L.attn_norm, h, L.self.project(w_, L.self.gated(L.self.outputs(w_, n, false), false), false));
      }
      if (L.has_cross && (l > from || part <= 1)) {
        auto X = memory.defined() ? L.cross.project(w_, L.cross.gated(L.cross.outputs(w_, memory, false), false), false)
                                  : torch::zeros_like(h);
        h = after_sublayer(L.cross_out, L.cross_norm, h, X);
      }
      if (!L.has_ffn) continue;
      auto m = pre() ? L.ffn_norm.linear(w_, h) : h;
      h = after_sublayer(L.ffn_out, L.ffn_norm, h, L.ffn.linear(w_, m));
    }
    return h;
  }

  // f's share of a source that enters `stack`'s stream at (layer, part).
  double share_from(core::Stack stack, const Tensor& source, int layer, int part) {
    if (stack == core::Stack::Decoder) return head_linear(stack_linear(stack, source, {}, layer, part));
    auto h = stack_linear(core::Stack::Encoder, source, {}, layer, part);
    if (!enc_dec_) return head_linear(h);
    auto memory = final_norm_.count(core::Stack::Encoder) ? final_norm_.at(core::Stack::Encoder).linear(w_, h) : h;
    const int64_t T = enc_dec_ ? int64_t(decoder_ids_.size()) : 0;
    return head_linear(stack_linear(core::Stack::Decoder, torch::zeros({T, h.size(1)}, torch::kFloat64), memory, 0, 0));
  }

  Weights w_;
  const core::ModelConfig& c_;
  std::vector<int64_t> ids_, decoder_ids_;
  std::shared_ptr<const core::Trace> trace_;
  bool enc_dec_ = false;
  std::map<core::Stack, std::vector<Layer>> layers_;
  std::map<core::Stack, Norm> final_norm_, embed_norm_;
  core::Stack head_stack_ = core::Stack::Encoder;
  Norm head_norm_;
  Tensor head_ratio_;
  double softcap_ratio_ = 1.0, f_ = 0;
  int64_t position_ = 0, token_ = 0;
};

}  // namespace lrp_reference_detail

// The reference relevance of logit `token` at `position` (a decoder position for an
// encoder-decoder), for a model whose parameters are float64.
inline LrpReference lrp_reference(core::Model& model, const std::vector<int64_t>& ids,
                                  const std::vector<int64_t>& decoder_ids, const core::ModelControls& controls,
                                  int64_t position, int64_t token) {
  torch::NoGradGuard no_grad;
  return lrp_reference_detail::Reference(model, ids, decoder_ids, controls).compute(position, token);
}

// Checks an LRP result value by value against the reference: f, every head of every stack, every
// input position, each to `tolerance` of the largest magnitude of its kind.
inline void check_against_reference(const analysis::LrpResult& r, const LrpReference& ref, double tolerance) {
  CHECK(r.target == Approx(ref.f).epsilon(tolerance));
  double scale = 0;
  for (const auto& [stack, layers] : ref.heads)
    for (const auto& row : layers)
      for (double x : row) scale = std::max(scale, std::abs(x));
  REQUIRE(scale > 1e-3 * std::abs(ref.f));  // the heads matter: the comparison is not between zeros
  for (const auto& [stack, layers] : ref.heads) {
    REQUIRE(r.heads.count(stack) == 1);
    REQUIRE(r.heads.at(stack).size() == layers.size());
    for (size_t l = 0; l < layers.size(); ++l) {
      REQUIRE(r.heads.at(stack)[l].size() == layers[l].size());
      for (size_t i = 0; i < layers[l].size(); ++i) {
        INFO(core::stack_name(stack) << " layer " << l << " head " << i);
        CHECK(r.heads.at(stack)[l][i] == Approx(layers[l][i]).margin(tolerance * scale));
      }
    }
  }
  CHECK(r.heads.size() == ref.heads.size());
  auto inputs = [&](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
    REQUIRE(got.size() == want.size());
    double in_scale = std::abs(ref.f);
    for (double x : want) in_scale = std::max(in_scale, std::abs(x));
    for (size_t t = 0; t < want.size(); ++t) {
      INFO(what << " position " << t);
      CHECK(got[t] == Approx(want[t]).margin(tolerance * in_scale));
    }
  };
  inputs(r.input, ref.input, "input");
  inputs(r.decoder_input, ref.decoder_input, "decoder input");
}

}  // namespace headlab::test
