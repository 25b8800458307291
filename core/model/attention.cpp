#include "core/model/attention.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace headlab::core {
namespace {

// Row-major [n, n] user matrix → tensor; validates the size.
torch::Tensor user_matrix(const std::vector<float>& values, int64_t n, const char* what) {
  if (static_cast<int64_t>(values.size()) != n * n)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(n * n) + " values (" +
                                std::to_string(n) + "×" + std::to_string(n) + "), got " + std::to_string(values.size()));
  return torch::tensor(values, torch::kFloat32).view({n, n});
}

// Mixes the head axis: out[b, j, t, s] = Σ_i x[b, i, t, s] · m[i, j].
// out[b, j, t, s] = Σ_i x[b, i, t, s] m[i, j], as one batched matmul: LibTorch's einsum for this
// contraction is ~6× slower forward+backward (measured on [32, 8, 64, 64], 1 thread).
torch::Tensor mix_heads(const torch::Tensor& x, const torch::Tensor& m) {
  const int64_t B = x.size(0), T = x.size(2), S = x.size(3);
  return torch::matmul(m.t(), x.reshape({B, x.size(1), T * S})).view({B, m.size(1), T, S});
}

}  // namespace

torch::Tensor attention_allowed(int64_t T, int64_t S, bool causal, const AttentionPattern& pattern) {
  return attention_allowed(torch::arange(T, torch::kLong), torch::arange(S, torch::kLong), causal, pattern);
}

torch::Tensor attention_allowed(const torch::Tensor& query_positions, const torch::Tensor& key_positions, bool causal,
                                const AttentionPattern& pattern) {
  const int64_t T = query_positions.size(0), S = key_positions.size(0);
  auto t = query_positions.unsqueeze(1);  // [T, 1]
  auto s = key_positions.unsqueeze(0);    // [1, S]
  auto distance = t - s;                  // [T, S]
  auto allowed = torch::ones({T, S}, query_positions.options().dtype(torch::kBool));
  if (pattern.window > 0) {
    const int64_t d = pattern.dilation;
    allowed = distance.abs().le(int64_t(pattern.window) * d);
    if (d > 1) allowed = allowed.logical_and(distance.remainder(d).eq(0));
  } else if (pattern.dilation > 1) {
    allowed = distance.remainder(pattern.dilation).eq(0);
  }
  for (int g : pattern.global_tokens) {
    allowed = allowed.logical_or(t.eq(g));  // a global token sees every key
    allowed = allowed.logical_or(s.eq(g));  // and every query sees it
  }
  if (causal) allowed = allowed.logical_and(distance.ge(0));
  return allowed;
}

torch::Tensor relative_position_buckets(const torch::Tensor& query_positions, const torch::Tensor& key_positions,
                                        int buckets, int max_distance, bool bidirectional) {
  auto relative = key_positions.view({1, -1}) - query_positions.view({-1, 1});  // [T, S]: memory − context
  auto bucket = torch::zeros_like(relative);
  int64_t n = buckets;
  if (bidirectional) {
    n /= 2;
    bucket = bucket + relative.gt(0).to(torch::kLong) * n;
    relative = relative.abs();
  } else {
    relative = -torch::clamp_max(relative, 0);
  }
  // Half the buckets are exact offsets; the rest grow logarithmically up to max_distance.
  const int64_t max_exact = n / 2;
  const auto small = relative.lt(max_exact);
  auto large = max_exact + (torch::log(relative.to(torch::kFloat32) / float(max_exact)) /
                            static_cast<float>(std::log(double(max_distance) / double(max_exact))) *
                            float(n - max_exact))
                               .to(torch::kLong);
  large = torch::clamp_max(large, n - 1);
  return bucket + torch::where(small, relative, large);
}

