// DeepSeek-V2 and DeepSeek-V3 (modeling_deepseek_v2.py, modeling_deepseek_v3.py): Llama's pre-RMSNorm
// decoder with multi-head latent attention (the engine's AttentionConfig::latent) and a mixture of
// experts with shared experts after the first first_k_dense_replace dense layers → ModelConfig +
// native parameter sources.
#include "core/families/families.h"
#include "core/families/family_parts.h"
#include "core/families/rope_parameters.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace headlab::core::hf {

using nlohmann::json;

namespace {

// An optional rank: null or absent = none (q_lora_rank: null in DeepSeek-V2-Lite).
int optional_rank(const HfConfig& c, const char* key, int fallback) {
  if (!c.contains(key)) return fallback;
  return c.find(key) ? c.integer(key) : 0;
}

// The scaled-RoPE object as the folder writes it (transformers 4: rope_scaling; 5: rope_parameters).
const json* rope_object(const HfConfig& c) {
  if (const json* r = c.find("rope_scaling")) return r;
  return c.find("rope_parameters");
}

}  // namespace

// DeepseekV2Attention / DeepseekV3Attention: q = q_proj(x), or q_b_proj(RMSNorm(q_a_proj(x))) with
// q_lora_rank; [latent | k_rot] = kv_a_proj_with_mqa(x); kv_b_proj(RMSNorm(latent)) per head [k_pass |
// v] (rows [heads, qk_nope + v_head_dim]); q_rot and k_rot rotate over qk_rope_head_dim — pairs
// (x_{2i}, x_{2i+1}) in V2 (apply_rotary_emb's complex product) and in V3 with rope_interleave (its
// default), rotate-half otherwise; logits × (qk_nope + qk_rope)^-½, in V3 also × mscale² when the
// rope object has mscale_all_dim (yarn_get_mscale). MoE layers (from first_k_dense_replace on): V2's
// softmax router, top-k ("greedy") or within the topk_group groups of the best expert
// ("group_limited_greedy"), weights × routed_scaling_factor, not renormalised; V3's sigmoid router,
// e_score_correction_bias added to choose, groups ranked by their best two, the top-k weights
// renormalised (norm_topk_prob) and × routed_scaling_factor; shared experts of n_shared_experts ·
// moe_intermediate_size beside them. Experts are read per expert (mlp.experts.{e}.{gate,up,down}_proj,
// as the hub's checkpoints store them) or stacked (mlp.experts.gate_up_proj [E, 2I, D], down_proj
// [E, D, I], as transformers 5 writes them).
Layout deepseek_layout(const FamilyInput& in) {
  const HfConfig& c = in.config;
  const bool v3 = in.family == "deepseek_v3";
  const int default_positions = v3 ? 4096 : 2048;
  const RopeSettings rope = read_rope(c, c.integer("max_position_embeddings", default_positions), 10000.0);
  if (rope.rotary_fraction != 1.0)
    c.fail("partial_rotary_factor " + json(rope.rotary_fraction).dump() + " is not supported (DeepSeek rotates "
           "qk_rope_head_dim dims of each head)");
  const std::string act = c.string("hidden_act", "silu");
  if (act != "silu" && act != "swish") c.fail("hidden_act '" + act + "' is not supported (the experts' GLU needs silu)");
  Layout layout = rope_decoder_layout(c, in.family, default_positions, rope.theta);
  ModelConfig& m = layout.config;
  m.rope_scaling = rope.scaling;
  m.rope_interleaved = v3 ? c.boolean("rope_interleave", true) : true;
  m.final_norm = true;

  const int heads = c.integer("num_attention_heads", v3 ? 128 : 32);
  const int kv_heads = c.integer("num_key_value_heads", heads);
  if (kv_heads != heads)
    c.fail("num_key_value_heads (" + std::to_string(kv_heads) + ") must equal num_attention_heads (" +
           std::to_string(heads) + "): latent attention gives every head its own keys and values");
  const int nope = c.integer("qk_nope_head_dim", 128), rot = c.integer("qk_rope_head_dim", 64);
  const int value = c.integer("v_head_dim", 128);
  const bool bias = c.boolean("attention_bias", false);
  StackConfig stack;
  stack.layers = c.integer("num_hidden_layers", v3 ? 61 : 32);
  stack.attention = attention(heads, heads, nope + rot, bias, bias);
  stack.attention.value_size = value;
  LatentAttention latent;
  latent.kv_rank = c.integer("kv_lora_rank", 512);
  latent.q_rank = optional_rank(c, "q_lora_rank", 1536);
  latent.rope_size = rot;
  latent.norm_eps = 1e-6f;  // DeepseekV2RMSNorm / DeepseekV3RMSNorm's default: the latents' norms are built without rms_norm_eps
  stack.attention.latent = latent;
  double scale = 1.0 / std::sqrt(double(nope + rot));
  if (v3)
    if (const json* r = rope_object(c); r && r->is_object() && r->contains("mscale_all_dim") && (*r)["mscale_all_dim"].is_number()) {
      const double all_dim = (*r)["mscale_all_dim"].get<double>();
      const double mscale = all_dim != 0 ? yarn_mscale(r->value("factor", 1.0), all_dim) : 1.0;
      scale *= mscale * mscale;
    }
  stack.attention.scale = static_cast<float>(scale);

  // The experts.
  const int inner = c.integer("intermediate_size", v3 ? 18432 : 11008);
  const int expert_inner = c.integer("moe_intermediate_size", v3 ? 2048 : 1407);
  m.ffn = ffn_config(FfnKind::SwiGLU, expert_inner, Activation::Silu, v3 ? false : c.boolean("mlp_bias", false));
  MoeConfig moe;
  moe.experts = c.integer("n_routed_experts", v3 ? 256 : 64);
  moe.top_k = c.integer("num_experts_per_tok", v3 ? 8 : 0);  // DeepseekV2Config: None, which cannot run
  if (moe.experts < 1 || moe.top_k < 1 || moe.top_k > moe.experts)
    c.fail("num_experts_per_tok (" + std::to_string(moe.top_k) + ") must be in 1..n_routed_experts (" +
           std::to_string(moe.experts) + ")");
  moe.scale = static_cast<float>(c.number("routed_scaling_factor", v3 ? 2.5 : 1.0));
  const int shared = optional_rank(c, "n_shared_experts", v3 ? 1 : 2);
  moe.shared_inner_size = shared * expert_inner;
  if (v3) {
    moe.scores = RouterScores::Sigmoid;
    moe.choice_bias = true;
    moe.normalize = c.boolean("norm_topk_prob", true);
    moe.groups = c.integer("n_group", 8);
    moe.top_groups = c.integer("topk_group", 4);
    moe.group_score = GroupScore::TopTwoSum;
  } else {
    moe.normalize = false;  // modeling_deepseek_v2.py does not read norm_topk_prob
    const std::string method = c.string("topk_method", "greedy");
    if (method == "group_limited_greedy") {
      moe.groups = c.integer("n_group");
      moe.top_groups = c.integer("topk_group");
      moe.group_score = GroupScore::Max;
    } else if (method != "greedy") {
      c.fail("topk_method '" + method + "' is not supported ('greedy' or 'group_limited_greedy', as modeling_deepseek_v2.py)");
    }
  }
  const int dense = c.integer("first_k_dense_replace", v3 ? 3 : 0);
  for (int l = 0; l < std::min(dense, stack.layers); ++l) moe.dense_layers.push_back(l);
  moe.dense_inner_size = moe.dense_layers.empty() ? 0 : inner;
  m.ffn.moe = moe;
  m.decoder = stack;

  Sources s(in.has);
  const std::string p = in.has("model.embed_tokens.weight") ? "model." : "";
  s.copy("tokens.weight", p + "embed_tokens.weight");
  const int64_t H = heads, D = m.hidden_size, E = moe.experts, I = expert_inner;
  for (int l = 0; l < stack.layers; ++l) {
    const std::string n = "decoder." + std::to_string(l) + ".", h = p + "layers." + std::to_string(l) + ".";
    s.norm(n + "attn_norm", h + "input_layernorm", false);
    s.norm(n + "ffn_norm", h + "post_attention_layernorm", false);
    const std::string a = h + "self_attn.";
    if (latent.q_rank > 0) {
      s.linear(n + "attn.q_down", a + "q_a_proj", bias);
      s.copy(n + "attn.q_latent_norm", a + "q_a_layernorm.weight");
      s.linear(n + "attn.q", a + "q_b_proj", false);
    } else {
      s.linear(n + "attn.q", a + "q_proj", false);
    }
    s.linear(n + "attn.kv_down", a + "kv_a_proj_with_mqa", bias);
    s.copy(n + "attn.kv_latent_norm", a + "kv_a_layernorm.weight");
    // kv_b_proj [heads · (qk_nope + v_head_dim), kv_lora_rank]: each head's key rows, then its value rows.
    auto kv_rows = [&](int64_t begin, int64_t count) {
      TensorSource t;
      t.name = a + "kv_b_proj.weight";
      t.stored_shape = {H * (nope + value), latent.kv_rank};
      t.slice_dim = 0, t.slice_begin = begin, t.slice_count = count, t.slice_groups = H;
      return t;
    };
    s.add(n + "attn.k.weight", kv_rows(0, nope));
    s.add(n + "attn.v.weight", kv_rows(nope, value));
    s.linear(n + "attn.o", a + "o_proj", bias);

    const std::string f = h + "mlp.";
    if (moe.is_dense(l)) {
      for (const char* part : {"gate", "up", "down"}) s.linear(n + "ffn." + part, f + part + "_proj", m.ffn.bias);
      continue;
    }
    s.copy(n + "ffn.router.weight", f + "gate.weight");
    if (v3) s.copy(n + "ffn.router_choice_bias", f + "gate.e_score_correction_bias");
    const bool stacked = in.has(f + "experts.gate_up_proj");
    if (stacked && m.ffn.bias)  // DeepseekV2Experts' stacked gate_up_proj and down_proj have no biases
      c.fail("mlp_bias true with experts stored stacked (mlp.experts.gate_up_proj): transformers' stacked experts "
             "have no biases");
    for (int64_t e = 0; e < E; ++e) {
      const std::string ne = n + "ffn.experts." + std::to_string(e) + ".";
      if (!stacked) {
        const std::string he = f + "experts." + std::to_string(e) + ".";
        for (const char* part : {"gate", "up", "down"}) s.linear(ne + part, he + part + "_proj", m.ffn.bias);
        continue;
      }
      auto part = [&](const char* name, std::vector<int64_t> shape, int64_t begin, int64_t count) {
        TensorSource t;
        t.name = f + "experts." + name;
        t.stored_shape = std::move(shape);
        t.select_index = e;
        if (count > 0) t.slice_dim = 0, t.slice_begin = begin, t.slice_count = count;
        return t;
      };
      s.add(ne + "gate.weight", part("gate_up_proj", {E, 2 * I, D}, 0, I));  // chunk(2): gate first
      s.add(ne + "up.weight", part("gate_up_proj", {E, 2 * I, D}, I, I));
      s.add(ne + "down.weight", part("down_proj", {E, D, I}, 0, 0));
    }
    if (moe.shared_inner_size > 0)
      for (const char* part : {"gate", "up", "down"})
        s.linear(n + "ffn.shared." + part, f + "shared_experts." + part + "_proj", m.ffn.bias);
  }
  s.norm("decoder_norm", p + "norm", false);
  const bool tied = add_decoder_head(layout, s, in, false);
  layout.sources = s.take();
  // DeepSeek-V3's hub checkpoint stores its multi-token-prediction layer after the last one
  // (model.layers.61.* beside 61 layers), which transformers skips (_keys_to_ignore_on_load_unexpected)
  // and so does HeadLab; any other unread tensor is still an error.
  const std::string next_layer = v3 ? p + "layers." + std::to_string(stack.layers) + "." : std::string();
  layout.ignorable = [tied, next_layer](const std::string& name) {
    return (!next_layer.empty() && starts_with(name, next_layer)) || ends_with(name, "rotary_emb.inv_freq") ||
           (tied && name == "lm_head.weight");
  };
  return layout;
}

}  // namespace headlab::core::hf
