// core::run on whole random models: an incremental re-run equals a fresh full run for every layer,
// cancellation and progress, and the pieces a stack adds around attention (RoPE, sinusoidal
// positions, pre-/post-LN blocks) against independent transcriptions.
#include "test_common.h"
#include "random_weights.h"
#include "small_models.h"

#include "core/model/model.h"
#include "core/model/run.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace core = headlab::core;
using headlab::test::max_abs_diff;

namespace {

constexpr double kTol = 1e-5;

using headlab::test::attention;

core::ModelConfig small_model(core::StackKind kind, const core::AttentionConfig& a, int layers = 3) {
  return headlab::test::small_model(kind, a, layers, 23);
}

std::vector<std::pair<std::string, core::ModelConfig>> model_zoo() {
  std::vector<std::pair<std::string, core::ModelConfig>> zoo;
  auto bert = small_model(core::StackKind::Encoder, attention(4, 4, 4, 4));
  bert.norm_placement = core::NormPlacement::Post;
  bert.embedding_norm = true;
  bert.final_norm = false;
  bert.type_vocab_size = 2;
  bert.lm_head.transform = true;
  bert.lm_head.bias = true;
  zoo.emplace_back("encoder, post-LN LayerNorm, learned positions, GELU", bert);

  auto llama = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 2, 4, 4)));
  llama.decoder->attention.out_bias = true;
  zoo.emplace_back("decoder, pre-LN RMSNorm, RoPE, SwiGLU, GQA", llama);

  auto t5 = small_model(core::StackKind::EncoderDecoder, attention(4, 4, 4, 4));
  t5.encoder->layers = 2;
  t5.positions = core::PositionKind::Sinusoidal;
  t5.ffn.activation = core::Activation::Relu;
  zoo.emplace_back("encoder-decoder, pre-LN, sinusoidal, ReLU", t5);

  auto talking = small_model(core::StackKind::Encoder, attention(3, 3, 4, 4));
  talking.encoder->attention.talking_heads = core::TalkingHeads{3, 4, 2};
  talking.encoder->attention.pattern = {2, 1, {0}};
  talking.norm_placement = core::NormPlacement::Post;
  talking.final_norm = false;
  zoo.emplace_back("encoder, talking-heads, Longformer pattern, post-LN", talking);

  auto collab = small_model(core::StackKind::Decoder, attention(4, 4, 4, 4));
  collab.decoder->attention.collaborative = core::Collaborative{10};
  collab.positions = core::PositionKind::Rope;
  collab.ffn.kind = core::FfnKind::SwiGLU;
  collab.ffn.activation = core::Activation::Silu;
  zoo.emplace_back("decoder, collaborative, RoPE", collab);

  // The newer engine options, each in a model of its own kind.
  auto sinks = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 2, 4, 4)));
  sinks.decoder->attention.sinks = true;
  sinks.decoder->attention.qkv_bias = true;
  sinks.ffn.kind = core::FfnKind::ClampedSwiGLU;
  sinks.ffn.limit = 0.05f;  // below the random model's projections: the clamp acts
  sinks.ffn.moe = core::MoeConfig{};
  sinks.ffn.moe->experts = 4;
  sinks.ffn.moe->top_k = 2;
  sinks.ffn.moe->router_bias = true;
  zoo.emplace_back("decoder, learned sinks, GQA, a clamped-GLU mixture of experts (gpt-oss)", sinks);

  auto alibi = small_model(core::StackKind::Encoder, attention(3, 3, 4, 4));
  alibi.positions = core::PositionKind::None;
  alibi.encoder->attention.alibi = true;
  alibi.encoder->attention.sinks = true;
  zoo.emplace_back("encoder, ALiBi with 3 heads, sinks, no position table", alibi);

  auto alibi_decoder = small_model(core::StackKind::Decoder, attention(4, 4, 4, 4));
  alibi_decoder.positions = core::PositionKind::None;
  alibi_decoder.embedding_norm = true;
  alibi_decoder.decoder->attention.alibi = true;
  zoo.emplace_back("decoder, ALiBi, embedding norm (BLOOM)", alibi_decoder);

  auto latent = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 4, 6, 4)));
  latent.decoder->attention.latent = core::LatentAttention{8, 6, 2, 1e-6f};
  latent.rope_interleaved = true;
  latent.ffn.moe = headlab::test::deepseek_v3_router(8, 20);
  zoo.emplace_back("decoder, latent attention with a query latent, DeepSeek-V3's grouped sigmoid router", latent);

  auto deberta = small_model(core::StackKind::Encoder, attention(4, 4, 4, 4));
  deberta.positions = core::PositionKind::None;
  deberta.norm_placement = core::NormPlacement::Post;
  deberta.embedding_norm = true;
  deberta.final_norm = false;
  deberta.encoder->attention.disentangled = core::Disentangled{4, 8, true, true, false, true, 1e-7f};
  zoo.emplace_back("encoder, disentangled attention, log buckets, projections of its own (DeBERTa)", deberta);

  auto neox = small_model(core::StackKind::Decoder, attention(4, 4, 4, 4));
  neox.positions = core::PositionKind::Rope;
  neox.rope_dim = 2;
  neox.parallel_residual = true;
  zoo.emplace_back("decoder, half of each head rotating (rotate-half), parallel residual (GPT-NeoX)", neox);

  auto gptj = neox;
  gptj.rope_interleaved = true;
  gptj.decoder->nope_layers = {1};
  zoo.emplace_back("decoder, partial interleaved RoPE (GPT-J), a NoPE layer", gptj);

  auto llama31 = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 2, 4, 4)));
  llama31.rope_scaling.kind = core::RopeScalingKind::Llama3;
  llama31.rope_scaling.factor = 8;
  llama31.rope_scaling.original_max_positions = 16;
  llama31.decoder->nope_layers = {0, 2};
  zoo.emplace_back("decoder, llama3-scaled RoPE, NoPE layers 0 and 2", llama31);

  auto yarn = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 4, 8, 4)));
  yarn.rope_scaling.kind = core::RopeScalingKind::Yarn;
  yarn.rope_scaling.factor = 4;
  yarn.rope_scaling.original_max_positions = 8;
  yarn.rope_scaling.attention_factor = 1.2;
  yarn.rope_dim = 4;
  zoo.emplace_back("decoder, YaRN-scaled RoPE on half of each head", yarn);

  auto olmo2 = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 4, 4, 4)));
  olmo2.sublayer_input_norm = false;
  olmo2.sublayer_output_norm = true;
  olmo2.decoder->attention.qk_norm = true;
  olmo2.decoder->attention.qk_norm_whole = true;
  zoo.emplace_back("decoder, OLMo 2: norms after each sublayer, q/k norms over the whole projections", olmo2);

  auto olmo = headlab::test::llama_like(small_model(core::StackKind::Decoder, attention(4, 4, 4, 4)));
  olmo.norm = core::NormKind::LayerNorm;
  olmo.decoder->attention.qkv_clip = 0.05f;  // below the random model's projections: the clip acts
  zoo.emplace_back("decoder, OLMo: q, k and v clipped", olmo);
  return zoo;
}