torch::Tensor disentangled_position_rows(const torch::Tensor& query_positions, const torch::Tensor& key_positions,
                                         const Disentangled& d) {
  auto relative = query_positions.view({-1, 1}) - key_positions.view({1, -1});  // [T, S]: i − j
  if (d.buckets > 0) {
    // make_log_bucket_position: offsets within ±mid keep their value; beyond, ⌈log(|δ|/mid) /
    // log((max_distance − 1)/mid) · (mid − 1)⌉ + mid with δ's sign.
    const int64_t mid = d.buckets / 2;
    const auto sign = relative.sign();
    const auto near = relative.lt(mid).logical_and(relative.gt(-mid));
    const auto magnitude = torch::where(near, torch::full_like(relative, mid - 1), relative.abs());
    const auto denominator = torch::log(torch::tensor(static_cast<float>(double(d.max_distance - 1) / double(mid))));
    const auto logarithmic =
        torch::ceil(torch::log(magnitude.to(torch::kFloat32) / float(mid)) / denominator.to(relative.device()) * float(mid - 1)) + float(mid);
    relative = torch::where(magnitude.le(mid), relative.to(torch::kFloat32), logarithmic * sign.to(torch::kFloat32))
                   .to(torch::kLong);
  }
  const int64_t span = d.span();
  return torch::clamp(relative + span, 0, 2 * span - 1);
}

torch::Tensor soft_cap(const torch::Tensor& x, float cap, bool lrp) {
  auto capped = torch::tanh(x / cap) * cap;
  if (!lrp) return capped;
  auto ratio = torch::where(x.eq(0), torch::ones_like(x), capped / x).detach();  // the slope at 0 is 1
  return x * ratio;
}

torch::Tensor alibi_slopes(int64_t heads) {
  const int64_t closest = int64_t(1) << static_cast<int64_t>(std::floor(std::log2(static_cast<double>(heads))));
  auto base_of = [](int64_t n) {  // 2^(−2^−(log₂ n − 3)) = 2^(−8/n), rounded to float32 as BLOOM's tensor is
    return torch::tensor(static_cast<float>(std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3)))), torch::kFloat32);
  };
  auto slopes = torch::pow(base_of(closest), torch::arange(1, 1 + closest, torch::kInt32));
  if (closest != heads) {
    const int64_t remaining = std::min(closest, heads - closest);
    slopes = torch::cat({slopes, torch::pow(base_of(2 * closest), torch::arange(1, 1 + 2 * remaining, 2, torch::kInt32))});
  }
  return slopes;  // [heads]
}

torch::Tensor apply_rope(const torch::Tensor& x, const RopeTables& tables, int64_t offset) {
  const int64_t rot = tables.cos.size(1);
  const int64_t T = x.size(2);
  if (offset + T > tables.cos.size(0))
    throw std::logic_error("rotary tables of " + std::to_string(tables.cos.size(0)) + " positions used for position " +
                           std::to_string(offset + T - 1));
  auto cos = tables.cos.slice(0, offset, offset + T);  // [T, rot]
  auto sin = tables.sin.slice(0, offset, offset + T);
  auto rotated = x.narrow(-1, 0, rot);
  torch::Tensor turned;  // x rotated a quarter turn within each pair
  if (tables.interleaved) {
    // GPT-J's rotate_every_two: (x₀, x₁, x₂, x₃, …) → (−x₁, x₀, −x₃, x₂, …)
    auto even = rotated.slice(-1, 0, rot, 2), odd = rotated.slice(-1, 1, rot, 2);
    turned = torch::stack({-odd, even}, -1).flatten(-2);
  } else {
    auto half1 = rotated.narrow(-1, 0, rot / 2);
    auto half2 = rotated.narrow(-1, rot / 2, rot / 2);
    turned = torch::cat({-half2, half1}, -1);
  }
  auto out = rotated * cos + turned * sin;
  if (rot == x.size(-1)) return out;
  return torch::cat({out, x.narrow(-1, rot, x.size(-1) - rot)}, -1);
}

