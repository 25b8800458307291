"""Phi-3, SmolLM3, Gemma (1) and OPT fixtures for tests/core/hf_import_test.cpp, written by
make_fixtures.py.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_phi3.py (Phi3ForCausalLM): the fused qkv_proj split into query, key and value rows,
  partial rotary embeddings (the first int(head_dim · partial_rotary_factor) dims of each head rotate
  in the rotate-half layout, the rest pass), GQA's repeat_kv, the sliding-window causal mask (query i
  sees keys j with i − sliding_window < j ≤ i), and the MLP's fused gate_up_proj chunked into gate
  and up;
- modeling_smollm3.py (SmolLM3ForCausalLM): Llama's layer with no rotary embedding in the layers
  whose no_rope_layers entry is 0 (make_fixtures.llama_reference);
- modeling_gemma.py (GemmaForCausalLM): Llama's layer with RMSNorm weights stored as offsets from 1,
  embeddings times sqrt(hidden_size) in the embeddings' dtype, and a GeGLU MLP (gelu_pytorch_tanh);
- modeling_olmo.py (OlmoForCausalLM): Llama's layer with LayerNorms that have no weight or bias
  (make_fixtures.llama_reference);
- modeling_opt.py (OPTForCausalLM): learned positions read at position + 2, pre-LN layers with
  biases everywhere, queries scaled by head_dim^-½, a ReLU MLP (fc1, fc2) and tied embeddings.
"""

import torch

from make_fixtures import (IDS, weight_makers, LLAMA_BASE, as_f64, gelu_new, layer_norm, linear, llama_reference, llama_weights,
                           rms_norm, rotate_half, silu, write_folder)


def phi3_reference(W, cfg, ids):
    D, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = D // H
    eps, T, p = cfg["rms_norm_eps"], len(ids), "model."
    rot = int(hd * cfg.get("partial_rotary_factor", 1.0))
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
    emb = torch.cat((torch.outer(torch.arange(T).float(), inv_freq),) * 2, dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    min_value = torch.finfo(torch.float64).min
    mask = torch.triu(torch.full((T, T), min_value, dtype=torch.float64), diagonal=1)
    if cfg.get("sliding_window"):
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = mask.masked_fill(j <= i - cfg["sliding_window"], min_value)

    def rope(x):  # apply_rotary_pos_emb with a partial rotary_dim
        x_rot, x_pass = x[..., :rot], x[..., rot:]
        return torch.cat([x_rot * cos + rotate_half(x_rot) * sin, x_pass], dim=-1)

    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = rms_norm(x, W[h + "input_layernorm.weight"], eps)
        qkv = linear(a, W, h + "self_attn.qkv_proj", False)
        q_pos = H * hd
        q = qkv[..., :q_pos].view(T, H, hd).transpose(0, 1)
        k = qkv[..., q_pos:q_pos + KV * hd].view(T, KV, hd).transpose(0, 1)
        v = qkv[..., q_pos + KV * hd:].view(T, KV, hd).transpose(0, 1)
        q, k = rope(q), rope(k)
        n_rep = H // KV
        k = k[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
        w = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + mask, dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, H * hd), W, h + "self_attn.o_proj", False)
        m = rms_norm(x, W[h + "post_attention_layernorm.weight"], eps)
        gate, up = linear(m, W, h + "mlp.gate_up_proj", False).chunk(2, dim=-1)
        x = x + linear(up * silu(gate), W, h + "mlp.down_proj", False)
    x = rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W["lm_head.weight"].T
    return out


def make_phi3(g):
    # Phi-3 as transformers 4.5x writes it, with Phi-4-mini's partial rotary factor (here 0.5 of
    # head_dim 8: 4 dims rotate), GQA (4 query heads, 2 kv heads) and a sliding window of 5 keys
    # that cuts into the 12-token input.
    cfg = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "attention_bias": False,
           "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 2,
           "hidden_act": "silu", "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 48,
           "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
           "num_key_value_heads": 2, "original_max_position_embeddings": 64, "pad_token_id": 0,
           "partial_rotary_factor": 0.5, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": None,
           "rope_theta": 10000.0, "sliding_window": 5, "tie_word_embeddings": False, "torch_dtype": "float32",
           "transformers_version": "4.51.0", "use_cache": True, "vocab_size": 100}
    D, H, KV, I, V = 32, 4, 2, 48, 100
    hd = D // H
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "self_attn.qkv_proj.weight"] = rnd((H + 2 * KV) * hd, D, std=0.3)
        w[h + "self_attn.o_proj.weight"] = rnd(D, H * hd)
        w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "mlp.gate_up_proj.weight"] = rnd(2 * I, D)
        w[h + "mlp.down_proj.weight"] = rnd(D, I)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    write_folder("phi3", cfg, w, phi3_reference(as_f64(w), cfg, IDS), IDS)