core::RunRequest request_for(const core::ModelConfig& c) {
  core::RunRequest r;
  r.ids = {1, 5, 9, 2, 17, 4, 11};
  if (c.kind == core::StackKind::EncoderDecoder) r.decoder_ids = {3, 8, 8, 20, 6};
  if (c.type_vocab_size > 0) r.token_types = {0, 0, 0, 1, 1, 1, 1};
  r.capture = core::kCaptureAll;
  return r;
}

void compare_stages(const core::AttentionStages& a, const core::AttentionStages& b) {
  const std::pair<const torch::Tensor*, const torch::Tensor*> pairs[] = {{&a.logits, &b.logits},
                                                                         {&a.mixed_logits, &b.mixed_logits},
                                                                         {&a.weights, &b.weights},
                                                                         {&a.mixed_weights, &b.mixed_weights},
                                                                         {&a.head_outputs, &b.head_outputs},
                                                                         {&a.sink_share, &b.sink_share}};
  for (const auto& [x, y] : pairs) {
    REQUIRE(x->defined() == y->defined());
    if (x->defined()) CHECK(max_abs_diff(*x, *y) < kTol);
  }
}

// Every captured tensor of two traces: logits, residual streams, every layer's maps.
void compare_traces(const core::Trace& a, const core::Trace& b) {
  CHECK(max_abs_diff(a.logits, b.logits) < kTol);
  for (auto stack : {&core::Trace::encoder, &core::Trace::decoder}) {
    const core::StackTrace &x = a.*stack, &y = b.*stack;
    REQUIRE(x.layers.size() == y.layers.size());
    REQUIRE(x.hidden.size() == y.hidden.size());
    for (size_t l = 0; l < x.hidden.size(); ++l) CHECK(max_abs_diff(x.hidden[l], y.hidden[l]) < kTol);
    for (size_t l = 0; l < x.layers.size(); ++l) {
      INFO("layer " << l);
      REQUIRE(x.layers[l].self.weights.defined());
      compare_stages(x.layers[l].self, y.layers[l].self);
      compare_stages(x.layers[l].cross, y.layers[l].cross);
      // A mixture of experts: each token's experts [T, top_k].
      REQUIRE(x.layers[l].experts.defined() == y.layers[l].experts.defined());
      if (x.layers[l].experts.defined()) CHECK(torch::equal(x.layers[l].experts, y.layers[l].experts));
    }
  }
}

