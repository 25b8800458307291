"""DeepSeek-V2 and DeepSeek-V3 fixtures for tests/core/hf_deepseek_test.cpp, written by make_fixtures.py:
multi-head latent attention, DeepSeek's routers and shared experts after dense first layers.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_deepseek_v2.py (DeepseekV2ForCausalLM): DeepseekV2Attention — q = q_proj(x) or
  q_b_proj(RMSNorm(q_a_proj(x))), split [qk_nope | qk_rope]; kv_a_proj_with_mqa(x) split [latent |
  k_rot]; kv_b_proj(RMSNorm(latent)) per head [k_pass | value]; q_rot and k_rot rotated by
  apply_rotary_emb's complex product over pairs (x_{2i}, x_{2i+1}); k_rot shared by every head; logits ×
  (qk_nope + qk_rope)^-½. DeepseekV2Moe from first_k_dense_replace on: softmax over every expert,
  "greedy" top-k or "group_limited_greedy" (groups ranked by their best expert, the rest masked to 0),
  weights × routed_scaling_factor, plus the shared experts.
- modeling_deepseek_v3.py (DeepseekV3ForCausalLM): the same attention with
  apply_rotary_pos_emb_interleave (de-interleave each head's rotated dims, then rotate-half) and logits
  also × mscale² (yarn_get_mscale(factor, mscale_all_dim)); YaRN rotary tables; DeepseekV3TopkRouter:
  sigmoid scores, e_score_correction_bias added to choose, groups ranked by the sum of their best two,
  the top-k weights (without the bias) renormalised (+1e-20) and × routed_scaling_factor.
"""

import math

import torch

from fixtures_moe import causal_mask, rnd_maker
from fixtures_rope_scaling import yarn_init
from make_fixtures import IDS, as_f64, linear, rms_norm, rotate_half, silu, write_folder


def rope_of(cfg):
    return cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}


def theta_of(cfg):
    return cfg.get("rope_theta") or rope_of(cfg).get("rope_theta") or 10000.0


def mlp(m, W, name):  # DeepseekV2MLP / DeepseekV3MLP: down(silu(gate(x)) ⊙ up(x))
    return linear(silu(linear(m, W, name + "gate_proj", False)) * linear(m, W, name + "up_proj", False),
                  W, name + "down_proj", False)


def rotate_complex(x, freqs):  # V2's apply_rotary_emb: (x_{2i} + i·x_{2i+1}) · e^{iθ}
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = freqs.cos(), freqs.sin()
    return torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)