AttentionImpl::AttentionImpl(const AttentionConfig& config, int hidden_size) : config_(config) {
  const auto& c = config_;
  const int64_t D = hidden_size;
  if (c.latent) {
    const auto& m = *c.latent;
    const int64_t H = c.heads;
    if (m.q_rank > 0) {
      q_down = register_module("q_down", Linear(D, m.q_rank, c.qkv_bias));
      q_latent_norm = register_parameter("q_latent_norm", torch::ones({m.q_rank}));
    }
    q = register_module("q", Linear(m.q_rank > 0 ? m.q_rank : D, H * c.key_size, false));
    kv_down = register_module("kv_down", Linear(D, m.kv_rank + m.rope_size, c.qkv_bias));
    kv_latent_norm = register_parameter("kv_latent_norm", torch::ones({m.kv_rank}));
    k = register_module("k", Linear(m.kv_rank, H * (c.key_size - m.rope_size), false));
    v = register_module("v", Linear(m.kv_rank, H * c.value_size, false));
  } else if (c.collaborative) {
    const int64_t shared = c.collaborative->shared_key_size;
    // No query/key biases: the paper re-parametrises them into one content bias per head.
    q = register_module("q", Linear(D, shared, false));
    k = register_module("k", Linear(D, shared, false));
    mix = register_parameter("mix", torch::ones({c.heads, shared}));
    if (c.qkv_bias) content_bias = register_parameter("content_bias", torch::zeros({c.heads, D}));
  } else {
    q = register_module("q", Linear(D, int64_t(c.heads) * c.key_size, c.qkv_bias));
    k = register_module("k",
                        Linear(D, int64_t(c.kv_heads) * c.key_size, c.qkv_bias));
  }
  if (!c.latent) v = register_module("v", Linear(D, int64_t(c.value_heads_stored()) * c.value_size, c.qkv_bias));
  o = register_module("o",
                      Linear(int64_t(c.output_heads()) * c.value_size, D, c.out_bias));
  if (c.talking_heads) {
    pre_mix = register_parameter("pre_mix", torch::eye(c.logit_heads(), c.softmax_heads()));
    post_mix = register_parameter("post_mix", torch::eye(c.softmax_heads(), c.output_heads()));
  }
  if (c.scoring == Scoring::Additive) score_v = register_parameter("score_v", torch::ones({c.heads, c.key_size}));
  if (c.sinks) sinks = register_parameter("sinks", torch::zeros({c.softmax_heads()}));
  if (c.qk_norm) {  // per head [d_k], or over the whole projections [heads · d_k], [kv_heads · d_k]
    q_norm = register_parameter("q_norm", torch::ones({c.qk_norm_whole ? int64_t(c.heads) * c.key_size : c.key_size}));
    k_norm = register_parameter("k_norm", torch::ones({c.qk_norm_whole ? int64_t(c.kv_heads) * c.key_size : c.key_size}));
  }
  if (c.disentangled && !c.disentangled->shared_keys) {  // the position table's own projections, with biases
    if (c.disentangled->c2p) pos_k = register_module("pos_k", Linear(D, int64_t(c.heads) * c.key_size, true));
    if (c.disentangled->p2c) pos_q = register_module("pos_q", Linear(D, int64_t(c.heads) * c.key_size, true));
  }
}

torch::Tensor AttentionImpl::disentangled_scores(const torch::Tensor& q_heads, const torch::Tensor& k_heads,
                                                 int64_t offset, const torch::Tensor& key_positions) const {
  const auto& c = config_;
  const auto& d = *c.disentangled;
  if (!rel_embeddings.defined()) throw std::logic_error("disentangled attention: the stack's position table was not set");
  const int64_t B = q_heads.size(0), H = q_heads.size(1), T = q_heads.size(2), S = k_heads.size(2), dk = c.key_size;
  const auto query_positions = torch::arange(offset, offset + T, key_positions.options());
  auto rows = disentangled_position_rows(query_positions, key_positions, d);  // [T, S]
  // Only the table rows these offsets reach are projected (a short input reads a few of 2·span).
  const int64_t first = rows.min().item<int64_t>(), count = rows.max().item<int64_t>() - first + 1;
  rows = rows - first;
  // The table in float32 at least whatever the run's precision (it is small); float64 in a float64 run.
  const auto table_type = q_heads.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  auto table = rel_embeddings.narrow(0, first, count).to(q_heads.device(), table_type);  // [n, D]
  if (rel_norm)
    table = torch::layer_norm(table, {table.size(1)}, rel_norm->weight.to(table.options()), rel_norm->bias.to(table.options()),
                              d.table_norm_eps);
  // The table through one of this layer's projections, per head: [n, D] → [1, h, n, d_k].
  auto per_head = [&](const Linear& projection) {
    return stored_linear(table, projection->weight, projection->bias).to(q_heads.dtype()).view({1, count, H, dk}).permute({0, 2, 1, 3});
  };
  torch::Tensor c2p, p2c;  // [B, h, T, S]
  if (d.c2p) {  // q_i · k^P_{row(i, j)}
    const auto position_keys = per_head(d.shared_keys ? k : pos_k);
    const auto all = torch::matmul(q_heads, position_keys.transpose(-1, -2));  // [B, h, T, n]
    c2p = all.gather(-1, rows.view({1, 1, T, S}).expand({B, H, T, S}));
  }
  if (d.p2c) {  // k_j · q^P_{row(i, j)} (transformers indexes −δ(j, i), the same row: the buckets are odd)
    const auto position_queries = per_head(d.shared_keys ? q : pos_q);
    const auto all = torch::matmul(k_heads, position_queries.transpose(-1, -2));  // [B, h, S, n]
    p2c = all.gather(-1, rows.t().contiguous().view({1, 1, S, T}).expand({B, H, S, T})).transpose(-1, -2);
  }
  return c2p.defined() && p2c.defined() ? c2p + p2c : c2p.defined() ? c2p : p2c;  // validate() asks for one
}