// A control change that moves this layer's output: a half-closed gate and a head swap before the softmax.
void change(core::HeadControls& controls, int softmax_heads) {
  controls.gates = {1.0f, 0.2f};
  controls.pre_mix.assign(size_t(softmax_heads) * softmax_heads, 0.0f);
  for (int i = 0; i < softmax_heads; ++i) controls.pre_mix[size_t(i) * softmax_heads + (softmax_heads - 1 - i)] = 1.0f;
}

// HF rotate-half RoPE, written out per pair: (x_i, x_{i+r/2}) turns by p·θ^(−2i/r).
torch::Tensor rope_reference(const torch::Tensor& x /*[H, T, d]*/, int64_t rot, double theta) {
  auto out = x.to(torch::kFloat64).clone();
  auto in = x.to(torch::kFloat64);
  auto a = in.accessor<double, 3>();
  auto o = out.accessor<double, 3>();
  for (int64_t h = 0; h < x.size(0); ++h)
    for (int64_t p = 0; p < x.size(1); ++p)
      for (int64_t i = 0; i < rot / 2; ++i) {
        const double angle = p / std::pow(theta, 2.0 * i / rot);
        const double x1 = a[h][p][i], x2 = a[h][p][i + rot / 2];
        o[h][p][i] = x1 * std::cos(angle) - x2 * std::sin(angle);  // x·cos + (−x2)·sin
        o[h][p][i + rot / 2] = x2 * std::cos(angle) + x1 * std::sin(angle);  // x·cos + x1·sin
      }
  return out;
}

void randomize(torch::nn::Module& m, double scale) {
  torch::NoGradGuard no_grad;
  for (auto& item : m.named_parameters()) {
    const bool norm_weight = item.key().find("norm.weight") != std::string::npos;
    item.value().copy_((norm_weight ? 1.0 : 0.0) + torch::randn(item.value().sizes()) * scale);
  }
}

}  // namespace

