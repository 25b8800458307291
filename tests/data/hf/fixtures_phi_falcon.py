"""Phi-2 and Falcon fixtures for tests/core/hf_falcon_phi_modernbert_test.cpp, written by
make_fixtures.py: attention and MLP side by side from one norm or two, partial rotary embeddings, and
Falcon's three layouts of the fused query_key_value.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_phi.py (PhiForCausalLM): x + attn(ln(x)) + mlp(ln(x)) with one input_layernorm, q/k/v/dense
  with biases, RoPE (rotate-half) on the first int(head_dim · partial_rotary_factor) dims of each head,
  gelu_new fc1/fc2, final_layernorm, lm_head with a bias;
- modeling_falcon.py (FalconForCausalLM): FalconAttention._split_heads on query_key_value —
  new_decoder_architecture [kv, heads/kv + 2, head_dim], multi_query [heads + 2, head_dim], else
  [heads, 3, head_dim] —, RoPE over the whole head, the decoder layer's norms (ln_attn and ln_mlp, one
  input_layernorm, or post_attention_layernorm when sequential), GELU MLP, ln_f, tied head.
"""

import torch

from make_fixtures import IDS, as_f64, weight_makers, gelu_erf, gelu_new, layer_norm, linear, rotate_half, write_folder


def rnd_maker(g):
    return lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std


def causal_mask(T):
    return torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)


def rope_tables(theta, rot, T):  # float32 inv_freq and angles, as transformers computes them
    inv_freq = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().double(), emb.sin().double()


def attend(q, k, v, hd, T):
    w = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + causal_mask(T), dim=-1)
    return w, (w @ v).transpose(0, 1).reshape(T, -1)


# ---- Phi ---------------------------------------------------------------------------------------

def phi_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    hd = D // H
    rot = int(hd * cfg["partial_rotary_factor"])
    eps, p = cfg["layer_norm_eps"], "model."
    cos, sin = rope_tables(cfg["rope_theta"], rot, T)
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)

    def rope(x):
        return torch.cat([x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin, x[..., rot:]], dim=-1)

    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = ln(x, h + "input_layernorm")
        q = rope(linear(a, W, h + "self_attn.q_proj").view(T, H, hd).transpose(0, 1))
        k = rope(linear(a, W, h + "self_attn.k_proj").view(T, H, hd).transpose(0, 1))
        v = linear(a, W, h + "self_attn.v_proj").view(T, H, hd).transpose(0, 1)
        w, context = attend(q, k, v, hd, T)
        out["attentions.%d" % l] = w
        mlp = linear(gelu_new(linear(a, W, h + "mlp.fc1")), W, h + "mlp.fc2")
        x = x + linear(context, W, h + "self_attn.dense") + mlp
    x = ln(x, p + "final_layernorm")
    out["logits"] = x @ W["lm_head.weight"].T + W["lm_head.bias"]
    return out


def make_phi(g):
    # Phi-2 as transformers 4.44 writes it: 0.4 of each head rotating (head_dim 10 → 4 dims).
    cfg = {"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 50256,
           "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new", "hidden_size": 40,
           "initializer_range": 0.02, "intermediate_size": 80, "layer_norm_eps": 1e-05,
           "max_position_embeddings": 64, "model_type": "phi", "num_attention_heads": 4, "num_hidden_layers": 2,
           "num_key_value_heads": 4, "partial_rotary_factor": 0.4, "qk_layernorm": False, "resid_pdrop": 0.1,
           "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
           "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}
    D, I, V = 40, 80, 100
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    _, _, lin = weight_makers(g, w, D, bias_std=0.2)

    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "input_layernorm.bias"] = rnd(D, std=0.1)
        for part in ("q_proj", "k_proj"):
            lin(h + "self_attn." + part, D, D, std=0.4)
        lin(h + "self_attn.v_proj", D, D)
        lin(h + "self_attn.dense", D, D)
        lin(h + "mlp.fc1", I, D)
        lin(h + "mlp.fc2", D, I)
    w["model.final_layernorm.weight"] = 1 + rnd(D, std=0.1)
    w["model.final_layernorm.bias"] = rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    w["lm_head.bias"] = rnd(V, std=0.2)
    write_folder("phi", cfg, w, phi_reference(as_f64(w), cfg, IDS), IDS)


# ---- Falcon ------------------------------------------------------------------------------------

def split_heads(qkv, cfg, T):
    """FalconAttention._split_heads, returning q [H, T, hd] and k, v already broadcast to H heads."""
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = D // H
    if cfg["new_decoder_architecture"]:
        KV = cfg["num_kv_heads"]
        x = qkv.view(T, KV, H // KV + 2, hd)
        q, k, v = x[:, :, :-2], x[:, :, [-2]], x[:, :, [-1]]
        k, v = torch.broadcast_to(k, q.shape), torch.broadcast_to(v, q.shape)
        q, k, v = [t.flatten(1, 2) for t in (q, k, v)]
    elif not cfg["multi_query"]:
        x = qkv.view(T, H, 3, hd)
        q, k, v = x[..., 0, :], x[..., 1, :], x[..., 2, :]
    else:
        x = qkv.view(T, H + 2, hd)
        q, k, v = x[:, :-2], x[:, [-2]].expand(T, H, hd), x[:, [-1]].expand(T, H, hd)
    return q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)