void AttentionImpl::forget_unreachable(LayerCache& cache, int64_t next) const {
  // A later query p >= next reaches key s only when p - s <= window · dilation (Longformer), unless
  // s is a global token, or a global query still to come sees every key.
  const auto& p = config_.pattern;
  if (p.window <= 0) return;
  for (int g : p.global_tokens)
    if (g >= next) return;
  auto keep = (next - cache.positions).le(int64_t(p.window) * std::max(1, p.dilation));
  for (int g : p.global_tokens) keep = keep.logical_or(cache.positions.eq(g));
  if (keep.all().item<bool>()) return;
  const auto index = keep.nonzero().view(-1);
  cache.keys = cache.keys.index_select(2, index);
  if (cache.values.defined()) cache.values = cache.values.index_select(2, index);
  if (cache.latent.defined()) cache.latent = cache.latent.index_select(2, index);
  if (cache.key_bias.defined()) cache.key_bias = cache.key_bias.index_select(3, index);
  cache.positions = cache.positions.index_select(0, index);
}

std::pair<torch::Tensor, torch::Tensor> AttentionImpl::latent_keys_values(const torch::Tensor& latent,
                                                                          const torch::Tensor& rope_key) {
  // latent [B, 1, S, d_c], rope_key [B, 1, S, d_R] → keys [B, h, S, d_k] = [W_UK^h c ; k_R], values [B, h, S, d_v]
  const auto& c = config_;
  const int64_t B = latent.size(0), S = latent.size(2), H = c.heads, dR = c.latent->rope_size;
  auto flat = latent.squeeze(1);                                                               // [B, S, d_c]
  auto content = k(flat).view({B, S, H, c.key_size - dR}).transpose(1, 2);                     // [B, h, S, d_k − d_R]
  auto keys = torch::cat({content, rope_key.expand({B, H, S, dR})}, -1);
  auto values = v(flat).view({B, S, H, c.value_size}).transpose(1, 2);
  return {keys, values};
}

torch::Tensor AttentionImpl::scores(const torch::Tensor& q_heads, const torch::Tensor& k_heads) const {
  // q_heads [B, h_k, T, d], k_heads [B, h_k, S, d] → J [B, h_k, T, S]
  const float scale = config_.logit_scale();
  if (config_.scoring == Scoring::Dot) return torch::matmul(q_heads, k_heads.transpose(-1, -2)) * scale;
  // Additive (Bahdanau et al. 2015): e_ts = vᵀ tanh(W_q q_t + W_k k_s); W_q, W_k are this layer's
  // query/key projections. One head at a time keeps the [T, S, d] intermediate small.
  std::vector<torch::Tensor> per_head;
  per_head.reserve(q_heads.size(1));
  for (int64_t h = 0; h < q_heads.size(1); ++h) {
    auto qh = q_heads.select(1, h).unsqueeze(2);       // [B, T, 1, d]
    auto kh = k_heads.select(1, h).unsqueeze(1);       // [B, 1, S, d]
    auto e = torch::matmul(torch::tanh(qh + kh), score_v[h]);  // [B, T, S]
    per_head.push_back(e);
  }
  return torch::stack(per_head, 1) * scale;
}