TEST_CASE("an incremental run equals a fresh full run for every layer", "[run][incremental]") {
  for (const auto& [name, config] : model_zoo()) {
    INFO(name);
    auto model = core::make_random_model(config, 42);
    const auto base_request = request_for(config);
    auto base = core::run(*model, base_request);
    REQUIRE(base->logits.defined());
    const bool enc_dec = config.kind == core::StackKind::EncoderDecoder;
    const int enc_layers = config.encoder ? config.encoder->layers : 0;
    const int dec_layers = config.decoder ? config.decoder->layers : 0;
    CHECK(base->layers_computed == enc_layers + dec_layers);
    CHECK(base->recomputed_from == 0);
    // Unchanged controls: the previous trace itself comes back.
    auto same = base_request;
    same.previous = base;
    CHECK(core::run(*model, same) == base);

    using headlab::core::Stack;
    std::vector<Stack> stacks;
    if (config.encoder) stacks.push_back(Stack::Encoder);
    if (config.decoder) stacks.push_back(Stack::Decoder);
    if (enc_dec) stacks.push_back(Stack::Cross);
    for (const auto& stack : stacks) {
      const Stack owner = stack == Stack::Cross ? Stack::Decoder : stack;
      const auto& stack_config = owner == Stack::Encoder ? *config.encoder : *config.decoder;
      const auto& attention = stack == Stack::Cross ? *stack_config.cross_attention : stack_config.attention;
      const int layers = stack_config.layers;
      for (int L = 0; L < layers; ++L) {
        INFO(stack << " layer " << L);
        auto request = base_request;
        change(request.controls.at(stack, L), attention.softmax_heads());
        request.previous = base;
        auto incremental = core::run(*model, request);
        request.previous = nullptr;
        auto fresh = core::run(*model, request);
        CHECK(max_abs_diff(fresh->logits, base->logits) > 1e-6);  // the change matters
        compare_traces(*incremental, *fresh);
        CHECK(incremental->recomputed_stack == owner);
        CHECK(incremental->recomputed_from == L);
        // A new encoder output changes every decoder layer too.
        const int expected = layers - L + (enc_dec && owner == Stack::Encoder ? dec_layers : 0);
        CHECK(incremental->layers_computed == expected);
        CHECK(incremental->controls.get(stack, L) == request.controls.get(stack, L));

        // From that trace, a change at the last layer recomputes the last layer only.
        auto again = request;
        change(again.controls.at(owner, layers - 1), stack_config.attention.softmax_heads());
        again.controls.at(owner, layers - 1).gates = {0.5f};
        again.previous = incremental;
        auto chained = core::run(*model, again);
        again.previous = nullptr;
        compare_traces(*chained, *core::run(*model, again));
        CHECK(chained->recomputed_stack == owner);
        CHECK(chained->recomputed_from == layers - 1);
        CHECK(chained->layers_computed == 1 + (enc_dec && owner == Stack::Encoder ? dec_layers : 0));
      }
    }
  }
}