def rotate_deinterleaved(x, cos, sin):  # V3's apply_rotary_pos_emb_interleave
    *lead, d = x.shape
    x = x.reshape(*lead, d // 2, 2).transpose(-1, -2).reshape(*lead, d)
    return x * cos + rotate_half(x) * sin


def route(cfg, m, W, h, v3):
    """The chosen experts [T, k] (best first by the score that chooses) and their weights [T, k]."""
    E, K = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    logits = m @ W[h + "mlp.gate.weight"].T
    if v3:
        scores = torch.sigmoid(logits)
        choice = scores + W[h + "mlp.gate.e_score_correction_bias"]
        groups = choice.view(-1, cfg["n_group"], E // cfg["n_group"]).topk(2, dim=-1)[0].sum(-1)
    else:
        scores = torch.softmax(logits, dim=-1)
        choice = scores
        if cfg.get("topk_method", "greedy") == "group_limited_greedy":
            groups = choice.view(-1, cfg["n_group"], E // cfg["n_group"]).max(dim=-1).values
        else:
            groups = None
    if groups is not None:
        best = torch.topk(groups, k=cfg["topk_group"], dim=-1)[1]
        keep = torch.zeros_like(groups).scatter_(1, best, 1)
        keep = keep.unsqueeze(-1).expand(-1, cfg["n_group"], E // cfg["n_group"]).reshape(-1, E)
        choice = choice.masked_fill(~keep.bool(), 0.0)
    top_e = torch.topk(choice, k=K, dim=-1)[1]
    weights = scores.gather(1, top_e)
    if v3 and cfg.get("norm_topk_prob", True):
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
    return top_e, weights * cfg["routed_scaling_factor"]


def deepseek_reference(W, cfg, ids, v3, stacked=False):
    D, H, T, p = cfg["hidden_size"], cfg["num_attention_heads"], len(ids), "model."
    nope, rot, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    r, qr, eps, bias = cfg["kv_lora_rank"], cfg.get("q_lora_rank"), cfg["rms_norm_eps"], cfg.get("attention_bias", False)
    ro = rope_of(cfg)
    if ro.get("rope_type", ro.get("type")) == "yarn":
        inv_freq, factor = yarn_init(dict(cfg, rope_theta=theta_of(cfg)), rot, T)
    else:
        inv_freq, factor = 1.0 / (theta_of(cfg) ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot)), 1.0
    freqs = torch.outer(torch.arange(T).float(), inv_freq).double()  # [T, rot/2]
    scaling = (nope + rot) ** -0.5
    if v3 and ro.get("mscale_all_dim"):
        mscale = 0.1 * ro["mscale_all_dim"] * math.log(ro["factor"]) + 1.0
        scaling = scaling * mscale * mscale
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = rms_norm(x, W[h + "input_layernorm.weight"], eps)
        s = h + "self_attn."
        if qr:
            q = linear(rms_norm(linear(a, W, s + "q_a_proj", bias), W[s + "q_a_layernorm.weight"], 1e-6), W, s + "q_b_proj", False)
        else:
            q = linear(a, W, s + "q_proj", False)
        q = q.view(T, H, nope + rot).transpose(0, 1)
        q_pass, q_rot = q[..., :nope], q[..., nope:]
        compressed = linear(a, W, s + "kv_a_proj_with_mqa", bias)
        k_pass, k_rot = compressed[:, :r], compressed[:, r:].view(1, T, rot)
        kv = linear(rms_norm(k_pass, W[s + "kv_a_layernorm.weight"], 1e-6), W, s + "kv_b_proj", False)
        kv = kv.view(T, H, nope + dv).transpose(0, 1)
        k_pass, v = kv[..., :nope], kv[..., nope:]
        if v3:
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos() * factor, emb.sin() * factor
            q_rot, k_rot = rotate_deinterleaved(q_rot, cos, sin), rotate_deinterleaved(k_rot, cos, sin)
        else:
            q_rot, k_rot = rotate_complex(q_rot, freqs), rotate_complex(k_rot, freqs)
        query = torch.cat((q_pass, q_rot), dim=-1)
        key = torch.cat((k_pass, k_rot.expand(H, T, rot)), dim=-1)
        w = torch.softmax(query @ key.transpose(-1, -2) * scaling + causal_mask(T), dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, H * dv), W, s + "o_proj", bias)
        m = rms_norm(x, W[h + "post_attention_layernorm.weight"], eps)
        if l < cfg["first_k_dense_replace"]:
            x = x + mlp(m, W, h + "mlp.")
            continue
        top_e, weights = route(cfg, m, W, h, v3)
        y = torch.zeros_like(m)
        I = cfg["moe_intermediate_size"]
        for e in range(cfg["n_routed_experts"]):
            if stacked:  # transformers 5: gate_up_proj [E, 2I, D] (chunk(2): gate, up), down_proj [E, D, I]
                gate_up = m @ W[h + "mlp.experts.gate_up_proj"][e].T
                expert = (silu(gate_up[:, :I]) * gate_up[:, I:]) @ W[h + "mlp.experts.down_proj"][e].T
            else:
                expert = mlp(m, W, "%smlp.experts.%d." % (h, e))
            y = y + expert * (weights * (top_e == e)).sum(-1, keepdim=True)
        if cfg.get("n_shared_experts"):
            y = y + mlp(m, W, h + "mlp.shared_experts.")
        out["experts.%d" % l] = top_e.double()
        x = x + y
    x = rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W["lm_head.weight"].T
    return out


def deepseek_weights(g, cfg, v3, stacked=False):
    D, H, V = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"]
    nope, rot, dv = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    r, qr, E = cfg["kv_lora_rank"], cfg.get("q_lora_rank"), cfg["n_routed_experts"]
    I, dense_I, shared = cfg["moe_intermediate_size"], cfg["intermediate_size"], cfg.get("n_shared_experts") or 0
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        s = h + "self_attn."
        w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
        if qr:
            w[s + "q_a_proj.weight"] = rnd(qr, D, std=0.3)
            w[s + "q_a_layernorm.weight"] = 1 + rnd(qr, std=0.1)
            w[s + "q_b_proj.weight"] = rnd(H * (nope + rot), qr, std=0.5)
        else:
            w[s + "q_proj.weight"] = rnd(H * (nope + rot), D, std=0.3)
        w[s + "kv_a_proj_with_mqa.weight"] = rnd(r + rot, D, std=0.3)
        w[s + "kv_a_layernorm.weight"] = 1 + rnd(r, std=0.1)
        w[s + "kv_b_proj.weight"] = rnd(H * (nope + dv), r, std=0.4)
        w[s + "o_proj.weight"] = rnd(D, H * dv)
        w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
        f = h + "mlp."

        def mlp_weights(name, inner):
            w[name + "gate_proj.weight"] = rnd(inner, D)
            w[name + "up_proj.weight"] = rnd(inner, D)
            w[name + "down_proj.weight"] = rnd(D, inner)

        if l < cfg["first_k_dense_replace"]:
            mlp_weights(f, dense_I)
            continue
        w[f + "gate.weight"] = rnd(E, D, std=0.8)
        if v3:
            w[f + "gate.e_score_correction_bias"] = rnd(E, std=0.2)
        if stacked:
            w[f + "experts.gate_up_proj"] = rnd(E, 2 * I, D)
            w[f + "experts.down_proj"] = rnd(E, D, I)
        else:
            for e in range(E):
                mlp_weights("%sexperts.%d." % (f, e), I)
        if shared:
            mlp_weights(f + "shared_experts.", shared * I)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    return w


def base_config(arch, model_type, version):
    return {"architectures": [arch], "model_type": model_type, "transformers_version": version,
            "vocab_size": 100, "hidden_size": 32, "intermediate_size": 40, "moe_intermediate_size": 16,
            "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4,
            "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 6, "kv_lora_rank": 12,
            "first_k_dense_replace": 1, "hidden_act": "silu", "max_position_embeddings": 128,
            "rms_norm_eps": 1e-06, "attention_bias": False, "tie_word_embeddings": False,
            "torch_dtype": "float32", "use_cache": True, "bos_token_id": 0, "eos_token_id": 1}


def make_deepseek_v2_lite(g):
    # DeepSeek-V2-Lite's shape as transformers 4.5x writes it: no query latent, greedy top-k over 6
    # experts, two shared experts, the experts stored one by one as on the hub.
    cfg = base_config("DeepseekV2ForCausalLM", "deepseek_v2", "4.53.0")
    cfg.update({"q_lora_rank": None, "n_routed_experts": 6, "num_experts_per_tok": 2, "n_shared_experts": 2,
                "routed_scaling_factor": 1.0, "topk_method": "greedy", "n_group": 1, "topk_group": 1,
                "norm_topk_prob": False, "rope_theta": 10000.0, "rope_scaling": None})
    w = deepseek_weights(g, cfg, v3=False)
    write_folder("deepseek-v2-lite", cfg, w, deepseek_reference(as_f64(w), cfg, IDS, v3=False), IDS)


def make_deepseek_v2(g):
    # DeepSeek-V2's shape as transformers 5 writes it: a query latent, group-limited greedy routing (8
    # experts in 2 groups, the top 2 taken within the best group: with top-k 2 and half the groups kept
    # the limit would never bind), routed_scaling_factor, rope_parameters, stacked experts.
    cfg = base_config("DeepseekV2ForCausalLM", "deepseek_v2", "5.17.0")
    cfg.update({"q_lora_rank": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1,
                "routed_scaling_factor": 4.0, "topk_method": "group_limited_greedy", "n_group": 2, "topk_group": 1,
                "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0}})
    w = deepseek_weights(g, cfg, v3=False, stacked=True)
    write_folder("deepseek-v2", cfg, w, deepseek_reference(as_f64(w), cfg, IDS, v3=False, stacked=True), IDS)


def make_deepseek_v3(g):
    # DeepSeek-V3's shape as its hub config writes it: a query latent, the sigmoid router with a
    # correction bias, 8 experts in 4 groups of which the best 2 (by their top two) are searched, one
    # shared expert, YaRN with DeepSeek's mscale pair (so both the rotary factor and the logit scale's
    # mscale² enter), rope_interleave.
    cfg = base_config("DeepseekV3ForCausalLM", "deepseek_v3", "4.46.3")
    cfg.update({"q_lora_rank": 10, "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1,
                "routed_scaling_factor": 2.5, "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc",
                "norm_topk_prob": True, "scoring_func": "sigmoid", "rope_interleave": True, "rope_theta": 10000.0,
                "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32,
                                 "beta_fast": 32, "beta_slow": 1, "mscale": 0.9, "mscale_all_dim": 1.0}})
    w = deepseek_weights(g, cfg, v3=True)
    write_folder("deepseek-v3", cfg, w, deepseek_reference(as_f64(w), cfg, IDS, v3=True), IDS)


MAKERS = [make_deepseek_v2_lite, make_deepseek_v2, make_deepseek_v3]

if __name__ == "__main__":
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(10000 + i))