torch::Tensor AttentionImpl::forward(const AttentionCall& call, AttentionStages* stages) {
  const auto& c = config_;
  const auto& x = call.query_input;
  const auto& y = call.key_input;
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t h = c.softmax_heads(), h_v = c.output_heads();
  LayerCache* cache = call.cache;
  const bool self = call.apply_pattern;  // cross-attention ignores the pattern
  // Cross-attention keys and values already cached: key_input is not read again.
  const bool cached_memory = cache && !self && cache->keys.defined();
  if (cache && call.key_padding.defined()) throw std::invalid_argument("generation runs one sequence: no key padding");
  const int64_t offset = cache && self ? call.position : 0;  // the new tokens' first position
  const auto positions_on = torch::TensorOptions(torch::kLong).device(x.device());  // position indices, beside x
  // OLMo's clip_qkv: a projection's output clamped to [−c, c]. Under LRP the clamp is an element-wise
  // activation whose ratio is held constant (analysis/LRP.md rule 3), so relevance passes it unchanged.
  auto clipped = [&](torch::Tensor t) {
    if (!(c.qkv_clip > 0)) return t;
    auto clamped = t.clamp(-c.qkv_clip, c.qkv_clip);
    if (!call.lrp) return clamped;
    return t * torch::where(t.eq(0), torch::ones_like(t), clamped / t).detach();
  };

  // An RMSNorm of the last dim scaled by `w`: the q/k norms (Qwen3, OLMo 2) and the latents' (MLA). With
  // LRP the root-mean-square is a constant (analysis/LRP.md rule 2).
  auto rms_normalise = [&](const torch::Tensor& t, const torch::Tensor& w, double eps) {
    auto rms = (t.pow(2).mean(-1, true) + eps).sqrt();
    return t / (call.lrp ? rms.detach() : rms) * w;
  };
  torch::Tensor q_heads, k_heads;  // [B, h_k, T, d], [B, h_k, S, d]
  torch::Tensor k_new, v_new, bias_new;  // this call's keys (before GQA's repeat), values, content bias
  // Multi-head latent attention: this call's key/value latent [B, 1, S, d_c] and rotated key [B, 1, S, d_R].
  torch::Tensor latent_new, rope_key_new;
  if (c.latent) {
    const auto& m = *c.latent;
    const int64_t dR = m.rope_size, dN = c.key_size - dR;
    auto latent_norm = [&](const torch::Tensor& t, const torch::Tensor& w) { return rms_normalise(t, w, m.norm_eps); };
    auto qx = m.q_rank > 0 ? q(latent_norm(q_down(x), q_latent_norm)) : q(x);  // [B, T, heads · d_k]
    q_heads = qx.view({B, T, c.heads, c.key_size}).transpose(1, 2);              // [B, h, T, d_k] = [q_C ; q_R]
    if (call.rope.defined())
      q_heads = torch::cat({q_heads.narrow(-1, 0, dN), apply_rope(q_heads.narrow(-1, dN, dR), call.rope, offset)}, -1);
    auto compressed = kv_down(y);  // [B, S, d_c + d_R]
    latent_new = latent_norm(compressed.narrow(-1, 0, m.kv_rank), kv_latent_norm).unsqueeze(1);  // [B, 1, S, d_c]
    rope_key_new = compressed.narrow(-1, m.kv_rank, dR).unsqueeze(1);                           // [B, 1, S, d_R]
    if (call.rope.defined()) rope_key_new = apply_rope(rope_key_new, call.rope, offset);
    if (!cache) std::tie(k_new, v_new) = latent_keys_values(latent_new, rope_key_new);
  } else if (c.collaborative) {
    const int64_t shared = c.collaborative->shared_key_size;
    auto qs = q(x).view({B, 1, T, shared});  // X W̃_Q
    if (call.rope.defined()) qs = apply_rope(qs, call.rope, offset);
    q_heads = qs * mix.view({1, c.heads, 1, shared});  // X W̃_Q diag(m_i)
    if (!cached_memory) {
      k_new = k(y).view({B, 1, y.size(1), shared});  // X W̃_K
      if (call.rope.defined()) k_new = apply_rope(k_new, call.rope, offset);
    }
  } else {
    // RMSNorm of the queries and keys before RoPE, per head over d_k (Qwen3) or over the whole
    // projection (OLMo 2).
    auto rms_norm = [&](const torch::Tensor& t, const torch::Tensor& w) {
      return rms_normalise(t, c.qk_norm_weight_offset != 0 ? w + c.qk_norm_weight_offset : w, c.qk_norm_eps);
    };
    const bool whole = c.qk_norm && c.qk_norm_whole;
    auto qx = clipped(q(x));  // [B, T, heads · d_k]
    if (whole) qx = rms_norm(qx, q_norm);
    q_heads = qx.view({B, T, c.heads, c.key_size}).transpose(1, 2);
    if (!cached_memory) {
      auto ky = clipped(k(y));  // [B, S, kv_heads · d_k]
      if (whole) ky = rms_norm(ky, k_norm);
      k_new = ky.view({B, y.size(1), c.kv_heads, c.key_size}).transpose(1, 2);
    }
    if (c.qk_norm && !whole) {
      q_heads = rms_norm(q_heads, q_norm);
      if (k_new.defined()) k_new = rms_norm(k_new, k_norm);
    }
    if (call.rope.defined()) {
      q_heads = apply_rope(q_heads, call.rope, offset);
      if (k_new.defined()) k_new = apply_rope(k_new, call.rope, offset);
    }
  }
  const bool patched = call.patches && !call.patches->empty();
  if (patched && cache) throw std::invalid_argument("activation patches need the whole sequence, not a cache");
  if (patched) {
    q_heads = apply_patches(q_heads, Site::Q, *call.patches);
    k_new = apply_patches(k_new, Site::K, *call.patches);
  }
  if (!cached_memory && !c.latent) {
    v_new = clipped(v(y)).view({B, y.size(1), c.value_heads_stored(), c.value_size}).transpose(1, 2);  // [B, kv, S, d_v]
    // Collaborative content bias r_iᵀ x_s, per key.
    if (content_bias.defined()) bias_new = torch::matmul(y, content_bias.t()).transpose(1, 2).unsqueeze(2);  // [B, h, 1, S]
  }

  if (patched) v_new = apply_patches(v_new, Site::V, *call.patches);

  // The keys this call attends to: its own, or the cache's with its own appended.
  torch::Tensor keys = k_new, values = v_new, key_bias = bias_new, key_positions;
  if (cache) {
    if (cached_memory) {
      keys = cache->keys, values = cache->values, key_bias = cache->key_bias;
    } else {
      // A sliding window's keys that no query from here on reaches leave before the new ones join.
      if (self && call.causal && cache->positions.defined()) forget_unreachable(*cache, offset);
      const auto positions = self ? torch::arange(offset, offset + y.size(1), positions_on)
                                  : torch::arange(y.size(1), positions_on);
      auto append = [](const torch::Tensor& old, const torch::Tensor& add, int64_t dim) {
        return old.defined() && add.defined() ? torch::cat({old, add}, dim) : add;
      };
      if (c.latent) {  // the latents and rotated keys are kept, and read through the absorbed projections below
        cache->keys = keys = append(cache->keys, rope_key_new, 2);
        cache->latent = append(cache->latent, latent_new, 2);
      } else {
        cache->keys = keys = append(cache->keys, k_new, 2);
        cache->values = values = append(cache->values, v_new, 2);
      }
      cache->key_bias = key_bias = append(cache->key_bias, bias_new, 3);
      cache->positions = append(cache->positions, positions, 0);
    }
    key_positions = cache->positions;
  }
  const int64_t S = keys.size(2);
  // Multi-head latent attention from the cache: the keys and values are never expanded per head. As the
  // paper's inference does, W_UK is absorbed into the queries and W_UV applied after the weights:
  // q_C·(W_UK c) = (q_C W_UK)·c and Σ_s w_s W_UV c_s = W_UV Σ_s w_s c_s.
  const bool absorbed = c.latent && cache;
  torch::Tensor latent_all;  // [B, 1, S, d_c]
  if (absorbed) {
    latent_all = cache->latent;
  } else if (c.collaborative) {
    k_heads = keys.expand({B, c.heads, S, c.collaborative->shared_key_size});
  } else {
    k_heads = keys;
    // GQA/MQA: query head i reads kv head i / (heads / kv_heads), as Hugging Face's repeat_kv.
    if (c.kv_heads != c.heads) k_heads = k_heads.repeat_interleave(c.heads / c.kv_heads, 1);
  }
  auto v_heads = values;
  if (v_heads.defined() && c.value_heads_stored() != h_v) v_heads = v_heads.repeat_interleave(h_v / c.value_heads_stored(), 1);

  torch::Tensor J;  // [B, h_k, T, S]
  if (absorbed) {
    const int64_t dR = c.latent->rope_size, dN = c.key_size - dR;
    const auto up_keys = k->weight.view({1, c.heads, dN, c.latent->kv_rank}).to(q_heads.dtype());  // W_UK per head
    const auto absorbed_queries = torch::matmul(q_heads.narrow(-1, 0, dN), up_keys);                 // [B, h, T, d_c]
    J = (torch::matmul(absorbed_queries, latent_all.transpose(-1, -2)) +
         torch::matmul(q_heads.narrow(-1, dN, dR), keys.transpose(-1, -2))) * c.logit_scale();
  } else {
    J = scores(q_heads, k_heads);
  }
  // Collaborative content bias r_iᵀ x_s, added before the scale as in the authors' code.
  if (key_bias.defined()) J = J + key_bias * c.logit_scale();
  if (self && c.alibi) {
    // Press et al. 2022: −m_h · |i − j| after the scale (BLOOM adds m_h · j, equal within each query's row).
    const auto query_positions = torch::arange(offset, offset + T, positions_on);
    const auto keys_at = key_positions.defined() ? key_positions : torch::arange(S, positions_on);
    const auto distance = (query_positions.unsqueeze(1) - keys_at.unsqueeze(0)).abs().to(J.scalar_type());  // [T, S]
    const auto slopes = alibi_slopes(J.size(1)).to(J.options()).view({1, -1, 1, 1});
    J = J - slopes * distance;
  }
  if (self && c.disentangled) {
    // DeBERTa: content-to-position and position-to-content logits, at the content logits' scale.
    const auto keys_at = key_positions.defined() ? key_positions : torch::arange(S, positions_on);
    J = J + disentangled_scores(q_heads, k_heads, offset, keys_at) * c.logit_scale();
  }
  if (self && c.relative_bias) {
    // T5: one learned scalar per head and bucket of the key's offset, after the (unit) scale; an
    // encoder's buckets see both directions, a causal decoder's only the past.
    if (!relative_bias.defined()) throw std::logic_error("relative_bias: the stack's shared table was not set");
    const auto query_positions = torch::arange(offset, offset + T, positions_on);
    const auto keys_at = key_positions.defined() ? key_positions : torch::arange(S, positions_on);
    const auto buckets = relative_position_buckets(query_positions, keys_at, c.relative_bias->buckets,
                                                   c.relative_bias->max_distance, !call.causal);  // [T, S]
    const int64_t hk = relative_bias.size(1);
    J = J + relative_bias.index_select(0, buckets.flatten()).view({T, S, hk}).permute({2, 0, 1}).unsqueeze(0);
  }
  // Soft-capping bounds every logit to (−cap, cap) before the mask (Gemma 2's attn_logit_softcapping).
  // Under LRP the weights are constants (rule 1), so the cap needs no rule of its own here.
  if (c.logit_softcap > 0) J = soft_cap(J, c.logit_softcap);
  auto L = c.talking_heads ? mix_heads(J, pre_mix) : J;  // [B, h, T, S]
  const HeadControls* controls = call.controls;
  if (controls && !controls->pre_mix.empty()) L = mix_heads(L, user_matrix(controls->pre_mix, h, "pre_mix").to(L.options()));

  // The mask is applied after mixing (Shazeer et al.: masking precedes the softmax, follows P_l).
  auto allowed = !self ? torch::ones({T, S}, positions_on.dtype(torch::kBool))
                 : attention_allowed(torch::arange(offset, offset + T, positions_on),
                                     cache ? key_positions : torch::arange(S, positions_on), call.causal, c.pattern);  // [T, S]
  auto blocked = allowed.logical_not().view({1, 1, T, S});
  if (call.key_padding.defined()) blocked = blocked.logical_or(call.key_padding.view({B, 1, 1, S}));
  // The lowest finite value, not -inf: a fully blocked row gives a uniform row instead of NaN.
  auto masked = L.masked_fill(blocked, std::numeric_limits<float>::lowest());  // [B, h, T, S]
  torch::Tensor W, sink_share;  // [B, h, T, S], [B, h, T]
  if (self && c.sinks) {
    // gpt-oss: the sink logit s_h joins each row's softmax as one more key and is dropped after it.
    auto sink = sinks.to(L.dtype()).view({1, h, 1, 1}).expand({B, h, T, 1});
    auto P = torch::softmax(torch::cat({masked, sink}, -1), -1);  // [B, h, T, S + 1]
    W = P.narrow(-1, 0, S);
    sink_share = P.select(-1, S);
  } else {
    W = torch::softmax(masked, -1);
  }
  if (patched) W = apply_patches(W, Site::Pattern, *call.patches);
  auto W_used = call.lrp ? W.detach() : W;  // analysis/LRP.md rule 1

  auto U = c.talking_heads ? mix_heads(W_used, post_mix) : W_used;  // [B, h_v, T, S]
  if (controls && !controls->post_mix.empty()) U = mix_heads(U, user_matrix(controls->post_mix, h_v, "post_mix").to(U.options()));
  torch::Tensor O;  // [B, h_v, T, d_v] — the paper's O = einsum(U, V)
  if (absorbed) {
    const auto up_values = v->weight.view({1, c.heads, c.value_size, c.latent->kv_rank}).to(U.dtype());  // W_UV
    O = torch::matmul(torch::matmul(U, latent_all), up_values.transpose(-1, -2));
  } else {
    O = torch::matmul(U, v_heads);
  }
  if (patched) O = apply_patches(O, Site::Z, *call.patches);

  auto gated = O;
  if (controls && !controls->gates.empty()) {
    if (static_cast<int64_t>(controls->gates.size()) > h_v)
      throw std::invalid_argument("gates: layer has " + std::to_string(h_v) + " heads, got " +
                                  std::to_string(controls->gates.size()) + " gates");
    std::vector<float> g(h_v, 1.0f);
    for (size_t i = 0; i < controls->gates.size(); ++i) g[i] = controls->gates[i];
    auto gate = torch::tensor(g, torch::kFloat32).to(O.options()).view({1, h_v, 1, 1});  // in the run's precision
    if (controls->ablation == Ablation::Zero) {
      gated = O * gate;  // Voita et al. 2019: Concat_i(g_i·head_i) W_O
    } else {
      torch::Tensor mean;  // [B or 1, h_v, 1, d_v]
      if (!controls->mean_outputs.empty()) {
        if (static_cast<int64_t>(controls->mean_outputs.size()) != h_v * c.value_size)
          throw std::invalid_argument("mean_outputs: expected heads × value_size = " +
                                      std::to_string(h_v * c.value_size) + " values");
        mean = torch::tensor(controls->mean_outputs, torch::kFloat32).to(O.options()).view({1, h_v, 1, c.value_size});
      } else {
        // The mean over every position of the input: generation has not seen the later positions.
        if (cache)
          throw std::invalid_argument("mean ablation over the input's own positions needs the whole sequence; "
                                      "generate with zero ablation or with dataset means");
        // Kept in the graph: the mean is linear in O, so gradients through an ablated layer (head
        // importance, LRP) follow it exactly as the forward pass does.
        mean = O.mean(2, /*keepdim=*/true);
      }
      gated = O * gate + mean * (1 - gate);
    }
  }
  if (call.head_gates.defined()) {
    if (call.head_gates.dim() != 2 || call.head_gates.size(1) != h_v)
      throw std::invalid_argument("head gates: layer has " + std::to_string(h_v) + " heads, got a tensor of shape " +
                                  c10::str(call.head_gates.sizes()));
    gated = gated * call.head_gates.view({call.head_gates.size(0), h_v, 1, 1});
  }
  auto out = o(gated.transpose(1, 2).reshape({B, T, h_v * c.value_size}));  // [B, T, D]

  if (stages) {
    const unsigned cap = call.capture;
    if (cap & kCaptureLogits) stages->logits = J;
    if (cap & kCaptureMixedLogits) stages->mixed_logits = L;
    if (cap & kCaptureWeights) {
      stages->weights = W;
      stages->sink_share = sink_share;
    }
    if (cap & kCaptureMixedWeights) stages->mixed_weights = U;
    if (cap & kCaptureHeadOutputs) {
      stages->head_outputs = O;
      stages->gated_outputs = gated;
    }
    if (cap & kCapturePatchSites) {
      stages->queries = q_heads;
      stages->keys = k_new;
      stages->values = v_new;
    }
  }
  return out;
}

}  // namespace headlab::core