// Head controls in a whole model against the same edits made to its weights (Concat_i(g_i·head_i) W_O):
// in layer 1 of the first stack, head 1 at a gate of 0.3 is W_O's columns of head 1 × 0.3, and a
// post-softmax swap of heads 0 and 1 (U_0 = W_1, U_1 = W_0) is their value rows and W_O columns
// exchanged — or W_O's columns alone where the two heads read one stored value head (GQA).
TEST_CASE("a gate and a post-softmax swap in a whole model equal the same edits to W_O and W_V, every model of the zoo",
          "[run][controls]") {
  torch::NoGradGuard no_grad;
  for (const auto& [name, config] : model_zoo()) {
    INFO(name);
    const auto stack = config.encoder ? core::Stack::Encoder : core::Stack::Decoder;
    const auto& attention = (config.encoder ? *config.encoder : *config.decoder).attention;
    const int hv = attention.output_heads(), dv = attention.value_size;
    const int stored = attention.latent ? attention.heads : attention.value_heads_stored();
    const bool own_values = stored == hv;
    REQUIRE((own_values || hv / stored >= 2));  // heads 0 and 1 read one stored value head
    auto model = headlab::test::unit_scale_model(config, 42, true);  // weights at which every head matters
    auto request = request_for(config);
    const auto base = core::run(*model, request);
    auto& controls = request.controls.at(stack, 1);
    controls.gates.assign(size_t(hv), 1.0f);
    controls.gates[1] = 0.3f;
    controls.post_mix.assign(size_t(hv) * hv, 0.0f);
    for (int i = 0; i < hv; ++i) controls.post_mix[size_t(i) * hv + (i < 2 ? 1 - i : i)] = 1.0f;
    const auto controlled = core::run(*model, request);

    auto edited = headlab::test::unit_scale_model(config, 42, true);
    auto params = edited->module->named_parameters();
    const std::string layer = std::string(stack == core::Stack::Encoder ? "encoder" : "decoder") + ".1.attn.";
    auto swap_blocks = [&](torch::Tensor t, int64_t dim, int64_t size) {  // heads 0 and 1's blocks along dim
      auto first = t.narrow(dim, 0, size).clone();
      t.narrow(dim, 0, size).copy_(t.narrow(dim, size, size));
      t.narrow(dim, size, size).copy_(first);
    };
    auto& o = params[layer + "o.weight"];  // [D, h_v·d_v]
    // The gate scales O_1 = U_1 V_1 = W_0 V_1: head 1's block of W_O × 0.3, which the swap gives head 0.
    o.narrow(1, dv, dv).mul_(0.3);
    swap_blocks(o, 1, dv);
    if (own_values) {
      swap_blocks(params[layer + "v.weight"], 0, dv);  // [h_v·d_v, D or the latent]
      if (params.contains(layer + "v.bias")) swap_blocks(params[layer + "v.bias"], 0, dv);
    }
    const auto by_hand = core::run(*edited, request_for(config));
    const double scale = base->logits.abs().max().item<double>();
    CHECK(max_abs_diff(controlled->logits, by_hand->logits) < kTol * scale);
    CHECK(max_abs_diff(controlled->logits, base->logits) > 1e-2 * scale);  // the controls act
  }
}

TEST_CASE("logits at chosen positions are those rows of the full head, moving them runs the head only", "[run][logits]") {
  for (const auto& [name, config] : model_zoo()) {
    INFO(name);
    auto model = core::make_random_model(config, 11);
    auto request = request_for(config);
    auto full = core::run(*model, request);
    const int64_t T = full->logits.size(0);
    REQUIRE(T >= 3);
    CHECK(full->logit_positions.empty());
    const std::vector<int64_t> picked = {T - 1, 0, 1};
    auto chosen = request;
    chosen.logit_positions = picked;
    auto part = core::run(*model, chosen);
    REQUIRE(part->logits.size(0) == 3);
    CHECK(part->logit_positions == picked);
    for (size_t i = 0; i < picked.size(); ++i)
      CHECK(max_abs_diff(part->logits[static_cast<int64_t>(i)], full->logits[picked[i]]) < kTol);
    // Same controls, other positions: no layer runs, the layers' tensors are shared.
    auto moved = chosen;
    moved.logit_positions = {1};
    moved.previous = part;
    auto head_only = core::run(*model, moved);
    CHECK(head_only != part);
    CHECK(head_only->layers_computed == 0);
    CHECK(head_only->main_stack().layers.back().self.weights.data_ptr() ==
          part->main_stack().layers.back().self.weights.data_ptr());
    REQUIRE(head_only->logits.size(0) == 1);
    CHECK(max_abs_diff(head_only->logits[0], full->logits[1]) < kTol);
    // Back to every position from there, then a position outside the text.
    moved.logit_positions.clear();
    moved.previous = head_only;
    CHECK(max_abs_diff(core::run(*model, moved)->logits, full->logits) < kTol);
    moved.logit_positions = {T};
    CHECK_THROWS_WITH(core::run(*model, moved), Catch::Contains("logit position"));
  }
}