def make_smollm3(g):
    # SmolLM3 as transformers 4.53 writes it: three layers, the last one without RoPE (no_rope_layers
    # [1, 1, 0]), GQA, tied embeddings, RoPE base 2·10⁶.
    cfg = dict(LLAMA_BASE, architectures=["SmolLM3ForCausalLM"], model_type="smollm3", num_hidden_layers=3,
               no_rope_layers=[1, 1, 0], no_rope_layer_interval=4, rope_theta=2000000.0, rms_norm_eps=1e-06,
               tie_word_embeddings=True, use_sliding_window=False, sliding_window=None,
               layer_types=["full_attention"] * 3, pad_token_id=99, bos_token_id=None, eos_token_id=98,
               transformers_version="4.53.0")
    cfg.pop("pretraining_tp")
    w = llama_weights(g, cfg, False)
    write_folder("smollm3", cfg, w, llama_reference(as_f64(w), cfg, IDS, False), IDS)


def gemma_rms_norm(x, w, eps):  # GemmaRMSNorm: output · (1 + w)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def gemma_reference(W, cfg, ids):
    D, H, KV, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, T, p = cfg["rms_norm_eps"], len(ids), "model."
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    emb = torch.cat((torch.outer(torch.arange(T).float(), inv_freq),) * 2, dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    mask = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)
    # GemmaTextScaledWordEmbedding: sqrt(hidden_size) as a float32 tensor cast to the weights' dtype.
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)] * torch.tensor(D ** 0.5, dtype=torch.float32).double()
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = gemma_rms_norm(x, W[h + "input_layernorm.weight"], eps)
        q = linear(a, W, h + "self_attn.q_proj", False).view(T, H, hd).transpose(0, 1)
        k = linear(a, W, h + "self_attn.k_proj", False).view(T, KV, hd).transpose(0, 1)
        v = linear(a, W, h + "self_attn.v_proj", False).view(T, KV, hd).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k[:, None].expand(KV, H // KV, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(KV, H // KV, T, hd).reshape(H, T, hd)
        w = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + mask, dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, H * hd), W, h + "self_attn.o_proj", False)
        m = gemma_rms_norm(x, W[h + "post_attention_layernorm.weight"], eps)
        m = gelu_new(linear(m, W, h + "mlp.gate_proj", False)) * linear(m, W, h + "mlp.up_proj", False)
        x = x + linear(m, W, h + "mlp.down_proj", False)  # gelu_pytorch_tanh is gelu_new's formula
    x = gemma_rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W[p + "embed_tokens.weight"].T  # tied
    return out


def make_gemma(g):
    # Gemma 1.1 as transformers 4.40 writes it: the legacy hidden_act "gelu" beside the
    # hidden_activation that GemmaMLP reads, MQA (one kv head, as Gemma 2B), head_dim (12) unlike
    # hidden/heads (8), tied embeddings.
    cfg = {"architectures": ["GemmaForCausalLM"], "model_type": "gemma", "attention_bias": False,
           "attention_dropout": 0.0, "bos_token_id": 2, "eos_token_id": 1, "head_dim": 12, "hidden_act": "gelu",
           "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 64, "num_attention_heads": 4,
           "num_hidden_layers": 2, "num_key_value_heads": 1, "pad_token_id": 0, "rms_norm_eps": 1e-06,
           "rope_scaling": None, "rope_theta": 10000.0, "torch_dtype": "float32",
           "transformers_version": "4.40.0", "use_cache": True, "vocab_size": 100}
    D, H, KV, hd, I, V = 32, 4, 1, 12, 64, 100
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.3)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        w[h + "input_layernorm.weight"] = rnd(D, std=0.3)  # offsets from 1
        w[h + "self_attn.q_proj.weight"] = rnd(H * hd, D, std=0.3)
        w[h + "self_attn.k_proj.weight"] = rnd(KV * hd, D, std=0.3)
        w[h + "self_attn.v_proj.weight"] = rnd(KV * hd, D)
        w[h + "self_attn.o_proj.weight"] = rnd(D, H * hd)
        w[h + "post_attention_layernorm.weight"] = rnd(D, std=0.3)
        w[h + "mlp.gate_proj.weight"] = rnd(I, D)
        w[h + "mlp.up_proj.weight"] = rnd(I, D)
        w[h + "mlp.down_proj.weight"] = rnd(D, I)
    w["model.norm.weight"] = rnd(D, std=0.3)
    write_folder("gemma", cfg, w, gemma_reference(as_f64(w), cfg, IDS), IDS)


