"""Mixtral and gpt-oss fixtures for tests/core/hf_import_test.cpp, written by make_fixtures.py:
mixture-of-experts FFNs, learned attention sinks, alternating sliding-window layers and YaRN.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_mixtral.py (MixtralForCausalLM): Mistral's attention, and MixtralSparseMoeBlock: router
  logits = gate(x), softmax over every expert, the top num_experts_per_tok kept and renormalised to
  sum 1, each expert w2(silu(w1(x)) ⊙ w3(x)) weighted and summed;
- modeling_gpt_oss.py (GptOssForCausalLM): GptOssAttention with biases and a learned sink logit per
  head concatenated to each row of scaled logits before the softmax and dropped after it (the
  returned weights sum to 1 − the sink's share); layer_types alternating sliding_attention (keys
  i − sliding_window < j ≤ i) and full_attention; YaRN rotary tables with truncate false; and
  GptOssMLP: router logits = x Wᵀ + b, the top-k logits softmaxed, each expert's fused gate_up_proj
  [D, 2I] read as gate = [..., ::2], up = [..., 1::2], gate clamped above at swiglu_limit, up clamped
  to ±limit, (up + 1) ⊙ gate·σ(1.702·gate) @ down_proj + bias.
- gpt-oss as the hub ships it: the experts' gate_up_proj and down_proj in MXFP4 (_blocks: two E2M1
  codes a byte, low nibble first; _scales: an E8M0 exponent per 32 values), which the reference
  dequantises as transformers' integrations/mxfp4.py convert_moe_packed_tensors does before it runs.
"""

import torch

from fixtures_rope_scaling import yarn_init
from make_fixtures import IDS, as_f64, linear, rms_norm, rotate_half, silu, write_folder


def rnd_maker(g):
    return lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std


def rope_tables(inv_freq, attention_factor, T):
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * attention_factor).double(), (emb.sin() * attention_factor).double()


def causal_mask(T, window=None):
    mask = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)
    if window:
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = mask.masked_fill(j <= i - window, torch.finfo(torch.float64).min)
    return mask