TEST_CASE("progress is reported once per layer, the cancel flag and a false callback cancel", "[run][progress]") {
  auto zoo = model_zoo();
  for (const auto& [name, config] : {zoo[1], zoo[2]}) {
    INFO(name);
    auto model = core::make_random_model(config, 7);
    const int total = (config.encoder ? config.encoder->layers : 0) + config.decoder->layers;
    std::vector<std::pair<int, int>> calls;
    auto request = request_for(config);
    request.progress = [&](int done, int of) {
      calls.emplace_back(done, of);
      return true;
    };
    auto base = core::run(*model, request);
    REQUIRE(int(calls.size()) == total);
    for (int i = 0; i < total; ++i) CHECK(calls[i] == std::make_pair(i + 1, total));

    calls.clear();
    request.previous = base;
    request.controls.at(headlab::core::Stack::Decoder, 1).gates = {0.0f};
    core::run(*model, request);
    const int expected = config.decoder->layers - 1;
    REQUIRE(int(calls.size()) == expected);
    for (int i = 0; i < expected; ++i) CHECK(calls[i] == std::make_pair(i + 1, expected));

    std::atomic<bool> cancel{true};
    auto cancelled = request_for(config);
    cancelled.cancel = &cancel;
    CHECK_THROWS_AS(core::run(*model, cancelled), core::Cancelled);
    cancel = false;
    CHECK_NOTHROW(core::run(*model, cancelled));

    int seen = 0;
    auto refused = request_for(config);
    refused.progress = [&](int done, int) {
      ++seen;
      return done < 2;  // stop after the second layer
    };
    CHECK_THROWS_AS(core::run(*model, refused), core::Cancelled);
    CHECK(seen == 2);
  }
}

TEST_CASE("RoPE matches Hugging Face's rotate-half transcription", "[run][rope]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(21);
  for (int rope_dim : {0, 4}) {
    auto config = small_model(core::StackKind::Decoder, attention(4, 2, 8, 4), 2);
    config.positions = core::PositionKind::Rope;
    config.rope_theta = 500.0f;
    config.rope_dim = rope_dim;
    config.norm = core::NormKind::RMSNorm;
    const int64_t rot = rope_dim > 0 ? rope_dim : 8, T = 7;
    INFO("rope_dim " << rope_dim);
    auto model = core::make_random_model(config, 3);
    randomize(*model->module, 0.3);

    auto tables = model->module->rope_tables(T, headlab::core::Stack::Decoder);
    REQUIRE(tables.defined());
    auto x = torch::randn({1, 3, T, 8});
    CHECK(max_abs_diff(core::apply_rope(x, tables)[0], rope_reference(x[0], rot, 500.0)) < kTol);

    // End to end: layer l's logits J from its input hidden[l], by hand.
    auto request = request_for(config);
    auto trace = core::run(*model, request);
    for (int l = 0; l < 2; ++l) {
      auto block = model->module->block(headlab::core::Stack::Decoder, l);
      auto h = trace->decoder.hidden[l].to(torch::kFloat64);  // [T, D]
      auto n = h / (h.pow(2).mean(-1, true) + config.norm_eps).sqrt() * block->attn_norm->weight.to(torch::kFloat64);
      auto project = [&](const core::Linear& p, int64_t heads) {  // n Wᵀ + b → [heads, T, 8]
        auto y = torch::matmul(n, p->weight.to(torch::kFloat64).t()) + p->bias.to(torch::kFloat64);
        return y.view({T, heads, 8}).transpose(0, 1);
      };
      auto q = project(block->attn->q, 4), k = project(block->attn->k, 2);
      q = rope_reference(q, rot, 500.0);
      k = rope_reference(k, rot, 500.0);
      auto logits = torch::zeros({4, T, T}, torch::kFloat64);
      for (int64_t i = 0; i < 4; ++i) logits[i] = torch::matmul(q[i], k[i / 2].t()) / std::sqrt(8.0);
      CHECK(max_abs_diff(trace->main_stack().layers[l].self.logits, logits) < kTol);
    }
  }
}

