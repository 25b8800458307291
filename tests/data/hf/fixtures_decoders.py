"""Phi-3 fixtures for tests/core/hf_import_test.cpp, written by make_fixtures.py.

The reference forward pass is an independent float64 transcription of the eager code path of
transformers' modeling_phi3.py (Phi3ForCausalLM): the fused qkv_proj split into query, key and value
rows, partial rotary embeddings (the first int(head_dim · partial_rotary_factor) dims of each head
rotate in the rotate-half layout, the rest pass), GQA's repeat_kv, the sliding-window causal mask
(query i sees keys j with i − sliding_window < j ≤ i), and the MLP's fused gate_up_proj chunked into
gate and up; written against the Hugging Face weight names, sharing nothing with HeadLab's C++.
"""

import torch

from make_fixtures import IDS, as_f64, linear, rms_norm, rotate_half, silu, write_folder


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


MAKERS = [make_phi3]

if __name__ == "__main__":  # only these folders: python3 fixtures_decoders.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(5000 + i))