def opt_reference(W, cfg, ids):
    D, H, T, p = cfg["hidden_size"], cfg["num_attention_heads"], len(ids), "model.decoder."
    hd = D // H
    mask = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)
    # OPTLearnedPositionalEmbedding: positions cumsum(attention_mask) − 1, read at row position + 2.
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)] + W[p + "embed_positions.weight"][torch.arange(T) + 2]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], 1e-5)
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = ln(x, h + "self_attn_layer_norm")
        q = (linear(a, W, h + "self_attn.q_proj") * hd ** -0.5).view(T, H, hd).transpose(0, 1)
        k = linear(a, W, h + "self_attn.k_proj").view(T, H, hd).transpose(0, 1)
        v = linear(a, W, h + "self_attn.v_proj").view(T, H, hd).transpose(0, 1)
        w = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "self_attn.out_proj")
        m = ln(x, h + "final_layer_norm")
        x = x + linear(torch.relu(linear(m, W, h + "fc1")), W, h + "fc2")
    x = ln(x, p + "final_layer_norm")
    out["logits"] = x @ W["lm_head.weight"].T  # tied: the same values as embed_tokens
    return out


def make_opt(g):
    # OPT as transformers 4.44 writes OPT-125m's config (pre-LN, ReLU, biases), 18 position rows
    # (16 + the offset of 2): the 12-token input reads rows 2 … 13.
    cfg = {"_remove_final_layer_norm": False, "activation_dropout": 0.0, "activation_function": "relu",
           "architectures": ["OPTForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 2,
           "do_layer_norm_before": True, "dropout": 0.1, "enable_bias": True, "eos_token_id": 2, "ffn_dim": 64,
           "hidden_size": 32, "init_std": 0.02, "layer_norm_elementwise_affine": True, "layerdrop": 0.0,
           "max_position_embeddings": 16, "model_type": "opt", "num_attention_heads": 4, "num_hidden_layers": 2,
           "pad_token_id": 1, "prefix": "</s>", "torch_dtype": "float32", "transformers_version": "4.44.0",
           "use_cache": True, "vocab_size": 100, "word_embed_proj_dim": 32}
    D, I, V, P = 32, 64, 100, 16 + 2
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    p = "model.decoder."
    w = {p + "embed_tokens.weight": rnd(V, D, std=0.5), p + "embed_positions.weight": rnd(P, D, std=0.5)}
    _, norm, lin = weight_makers(g, w, D, bias_std=0.2)

    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        norm(h + "self_attn_layer_norm")
        for part in ("q", "k"):
            lin(h + "self_attn.%s_proj" % part, D, D, std=0.4)
        lin(h + "self_attn.v_proj", D, D)
        lin(h + "self_attn.out_proj", D, D)
        norm(h + "final_layer_norm")
        lin(h + "fc1", I, D)
        lin(h + "fc2", D, I)
    norm(p + "final_layer_norm")
    w["lm_head.weight"] = w[p + "embed_tokens.weight"].clone()  # save_pretrained writes the tied head too
    write_folder("opt", cfg, w, opt_reference(as_f64(w), cfg, IDS), IDS)


def olmo_folder(g, name, clip_qkv):
    # OLMo as transformers 4.40 writes OLMo-7B's config: weightless LayerNorms, MHA, untied head, and
    # clip_qkv null (OLMo-7B) or a bound (OLMo-7B-0424 and OLMo 1.7 write 8; 1.5 here clamps ~40% of
    # the queries and keys and ~8% of the values of these weights).
    cfg = dict(LLAMA_BASE, architectures=["OlmoForCausalLM"], model_type="olmo", clip_qkv=clip_qkv,
               num_key_value_heads=4, rope_theta=10000.0, pad_token_id=1, eos_token_id=99, bos_token_id=None,
               transformers_version="4.40.0")
    for key in ("mlp_bias", "rms_norm_eps"):
        cfg.pop(key)
    cfg_ref = dict(cfg, rms_norm_eps=None)
    w = llama_weights(g, cfg_ref, False)
    write_folder(name, cfg, w, llama_reference(as_f64(w), cfg_ref, IDS, False), IDS)


def make_olmo(g):
    olmo_folder(g, "olmo", None)


def make_olmo_clip(g):
    olmo_folder(g, "olmo-clip", 1.5)


MAKERS = [make_phi3, make_smollm3, make_gemma, make_opt, make_olmo, make_olmo_clip]

if __name__ == "__main__":  # only these folders: python3 fixtures_decoders.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(5000 + i))