TEST_CASE("sinusoidal positions are Vaswani et al.'s sin/cos table", "[run][positions]") {
  auto config = small_model(core::StackKind::Encoder, attention(4, 4, 4, 4), 1);
  config.positions = core::PositionKind::Sinusoidal;
  auto model = core::make_random_model(config, 5);
  auto request = request_for(config);
  auto trace = core::run(*model, request);
  auto ids = torch::tensor(request.ids, torch::kLong);
  auto positional = trace->encoder.hidden[0] - model->module->tokens->weight.index_select(0, ids);  // [T, D]
  auto expected = torch::zeros({7, 16}, torch::kFloat64);
  for (int p = 0; p < 7; ++p)
    for (int i = 0; i < 8; ++i) {
      const double angle = p / std::pow(10000.0, 2.0 * i / 16);
      expected[p][2 * i] = std::sin(angle);
      expected[p][2 * i + 1] = std::cos(angle);
    }
  CHECK(max_abs_diff(positional, expected) < kTol);
}

TEST_CASE("rope+learned is RoPE with a learned table added to the embeddings", "[run][positions]") {
  torch::NoGradGuard no_grad;
  auto rope = small_model(core::StackKind::Encoder, attention(4, 4, 4, 4), 2);
  rope.positions = core::PositionKind::Rope;
  auto hybrid = rope;
  hybrid.positions = core::PositionKind::RopeLearned;
  CHECK(hybrid.parameter_count() - rope.parameter_count() == int64_t(rope.max_positions) * rope.hidden_size);
  auto a = core::make_random_model(hybrid, 5);
  auto b = core::make_random_model(rope, 6);
  auto from = a->module->named_parameters();
  for (auto& p : b->module->named_parameters()) p.value().copy_(from[p.key()]);
  auto request = request_for(hybrid);
  auto ha = core::run(*a, request);
  // Layer 0's input is token + learned position; RoPE still rotates q and k inside attention.
  auto ids = torch::tensor(request.ids, torch::kLong);
  const int64_t T = static_cast<int64_t>(request.ids.size());
  auto expected = a->module->tokens->weight.index_select(0, ids) + a->module->positions->weight.narrow(0, 0, T);
  CHECK(max_abs_diff(ha->encoder.hidden[0], expected) < kTol);
  CHECK(a->module->rope_tables(T, headlab::core::Stack::Encoder).defined());
  CHECK(max_abs_diff(ha->logits, core::run(*b, request)->logits) > 1e-4);  // the table matters
  a->module->positions->weight.zero_();
  CHECK(max_abs_diff(core::run(*a, request)->logits, core::run(*b, request)->logits) < kTol);
  CHECK(core::model_config_from_json(core::to_json(hybrid)).positions == core::PositionKind::RopeLearned);
  CHECK(core::to_json(hybrid)["positions"] == "rope+learned");
}

TEST_CASE("a NoPE layer of a RoPE model attends by content alone", "[run][positions]") {
  torch::NoGradGuard no_grad;
  auto rope = small_model(core::StackKind::Encoder, attention(4, 4, 4, 4), 2);
  rope.positions = core::PositionKind::Rope;
  auto nope0 = rope;
  nope0.encoder->nope_layers = {0};
  auto none = rope;
  none.positions = core::PositionKind::None;
  auto a = core::make_random_model(nope0, 5);
  auto copy_into = [&](const core::ModelConfig& config) {
    auto m = core::make_random_model(config, 6);
    auto from = a->module->named_parameters();
    for (auto& p : m->module->named_parameters()) p.value().copy_(from[p.key()]);
    return m;
  };
  auto b = copy_into(rope), c = copy_into(none);
  const auto request = request_for(nope0);
  auto ta = core::run(*a, request), tb = core::run(*b, request), tc = core::run(*c, request);
  const auto& la = ta->encoder.layers;
  // Layer 0: the same logits as with no positions at all, unlike the RoPE model's.
  CHECK(max_abs_diff(la[0].self.logits, tc->encoder.layers[0].self.logits) < kTol);
  CHECK(max_abs_diff(la[0].self.logits, tb->encoder.layers[0].self.logits) > 1e-4);
  // Layer 1 still rotates: on the same input (layer 0's output) it differs from the no-position model.
  CHECK(max_abs_diff(ta->encoder.hidden[1], tc->encoder.hidden[1]) < kTol);
  CHECK(max_abs_diff(la[1].self.logits, tc->encoder.layers[1].self.logits) > 1e-4);
  // Layer 0 is permutation-equivariant: reversing the tokens reverses its map.
  auto reversed = request;
  std::reverse(reversed.ids.begin(), reversed.ids.end());
  auto tr = core::run(*a, reversed);
  CHECK(max_abs_diff(tr->encoder.layers[0].self.logits, la[0].self.logits.flip({-2, -1})) < kTol);
}