def falcon_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    hd, eps, p, bias = D // H, cfg["layer_norm_epsilon"], "transformer.", cfg["bias"]
    cos, sin = rope_tables(cfg["rope_theta"], hd, T)
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    new, two = cfg["new_decoder_architecture"], cfg.get("num_ln_in_parallel_attn") == 2
    x = W[p + "word_embeddings.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%sh.%d." % (p, l)
        a = ln(x, h + ("ln_attn" if new and two else "input_layernorm"))
        q, k, v = split_heads(linear(a, W, h + "self_attention.query_key_value", bias), cfg, T)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        w, context = attend(q, k, v, hd, T)
        out["attentions.%d" % l] = w
        attn = linear(context, W, h + "self_attention.dense", bias)
        residual = x
        if new:
            m = ln(x, h + "ln_mlp") if two else a
        elif cfg["parallel_attn"]:
            m = a
        else:
            residual = x + attn
            m = ln(residual, h + "post_attention_layernorm")
        mlp = linear(gelu_erf(linear(m, W, h + "mlp.dense_h_to_4h", bias)), W, h + "mlp.dense_4h_to_h", bias)
        x = residual + mlp + (attn if new or cfg["parallel_attn"] else 0)
    x = ln(x, p + "ln_f")
    out["logits"] = x @ W[p + "word_embeddings.weight"].T
    return out


def falcon_weights(g, cfg):
    D, H, V = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"]
    hd, bias = D // H, cfg["bias"]
    KV = cfg["num_kv_heads"] if cfg["new_decoder_architecture"] else 1 if cfg["multi_query"] else H
    rnd = rnd_maker(g)
    p = "transformer."
    w = {p + "word_embeddings.weight": rnd(V, D, std=0.5)}
    _, norm, lin = weight_makers(g, w, D, bias_std=0.2, bias=bias)

    for l in range(cfg["num_hidden_layers"]):
        h = "%sh.%d." % (p, l)
        if cfg["new_decoder_architecture"] and cfg.get("num_ln_in_parallel_attn") == 2:
            norm(h + "ln_attn")
            norm(h + "ln_mlp")
        else:
            norm(h + "input_layernorm")
            if not cfg["new_decoder_architecture"] and not cfg["parallel_attn"]:
                norm(h + "post_attention_layernorm")
        lin(h + "self_attention.query_key_value", H * hd + 2 * KV * hd, D, std=0.35)
        lin(h + "self_attention.dense", D, D)
        lin(h + "mlp.dense_h_to_4h", 4 * D, D)
        lin(h + "mlp.dense_4h_to_h", D, 4 * D)
    norm(p + "ln_f")
    return w


FALCON_BASE = {"alibi": False, "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False,
               "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": 32,
               "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "max_position_embeddings": 64,
               "model_type": "falcon", "multi_query": True, "new_decoder_architecture": False,
               "num_attention_heads": 4, "num_hidden_layers": 2, "num_kv_heads": None, "parallel_attn": True,
               "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
               "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}


def make_falcon(g):
    # Falcon-7B's layout: one key/value head, attention and MLP side by side from input_layernorm.
    cfg = dict(FALCON_BASE)
    w = falcon_weights(g, cfg)
    write_folder("falcon", cfg, w, falcon_reference(as_f64(w), cfg, IDS), IDS)


def make_falcon_40b(g):
    # Falcon-40B's layout: the new decoder architecture, 2 key/value groups of 4 query heads, ln_attn
    # and ln_mlp, with biases.
    cfg = dict(FALCON_BASE, new_decoder_architecture=True, num_attention_heads=8, num_kv_heads=2,
               num_ln_in_parallel_attn=2, bias=True)
    w = falcon_weights(g, cfg)
    write_folder("falcon-40b", cfg, w, falcon_reference(as_f64(w), cfg, IDS), IDS)


def make_falcon_sequential(g):
    # Falcon's older sequential layout: multi-head fused qkv per head, post_attention_layernorm.
    cfg = dict(FALCON_BASE, multi_query=False, parallel_attn=False)
    w = falcon_weights(g, cfg)
    write_folder("falcon-sequential", cfg, w, falcon_reference(as_f64(w), cfg, IDS), IDS)


MAKERS = [make_phi, make_falcon, make_falcon_40b, make_falcon_sequential]

if __name__ == "__main__":  # only these folders: python3 fixtures_phi_falcon.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(8000 + i))
