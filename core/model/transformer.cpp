#include "core/model/transformer.h"

#include "core/model/rope.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace headlab::core {

NormImpl::NormImpl(NormKind kind, int64_t size, float eps, float weight_offset)
    : kind_(kind), eps_(eps), weight_offset_(weight_offset) {
  weight = register_parameter("weight", torch::ones({size}));
  if (kind == NormKind::LayerNorm) bias = register_parameter("bias", torch::zeros({size}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x, bool lrp) {
  // Gemma stores its RMSNorm weights as offsets from 1: output · (1 + w).
  const auto scale = weight_offset_ != 0 ? weight + weight_offset_ : weight;
  if (kind_ == NormKind::LayerNorm) {
    if (!lrp) return torch::layer_norm(x, {x.size(-1)}, scale, bias, eps_);
    auto centred = x - x.mean(-1, true);
    auto std = (centred.pow(2).mean(-1, true) + eps_).sqrt().detach();  // analysis/LRP.md rule 2
    return centred / std * scale + bias;
  }
  auto rms = (x.pow(2).mean(-1, true) + eps_).sqrt();
  if (lrp) rms = rms.detach();  // analysis/LRP.md rule 2
  return x / rms * scale;
}

torch::Tensor activate(const torch::Tensor& z, Activation activation, bool lrp) {
  torch::Tensor a;
  switch (activation) {
    case Activation::Gelu: a = torch::gelu(z); break;                 // erf form (BERT)
    case Activation::GeluTanh: a = torch::gelu(z, "tanh"); break;     // GPT-2's gelu_new
    case Activation::Relu: a = torch::relu(z); break;
    case Activation::Silu: a = torch::silu(z); break;
  }
  if (!lrp) return a;
  // analysis/LRP.md rule 3: z · [act(z) / z] with the bracket constant; at z = 0 the ratio is act'(0).
  const double slope_at_zero = activation == Activation::Relu ? 0.0 : 0.5;
  auto ratio = torch::where(z.eq(0), torch::full_like(z, slope_at_zero), a / z).detach();
  return z * ratio;
}

FeedForwardImpl::FeedForwardImpl(const FfnConfig& config, int64_t hidden_size) : config_(config) {
  const int64_t inner = config.inner_size;
  up = register_module("up", Linear(hidden_size, inner, config.bias));
  if (config.kind == FfnKind::SwiGLU || config.kind == FfnKind::ClampedSwiGLU)
    gate = register_module("gate", Linear(hidden_size, inner, config.bias));
  down = register_module("down", Linear(inner, hidden_size, config.bias));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x, bool lrp) {
  if (config_.kind == FfnKind::Mlp) return down(activate(up(x), config_.activation, lrp));
  // analysis/LRP.md rule 4: a product of two branches splits relevance equally.
  auto split = [&](const torch::Tensor& a, const torch::Tensor& b) {
    return lrp ? 0.5 * (a * b.detach()) + 0.5 * (a.detach() * b) : a * b;
  };
  if (config_.kind == FfnKind::SwiGLU) return down(split(activate(gate(x), config_.activation, lrp), up(x)));
  // ClampedSwiGLU (gpt-oss): g = min(gate, limit), a = g·σ(1.702·g), b = clamp(up, ±limit), out =
  // a ⊙ (b + 1). Under LRP each clamp and the σ are ratios held constant (rule 3), and a ⊙ (b + 1) =
  // a ⊙ b + a: the product splits in halves and the a term passes whole, so nothing is lost to the 1.
  const double limit = config_.limit;
  auto pass = [&](const torch::Tensor& z, const torch::Tensor& f) {
    return lrp ? z * torch::where(z.eq(0), torch::ones_like(z), f / z).detach() : f;
  };
  auto gz = gate(x), uz = up(x);
  auto g = pass(gz, gz.clamp_max(limit));
  auto sigma = torch::sigmoid(1.702 * g);
  auto a = g * (lrp ? sigma.detach() : sigma);
  auto b = pass(uz, uz.clamp(-limit, limit));
  return down(split(a, b) + a);
}

MixtureImpl::MixtureImpl(const FfnConfig& config, int64_t hidden_size) : moe_(*config.moe) {
  router = register_module("router", Linear(hidden_size, moe_.experts, moe_.router_bias));
  if (moe_.choice_bias) choice_bias = register_parameter("router_choice_bias", torch::zeros({moe_.experts}));
  FfnConfig expert = config;
  expert.moe.reset();
  experts = register_module("experts", torch::nn::ModuleList());
  for (int e = 0; e < moe_.experts; ++e) experts->push_back(FeedForward(expert, hidden_size));
  if (moe_.shared_inner_size > 0) {
    FfnConfig one = expert;
    one.inner_size = moe_.shared_inner_size;
    shared = register_module("shared", FeedForward(one, hidden_size));
  }
}

torch::Tensor MixtureImpl::forward(const torch::Tensor& x, bool lrp, torch::Tensor* routing) {
  const int64_t D = x.size(-1);
  auto flat = x.reshape({-1, D});                                 // [N, D]
  const auto logits = router(flat);                               // [N, E]
  const bool sigmoid = moe_.scores == RouterScores::Sigmoid;
  auto probs = sigmoid ? torch::sigmoid(logits) : torch::softmax(logits, -1);  // [N, E]
  // The scores that choose: with DeepSeek-V3's bias, and zero outside the best groups (as transformers'
  // masked_fill(…, 0.0)).
  auto choice = choice_bias.defined() ? probs + choice_bias : probs;
  if (moe_.groups > 1) {
    const int64_t N = choice.size(0), G = moe_.groups, per = moe_.experts / G;
    auto grouped = choice.view({N, G, per});
    auto group_scores = moe_.group_score == GroupScore::Max ? std::get<0>(grouped.max(-1))
                                                            : std::get<0>(grouped.topk(2, -1)).sum(-1);  // [N, G]
    auto best = std::get<1>(group_scores.topk(moe_.top_groups, -1));                                    // [N, g]
    auto keep = torch::zeros_like(group_scores, torch::kBool).scatter(1, best, true);                  // [N, G]
    choice = choice.masked_fill(keep.unsqueeze(-1).expand({N, G, per}).reshape({N, moe_.experts}).logical_not(), 0.0);
  }
  auto top_e = std::get<1>(choice.topk(moe_.top_k, -1));         // [N, k], best first
  auto top_p = probs.gather(1, top_e);                            // [N, k]
  // DeepSeek-V3 adds 1e-20 to the sum (sigmoid scores); softmax scores are positive.
  if (moe_.normalize) top_p = top_p / (top_p.sum(-1, /*keepdim=*/true) + (sigmoid ? 1e-20 : 0.0));
  if (moe_.scale != 1.0f) top_p = top_p * moe_.scale;
  if (lrp) top_p = top_p.detach();
  auto out = torch::zeros_like(flat);
  for (int64_t e = 0; e < moe_.experts; ++e) {
    auto hit = top_e.eq(e);                                       // [N, k]
    auto rows = hit.any(-1).nonzero().view(-1);                   // the tokens routed to e
    if (rows.numel() == 0) continue;
    auto weight = (top_p * hit.to(top_p.dtype())).sum(-1).index_select(0, rows).unsqueeze(1);  // [n, 1]
    auto y = experts[e]->as<FeedForward>()->forward(flat.index_select(0, rows), lrp) * weight;
    out = out.index_add(0, rows, y);
  }
  if (shared) out = out + shared(flat, lrp);
  if (routing) *routing = top_e.view({x.size(0), x.size(1), moe_.top_k});
  return out.view(x.sizes());
}

BlockImpl::BlockImpl(const ModelConfig& model, const StackConfig& stack, bool rotary, int layer)
    : pre_norm_(model.norm_placement == NormPlacement::Pre),
      parallel_(model.parallel_residual),
      rotary_(rotary),
      local_rope_(stack.is_local(layer) && stack.local->rope_theta.has_value()) {
  auto norm = [&] { return Norm(model.norm, model.hidden_size, model.norm_eps, model.norm_weight_offset); };
  const bool out_norms = model.sublayer_output_norm;
  attn = register_module("attn", Attention(stack.layer_attention(layer), model.hidden_size));
  // T5's relative position bias: one table per stack, a parameter of layer 0 (shared with the other
  // layers by TransformerImpl).
  if (const auto& rb = stack.attention.relative_bias; rb && layer <= 0)
    attn->relative_bias =
        attn->register_parameter("relative_bias", torch::zeros({rb->buckets, stack.attention.logit_heads()}));
  // DeBERTa's position table and its LayerNorm: likewise one per stack, in layer 0.
  if (const auto& d = stack.attention.disentangled; d && layer <= 0) {
    attn->rel_embeddings = attn->register_parameter("rel_embeddings", torch::zeros({2 * int64_t(d->span()), model.hidden_size}));
    if (d->table_norm)
      attn->rel_norm = attn->register_module(
          "rel_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({model.hidden_size}).eps(d->table_norm_eps)));
  }
  // Pre-LN blocks without input norms (sublayer_input_norm false), and ModernBERT's layer 0, feed
  // attention the stream itself.
  const bool input_norms = model.sublayer_input_norm;
  if (input_norms && !(layer == 0 && !model.first_attention_norm)) attn_norm = register_module("attn_norm", norm());
  if (out_norms) attn_out_norm = register_module("attn_out_norm", norm());
  if (stack.cross_attention) {
    cross_attn = register_module("cross_attn", Attention(*stack.cross_attention, model.hidden_size));
    cross_norm = register_module("cross_norm", norm());
    if (out_norms) cross_out_norm = register_module("cross_out_norm", norm());
  }
  if (model.ffn.kind == FfnKind::None) return;  // attention only
  if (model.ffn.moe && !model.ffn.moe->is_dense(layer)) {
    moe = register_module("ffn", Mixture(model.ffn, model.hidden_size));
  } else if (model.ffn.moe) {  // MoeConfig::dense_layers: a plain FFN of its own size
    FfnConfig dense = model.ffn;
    dense.moe.reset();
    dense.inner_size = model.ffn.moe->dense_inner_size;
    ffn = register_module("ffn", FeedForward(dense, model.hidden_size));
  } else
    ffn = register_module("ffn", FeedForward(model.ffn, model.hidden_size));
  if (input_norms) ffn_norm = register_module("ffn_norm", norm());
  if (out_norms) ffn_out_norm = register_module("ffn_out_norm", norm());
}

torch::Tensor BlockImpl::feed_forward(const torch::Tensor& x, bool lrp, torch::Tensor* routing) {
  if (moe) return moe->forward(x, lrp, routing);
  return ffn->forward(x, lrp);
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const BlockCall& call, AttentionStages* self_stages,
                                 AttentionStages* cross_stages) {
  auto attend = [&](Attention& module, const torch::Tensor& input, const torch::Tensor& keys, bool self,
                    AttentionStages* stages) {
    AttentionCall a;
    a.query_input = input;
    a.key_input = self ? input : keys;
    a.causal = self && call.causal;
    a.apply_pattern = self;
    a.key_padding = self ? call.padding : call.memory_padding;
    a.controls = self ? call.self_controls : call.cross_controls;
    a.head_gates = self ? call.self_gates : call.cross_gates;
    a.capture = call.capture;
    if (self && rotary_) {
      a.rope = call.rope;
      if (local_rope_ && call.rope.defined()) {
        if (!call.rope.local_cos.defined())
          throw std::logic_error("a local layer with its own RoPE base was called without local rotary tables");
        a.rope = RopeTables{call.rope.local_cos, call.rope.local_sin, {}, {}, call.rope.interleaved};
      }
    }
    a.lrp = call.lrp;
    a.cache = self ? call.self_cache : call.cross_cache;
    a.position = call.position;
    a.patches = self ? call.patches : nullptr;
    return module->forward(a, stages);
  };
  // The FFN's output as it joins the residual stream, with its activation patches.
  auto mlp_out = [&](const torch::Tensor& y) {
    auto out = call.patches && !call.patches->empty() ? apply_patches(y, Site::Mlp, *call.patches) : y;
    if (call.mlp_capture) *call.mlp_capture = out;
    return out;
  };
  auto feed = [&](const torch::Tensor& y) { return feed_forward(y, call.lrp, call.routing_capture); };
  // A norm the block has, or the identity where it has none (input or output norms left out).
  auto norm_or_same = [&](Norm& norm, const torch::Tensor& y) { return norm ? norm(y, call.lrp) : y; };
  torch::Tensor h = x;
  if (parallel_) {  // h + attn(norm_a(h)) + ffn(norm_f(h)): both sublayers read the block's input
    auto attended = attend(attn, norm_or_same(attn_norm, h), {}, true, self_stages);
    return h + attended + mlp_out(feed(norm_or_same(ffn_norm, h)));
  }
  if (pre_norm_) {
    // Sandwich norms when present: h + out_norm(sublayer(norm(h))).
    h = h + norm_or_same(attn_out_norm, attend(attn, norm_or_same(attn_norm, h), {}, true, self_stages));
    if (cross_attn)
      h = h + norm_or_same(cross_out_norm, attend(cross_attn, cross_norm(h, call.lrp), call.memory, false, cross_stages));
    if (!has_ffn()) return h;
    return h + mlp_out(norm_or_same(ffn_out_norm, feed(norm_or_same(ffn_norm, h))));
  }
  // Post-LN (BERT): norm(x + sublayer(x)).
  h = attn_norm(h + attend(attn, h, {}, true, self_stages), call.lrp);
  if (cross_attn) h = cross_norm(h + attend(cross_attn, h, call.memory, false, cross_stages), call.lrp);
  return has_ffn() ? ffn_norm(h + mlp_out(feed(h)), call.lrp) : h;
}

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  config_.validate();
  const auto& c = config_;
  const int64_t E = c.embedding_width();
  tokens = register_module("tokens", Embedding(c.vocab_size, E));
  const bool learned = c.positions == PositionKind::Learned || c.positions == PositionKind::RopeLearned;
  if (learned) positions = register_module("positions", Embedding(c.max_positions, E));
  if (learned && c.stack_embeddings)
    decoder_positions = register_module("decoder_positions", Embedding(c.max_positions, E));
  if (c.positions == PositionKind::Sinusoidal) {
    // Vaswani et al. 2017: angle(p, i) = p / 10000^(2i/E) for i < E/2; interleaved:
    // PE(p, 2i) = sin, PE(p, 2i+1) = cos; halves (Marian): PE(p, i) = sin, PE(p, E/2 + i) = cos.
    using torch::indexing::None;
    using torch::indexing::Slice;
    auto pos = torch::arange(c.max_positions, torch::kFloat64).unsqueeze(1);
    auto i = torch::arange(0, E, 2, torch::kFloat64);
    auto angle = pos / torch::pow(10000.0, i / double(E));  // [P, E/2]
    auto table = torch::zeros({c.max_positions, E}, torch::kFloat64);
    if (c.sinusoid_layout == SinusoidLayout::Halves) {
      table.index_put_({Slice(), Slice(0, E / 2)}, angle.sin());
      table.index_put_({Slice(), Slice(E / 2, None)}, angle.cos());
    } else {
      table.index_put_({Slice(), Slice(0, None, 2)}, angle.sin());
      table.index_put_({Slice(), Slice(1, None, 2)}, angle.cos());
    }
    sinusoid = register_buffer("sinusoid", table.to(torch::kFloat32));
  }
  if (c.type_vocab_size > 0)
    token_types = register_module("token_types", Embedding(c.type_vocab_size, E));
  if (c.embedding_norm) embed_norm = register_module("embed_norm", Norm(c.norm, E, c.norm_eps, c.norm_weight_offset));
  if (c.embedding_norm && c.stack_embeddings)
    decoder_embed_norm = register_module("decoder_embed_norm", Norm(c.norm, E, c.norm_eps, c.norm_weight_offset));
  if (c.embedding_size > 0) embed_project = register_module("embed_project", Linear(E, c.hidden_size));
  auto make_stack = [&](const StackConfig& stack, const char* name, torch::nn::ModuleList& list, Norm& final_norm,
                        const char* norm_name) {
    list = torch::nn::ModuleList();
    // Shared layers: one block, run once per layer (block()); its parameters are stored once.
    const int distinct = stack.shared_layers ? 1 : stack.layers;
    for (int l = 0; l < distinct; ++l) {
      const bool nope = std::count(stack.nope_layers.begin(), stack.nope_layers.end(), l) > 0;
      list->push_back(Block(c, stack, /*rotary=*/!nope, l));
    }
    // Every layer reads the relative position tables of layer 0.
    for (size_t l = 1; l < list->size(); ++l) {
      auto& first = *list->ptr<BlockImpl>(0)->attn;
      auto& attn = *list->ptr<BlockImpl>(l)->attn;
      attn.relative_bias = first.relative_bias;
      attn.rel_embeddings = first.rel_embeddings, attn.rel_norm = first.rel_norm;  // DeBERTa's position table
    }
    register_module(name, list);
    if (c.final_norm)
      final_norm = register_module(norm_name, Norm(c.norm, c.hidden_size, c.norm_eps, c.norm_weight_offset));
  };
  if (c.encoder) make_stack(*c.encoder, "encoder", encoder_layers, encoder_final_norm, "encoder_norm");
  if (c.decoder) make_stack(*c.decoder, "decoder", decoder_layers, decoder_final_norm, "decoder_norm");
  if (c.lm_head.transform) {
    // Back into the embedding space (E = D unless factorised), where a tied decoder reads E_tok.
    head_transform = register_module("head_transform", Linear(c.hidden_size, E));
    head_norm = register_module("head_norm", Norm(c.norm, E, c.norm_eps, c.norm_weight_offset));
  }
  if (!c.lm_head.tied) {
    // A placeholder when a loader fills it right after (core/model/linear.h): an 8B model's head is 2 GB.
    const std::vector<int64_t> shape{c.vocab_size, c.lm_head.transform ? E : c.hidden_size};
    head_weight = register_parameter("head_weight", WeightsArriveLater::active() ? new_weight(shape) : torch::zeros(shape));
  }
  if (c.lm_head.bias) head_bias = register_parameter("head_bias", torch::zeros({c.vocab_size}));
}

torch::Tensor TransformerImpl::embed(const torch::Tensor& ids, const torch::Tensor& types, bool lrp, int64_t offset,
                                     Stack stack) {
  const auto& c = config_;
  const int64_t T = ids.size(1);
  if (offset + T > c.max_positions && c.positions != PositionKind::Rope && c.positions != PositionKind::None)
    throw std::invalid_argument("input has " + std::to_string(offset + T) + " tokens; this model takes at most " +
                                std::to_string(c.max_positions));
  auto bad = ids.lt(0).logical_or(ids.ge(c.vocab_size));
  if (bad.any().item<bool>())
    throw std::invalid_argument("token id " + std::to_string(ids.masked_select(bad)[0].item<int64_t>()) +
                                " is outside the vocabulary (size " + std::to_string(c.vocab_size) + ")");
  auto x = tokens(ids);  // [B, T, D]
  if (c.embedding_scale != 1.0f) x = x * c.embedding_scale;  // Gemma: √hidden
  if (auto& table = position_table(stack)) x = x + table(torch::arange(offset, offset + T, ids.options())).unsqueeze(0);
  if (sinusoid.defined()) x = x + sinusoid.narrow(0, offset, T).unsqueeze(0);
  if (token_types) {
    auto t = types.defined() ? types : torch::zeros_like(ids);
    x = x + token_types(t);
  }
  if (auto& norm = embedding_norm(stack)) x = norm(x, lrp);
  if (embed_project) x = embed_project(x);
  return x;
}

Embedding& TransformerImpl::position_table(Stack stack) {
  return layers_of(stack) == Stack::Decoder && config_.stack_embeddings ? decoder_positions : positions;
}

Norm& TransformerImpl::embedding_norm(Stack stack) {
  return layers_of(stack) == Stack::Decoder && config_.stack_embeddings ? decoder_embed_norm : embed_norm;
}

RopeTables TransformerImpl::rope_tables(int64_t T, Stack stack) const {
  const auto& c = config_;
  if (c.positions != PositionKind::Rope && c.positions != PositionKind::RopeLearned) return {};
  const auto& s = *(stack == Stack::Encoder ? c.encoder : c.decoder);
  const auto& a = s.attention;
  const int64_t head_dim = a.collaborative ? a.collaborative->shared_key_size : a.key_size;
  const int64_t rot = a.latent ? a.latent->rope_size : c.rope_dim > 0 ? c.rope_dim : head_dim;  // MLA: the decoupled part
  // Hugging Face: emb = cat(freqs, freqs) (rotate-half layout), or each angle twice side by side
  // (interleaved: GPT-J's repeat_interleave); cos and sin × the attention factor.
  auto table = [&](const RopeFrequencies& f) {
    auto freqs = torch::outer(torch::arange(T, torch::kFloat64), f.inv_freq);  // [T, rot/2]
    auto emb = c.rope_interleaved ? freqs.repeat_interleave(2, -1) : torch::cat({freqs, freqs}, -1);  // [T, rot]
    const auto on_model = torch::TensorOptions(torch::kFloat32).device(tokens->weight.device());  // computed on the CPU
    return std::make_pair((emb.cos() * f.attention_factor).to(on_model), (emb.sin() * f.attention_factor).to(on_model));
  };
  RopeTables tables;
  tables.interleaved = c.rope_interleaved;
  std::tie(tables.cos, tables.sin) = table(rope_frequencies(c.rope_theta, rot, c.rope_scaling, T, c.max_positions));
  if (s.local && s.local->rope_theta)  // local layers with a base of their own: plain RoPE (Gemma 3)
    std::tie(tables.local_cos, tables.local_sin) = table(rope_frequencies(*s.local->rope_theta, rot, {}, T, c.max_positions));
  return tables;
}

torch::Tensor TransformerImpl::head(const torch::Tensor& hidden, Stack stack, bool lrp) {
  auto h = hidden;
  Norm& final_norm = stack == Stack::Encoder ? encoder_final_norm : decoder_final_norm;
  if (final_norm) h = final_norm(h, lrp);
  if (config_.lm_head.input_scale != 1.0f) h = h * config_.lm_head.input_scale;  // T5 (tied): d_model^-0.5
  if (head_transform) h = head_norm(activate(head_transform(h), config_.ffn.activation, lrp), lrp);
  auto weight = config_.lm_head.tied ? tokens->weight : head_weight;
  // A tied head without transform on factorised embeddings scores against the projected table
  // E_tok·W_projᵀ [V, D] (without the projection's bias, a constant over the vocabulary).
  if (config_.lm_head.tied && !head_transform && embed_project)
    weight = torch::matmul(as_float(weight), as_float(embed_project->weight).t());
  // [B, T, V]; a stored (F16/BF16) table is upcast a few rows at a time (core/model/linear.h).
  auto logits = weight.scalar_type() == h.scalar_type() ? torch::matmul(h, weight.t()) : stored_linear(h, weight);
  if (head_bias.defined()) logits = logits + head_bias;
  if (config_.lm_head.softcap > 0) logits = soft_cap(logits, config_.lm_head.softcap, lrp);  // Gemma 2
  return logits;
}

torch::nn::ModuleList& TransformerImpl::blocks(Stack stack) {
  if (stack == Stack::Encoder && encoder_layers) return encoder_layers;
  if (stack != Stack::Encoder && decoder_layers) return decoder_layers;
  throw std::invalid_argument(std::string("model has no '") + stack_name(layers_of(stack)) + "' stack");
}

Block TransformerImpl::block(Stack stack, int layer) {
  auto& list = blocks(stack);
  const int layers = layer_count(stack);
  if (layer < 0 || layer >= layers)
    throw std::out_of_range(std::string(stack_name(stack)) + " layer " + std::to_string(layer) + " does not exist (" + std::to_string(layers) +
                            " layers)");
  return Block(list->ptr<BlockImpl>(list->size() == 1 ? 0 : layer));
}

int TransformerImpl::layer_count(Stack stack) const {
  if (stack == Stack::Encoder) return config_.encoder ? config_.encoder->layers : 0;
  return config_.decoder ? config_.decoder->layers : 0;
}

void initialize_weights(Transformer& model, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const ModelConfig& config = model->config();
  // Norms start as the identity: scale (offset + w) = 1.
  auto qk_norm_offset = [&](const std::string& name) {
    const bool encoder = name.rfind("encoder.", 0) == 0;
    const auto& stack = encoder ? config.encoder : config.decoder;
    if (!stack) return 0.0f;
    const bool cross = name.find(".cross_attn.") != std::string::npos;
    return cross && stack->cross_attention ? stack->cross_attention->qk_norm_weight_offset
                                           : stack->attention.qk_norm_weight_offset;
  };
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    auto ends_with = [&](const std::string& suffix) {
      return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with("rel_norm.weight")) {  // DeBERTa's position-table LayerNorm (a plain torch LayerNorm)
      p.fill_(1.0);
    } else if (ends_with("norm.weight")) {
      p.fill_(1.0 - config.norm_weight_offset);
    } else if (ends_with(".q_norm") || ends_with(".k_norm")) {
      p.fill_(1.0 - qk_norm_offset(name));
    } else if (ends_with("_latent_norm")) {  // latent attention's RMSNorms start as the identity
      p.fill_(1.0);
    } else if (ends_with("router_choice_bias")) {  // DeepSeek-V3's e_score_correction_bias starts at 0
      p.zero_();
    } else if (ends_with(".bias") || ends_with("head_bias")) {
      p.zero_();
    } else if (ends_with("pre_mix") || ends_with("post_mix")) {
      // Talking-heads mixing starts near the identity so each head begins as an MHA head.
      p.copy_(torch::eye(p.size(0), p.size(1)) + 0.02 * at::normal(0, 1, p.sizes(), generator));
    } else if (ends_with(".mix")) {
      // Collaborative m_i start as block indicators when D̃_k = h·d (an MHA), else as ones, plus noise.
      const int64_t heads = p.size(0), shared = p.size(1);
      auto init = torch::ones({heads, shared});
      if (shared % heads == 0) {
        init.zero_();
        const int64_t d = shared / heads;
        for (int64_t h = 0; h < heads; ++h) init[h].narrow(0, h * d, d).fill_(1.0);
      }
      p.copy_(init + 0.02 * at::normal(0, 1, p.sizes(), generator));
    } else if (ends_with("score_v")) {
      p.copy_(at::normal(0, 1.0 / std::sqrt(double(p.size(1))), p.sizes(), generator));
    } else {
      p.copy_(at::normal(0, 0.02, p.sizes(), generator));
    }
  }
}

std::vector<std::pair<std::string, torch::Tensor>> named_weights(const Transformer& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : model->named_parameters()) out.emplace_back(item.key(), item.value());
  return out;  // buffers (sinusoid) are derived from the config, not stored
}

}  // namespace headlab::core