TEST_CASE("pre-LN and post-LN blocks match a transcription of their equations", "[run][block]") {
  torch::NoGradGuard no_grad;
  torch::manual_seed(22);
  const int64_t T = 6, D = 16, H = 4, d = 4;
  for (auto placement : {core::NormPlacement::Post, core::NormPlacement::Pre}) {
    for (auto ffn : {core::FfnKind::Mlp, core::FfnKind::SwiGLU}) {
      auto config = small_model(core::StackKind::Decoder, attention(H, H, d, d), 1);
      config.norm_placement = placement;
      config.ffn.kind = ffn;
      config.ffn.activation = ffn == core::FfnKind::Mlp ? core::Activation::Gelu : core::Activation::Silu;
      config.norm_eps = 1e-5f;
      INFO((placement == core::NormPlacement::Pre ? "pre-LN" : "post-LN") << (ffn == core::FfnKind::Mlp ? " GELU MLP" : " SwiGLU"));
      core::Block block(config, *config.decoder);
      randomize(*block, 0.3);
      auto x = torch::randn({1, T, D});
      core::BlockCall call;
      call.causal = true;
      auto got = block->forward(x, call, nullptr, nullptr)[0];

      auto f64 = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
      auto linear = [&](const torch::Tensor& v, const core::Linear& l) {
        auto y = torch::matmul(v, f64(l->weight).t());
        return l->bias.defined() ? y + f64(l->bias) : y;
      };
      auto layer_norm = [&](const torch::Tensor& v, core::NormImpl& n) {  // (x − μ)/√(σ² + ε)·γ + β
        auto mu = v.mean(-1, true);
        auto var = (v - mu).pow(2).mean(-1, true);
        return (v - mu) / (var + 1e-5).sqrt() * f64(n.weight) + f64(n.bias);
      };
      auto attend = [&](const torch::Tensor& v) {  // causal MHA, one head at a time
        auto& a = *block->attn;
        auto q = linear(v, a.q), k = linear(v, a.k), val = linear(v, a.v);
        std::vector<torch::Tensor> heads;
        for (int64_t i = 0; i < H; ++i) {
          auto s = torch::matmul(q.narrow(1, i * d, d), k.narrow(1, i * d, d).t()) / std::sqrt(double(d));
          s = s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY);
          heads.push_back(torch::matmul(torch::softmax(s, -1), val.narrow(1, i * d, d)));
        }
        return linear(torch::cat(heads, 1), a.o);
      };
      auto feed_forward = [&](const torch::Tensor& v) {
        auto& f = *block->ffn;
        if (ffn == core::FfnKind::Mlp) {
          auto u = linear(v, f.up);
          return linear(0.5 * u * (1 + torch::erf(u / std::sqrt(2.0))), f.down);  // exact GELU
        }
        auto g = linear(v, f.gate);
        return linear(g * torch::sigmoid(g) * linear(v, f.up), f.down);  // SiLU(xW_g) ⊙ xW_u
      };
      auto X = f64(x[0]);
      torch::Tensor expected;
      if (placement == core::NormPlacement::Post) {
        auto h = layer_norm(X + attend(X), *block->attn_norm);  // Vaswani et al. / BERT
        expected = layer_norm(h + feed_forward(h), *block->ffn_norm);
      } else {
        auto h = X + attend(layer_norm(X, *block->attn_norm));  // GPT-2 / Xiong et al. 2020
        expected = h + feed_forward(layer_norm(h, *block->ffn_norm));
      }
      CHECK(max_abs_diff(got, expected) < kTol);
    }
  }
}