def attention_heads(W, h, a, cfg, cos, sin, bias):
    D, H, KV, T = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], a.shape[0]
    hd = cfg.get("head_dim") or D // H
    q = linear(a, W, h + "self_attn.q_proj", bias).view(T, H, hd).transpose(0, 1)
    k = linear(a, W, h + "self_attn.k_proj", bias).view(T, KV, hd).transpose(0, 1)
    v = linear(a, W, h + "self_attn.v_proj", bias).view(T, KV, hd).transpose(0, 1)
    q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    n_rep = H // KV
    k = k[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
    v = v[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
    return q @ k.transpose(-1, -2) * hd ** -0.5, v, hd


# ---- Mixtral -----------------------------------------------------------------------------------

def mixtral_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    E, K, eps, p = cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["rms_norm_eps"], "model."
    hd = cfg.get("head_dim") or D // H
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    cos, sin = rope_tables(inv_freq, 1.0, T)
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        scores, v, _ = attention_heads(W, h, rms_norm(x, W[h + "input_layernorm.weight"], eps), cfg, cos, sin, False)
        w = torch.softmax(scores + causal_mask(T), dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "self_attn.o_proj", False)
        m = rms_norm(x, W[h + "post_attention_layernorm.weight"], eps)
        probs = torch.softmax(linear(m, W, h + "block_sparse_moe.gate", False), dim=-1)
        top_p, top_e = torch.topk(probs, K, dim=-1)
        top_p = top_p / top_p.sum(dim=-1, keepdim=True)
        y = torch.zeros_like(m)
        for e in range(E):
            g = "%sblock_sparse_moe.experts.%d." % (h, e)
            expert = linear(silu(linear(m, W, g + "w1", False)) * linear(m, W, g + "w3", False), W, g + "w2", False)
            y = y + expert * (top_p * (top_e == e)).sum(-1, keepdim=True)
        out["experts.%d" % l] = top_e.double()
        x = x + y
    x = rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W["lm_head.weight"].T
    return out


def make_mixtral(g):
    # Mixtral as transformers 4.44 writes it: 4 experts of which 2 run per token, GQA, no sliding window.
    cfg = {"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
           "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 48,
           "max_position_embeddings": 128, "model_type": "mixtral", "num_attention_heads": 4,
           "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_key_value_heads": 2, "num_local_experts": 4,
           "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
           "router_jitter_noise": 0.0, "sliding_window": None, "tie_word_embeddings": False,
           "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}
    D, I, V, E, hd = 32, 48, 100, 4, 8
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "self_attn.q_proj.weight"] = rnd(4 * hd, D, std=0.3)
        w[h + "self_attn.k_proj.weight"] = rnd(2 * hd, D, std=0.3)
        w[h + "self_attn.v_proj.weight"] = rnd(2 * hd, D)
        w[h + "self_attn.o_proj.weight"] = rnd(D, 4 * hd)
        w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "block_sparse_moe.gate.weight"] = rnd(E, D, std=0.5)
        for e in range(E):
            x = "%sblock_sparse_moe.experts.%d." % (h, e)
            w[x + "w1.weight"] = rnd(I, D)
            w[x + "w2.weight"] = rnd(D, I)
            w[x + "w3.weight"] = rnd(I, D)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    write_folder("mixtral", cfg, w, mixtral_reference(as_f64(w), cfg, IDS), IDS)


# ---- gpt-oss -----------------------------------------------------------------------------------

def gpt_oss_reference(W, cfg, ids):
    D, T, E, K = cfg["hidden_size"], len(ids), cfg["num_local_experts"], cfg["num_experts_per_tok"]
    eps, limit, p = cfg["rms_norm_eps"], cfg["swiglu_limit"], "model."
    hd = cfg["head_dim"]
    inv_freq, attention_factor = yarn_init(cfg, hd, T)
    cos, sin = rope_tables(inv_freq, attention_factor, T)
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        sliding = cfg["layer_types"][l] == "sliding_attention"
        scores, v, _ = attention_heads(W, h, rms_norm(x, W[h + "input_layernorm.weight"], eps), cfg, cos, sin, True)
        scores = scores + causal_mask(T, cfg["sliding_window"] if sliding else None)
        sinks = W[h + "self_attn.sinks"].view(-1, 1, 1).expand(-1, T, 1)
        combined = torch.cat([scores, sinks], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = torch.softmax(combined, dim=-1)
        w = probs[..., :-1]
        out["attentions.%d" % l] = w
        out["sink_share.%d" % l] = probs[..., -1]
        x = x + linear((w @ v).transpose(0, 1).reshape(T, -1), W, h + "self_attn.o_proj", True)
        m = rms_norm(x, W[h + "post_attention_layernorm.weight"], eps)
        logits = linear(m, W, h + "mlp.router", True)
        top_v, top_e = torch.topk(logits, K, dim=-1)
        top_v = torch.softmax(top_v, dim=1)
        y = torch.zeros_like(m)
        g = h + "mlp.experts."
        for e in range(E):
            gate_up = m @ W[g + "gate_up_proj"][e] + W[g + "gate_up_proj_bias"][e]
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            gate = gate.clamp(min=None, max=limit)
            up = up.clamp(min=-limit, max=limit)
            glu = gate * torch.sigmoid(gate * 1.702)
            expert = ((up + 1) * glu) @ W[g + "down_proj"][e] + W[g + "down_proj_bias"][e]
            y = y + expert * (top_v * (top_e == e)).sum(-1, keepdim=True)
        out["experts.%d" % l] = top_e.double()
        x = x + y
    x = rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W["lm_head.weight"].T
    return out


def gpt_oss_config(layers, inner):
    cfg = {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
           "eos_token_id": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": inner, "layer_types": ["sliding_attention", "full_attention"] * 2,
           "max_position_embeddings": 256, "model_type": "gpt_oss", "num_attention_heads": 4,
           "num_experts_per_tok": 2, "num_hidden_layers": layers, "num_key_value_heads": 2, "num_local_experts": 4,
           "output_router_logits": False, "pad_token_id": 0, "rms_norm_eps": 1e-05,
           "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                            "original_max_position_embeddings": 64, "rope_type": "yarn", "truncate": False},
           "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 4, "swiglu_limit": 1.5,
           "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.55.0",
           "use_cache": True, "vocab_size": 100}
    cfg["layer_types"] = cfg["layer_types"][:layers]
    return cfg


def gpt_oss_layer_weights(w, h, rnd, D, E, hd):
    """A gpt-oss layer's norms, attention (4 query and 2 key/value heads of hd, sinks) and router."""
    w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
    for name, rows in (("q_proj", 4 * hd), ("k_proj", 2 * hd), ("v_proj", 2 * hd)):
        w[h + "self_attn.%s.weight" % name] = rnd(rows, D, std=0.3)
        w[h + "self_attn.%s.bias" % name] = rnd(rows, std=0.2)
    w[h + "self_attn.o_proj.weight"] = rnd(D, 4 * hd)
    w[h + "self_attn.o_proj.bias"] = rnd(D, std=0.2)
    w[h + "self_attn.sinks"] = rnd(4, std=1.5)
    w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
    w[h + "mlp.router.weight"] = rnd(E, D, std=0.5)
    w[h + "mlp.router.bias"] = rnd(E, std=0.3)


FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_dequantize(blocks, scales):
    """transformers' convert_moe_packed_tensors, in float32 (exact: FP4 times a power of two)."""
    lut = torch.tensor(FP4_VALUES, dtype=torch.float32)
    *prefix, G, B = blocks.shape
    out = torch.empty(*prefix, G, 2 * B)
    out[..., 0::2] = lut[(blocks & 0x0F).long()]
    out[..., 1::2] = lut[(blocks >> 4).long()]
    out = torch.ldexp(out, (scales.to(torch.int32) - 127).unsqueeze(-1))
    return out.reshape(*prefix, G * 2 * B).transpose(1, 2).contiguous()


def make_gpt_oss_mxfp4(g):
    # gpt-oss as the hub ships it (openai/gpt-oss-20b's layout): the experts' gate_up_proj and
    # down_proj as MXFP4 blocks and scales, everything else float; two layers, 4 experts, inner 32 (the
    # blocks need multiples of 32). Random codes, exponents around 2^-3.
    cfg = gpt_oss_config(2, 32)
    cfg["quantization_config"] = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"],
                                  "quant_method": "mxfp4"}
    D, I, V, E, hd = 32, 32, 100, 4, 8
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    dense = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        gpt_oss_layer_weights(w, h, rnd, D, E, hd)
        for name, rows, cols in (("gate_up_proj", 2 * I, D), ("down_proj", D, I)):
            blocks = torch.randint(0, 256, (E, rows, cols // 32, 16), generator=g, dtype=torch.uint8)
            scales = torch.randint(122, 126, (E, rows, cols // 32), generator=g, dtype=torch.uint8)
            w[h + "mlp.experts.%s_blocks" % name] = blocks
            w[h + "mlp.experts.%s_scales" % name] = scales
            dense[h + "mlp.experts." + name] = mxfp4_dequantize(blocks, scales)
        w[h + "mlp.experts.gate_up_proj_bias"] = rnd(E, 2 * I, std=0.3)
        w[h + "mlp.experts.down_proj_bias"] = rnd(E, D, std=0.2)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    floats = {k: v for k, v in w.items() if v.dtype == torch.float32}
    floats.update(dense)
    write_folder("gpt-oss-mxfp4", cfg, w, gpt_oss_reference(as_f64(floats), cfg, IDS), IDS)


def make_gpt_oss(g):
    # gpt-oss as transformers 4.55 writes a dequantised (BF16-style, here float32) folder: three layers
    # alternating sliding (window 4, shorter than the 12 tokens) and full attention, sinks, 4 experts
    # with 2 per token, biases everywhere, YaRN without truncation; swiglu_limit 1.5 so that the clamps
    # bite on these weights.
    cfg = gpt_oss_config(3, 24)
    D, I, V, E, hd = 32, 24, 100, 4, 8
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        gpt_oss_layer_weights(w, h, rnd, D, E, hd)
        w[h + "mlp.experts.gate_up_proj"] = rnd(E, D, 2 * I, std=0.5)
        w[h + "mlp.experts.gate_up_proj_bias"] = rnd(E, 2 * I, std=0.3)
        w[h + "mlp.experts.down_proj"] = rnd(E, I, D)
        w[h + "mlp.experts.down_proj_bias"] = rnd(E, D, std=0.2)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    write_folder("gpt-oss", cfg, w, gpt_oss_reference(as_f64(w), cfg, IDS), IDS)


MAKERS = [make_mixtral, make_gpt_oss, make_gpt_oss_mxfp4]

if __name__ == "__main__":  # only these folders: python3 fixtures_moe.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(7000 + i))
