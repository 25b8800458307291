"""GPT-NeoX (Pythia), GPT-J and BLOOM fixtures for tests/core/hf_import_test.cpp, written by
make_fixtures.py: parallel attention and MLP, partial rotary embeddings in both layouts, and ALiBi.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_gpt_neox.py (GPTNeoXForCausalLM): the fused query_key_value laid out per head
  ([heads, 3 · head_size] along its outputs), rotary embeddings on the first int(head_size · rotary_pct)
  dims of each head (rotate-half), and with use_parallel_residual
  x + attention(input_layernorm(x)) + mlp(post_attention_layernorm(x));
- modeling_gptj.py (GPTJForCausalLM): rotary embeddings on the first rotary_dim dims of each head in
  the interleaved layout (rotate_every_two: pairs (x₀, x₁), (x₂, x₃), …), and one LayerNorm feeding
  attention and MLP side by side, x + attn(ln_1(x)) + mlp(ln_1(x)); an LM head with a bias;
- modeling_bloom.py (BloomForCausalLM): ALiBi (build_alibi_tensor's slopes, the bias slope · key
  position added to the scaled logits), the fused query_key_value laid out [heads, 3, head_dim], a
  LayerNorm after the word embeddings, bloom_gelu (tanh approximation), tied embeddings.
"""

import math

import torch

from make_fixtures import IDS, as_f64, weight_makers, gelu_erf, gelu_new, layer_norm, linear, rotate_half, write_folder


def causal_mask(T):
    return torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)


def rnd_maker(g):
    return lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std


# ---- GPT-NeoX / Pythia ----------------------------------------------------------------------------

def gpt_neox_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    hd = D // H
    rot = int(hd * cfg["rotary_pct"])
    eps, p = cfg["layer_norm_eps"], "gpt_neox."
    inv_freq = 1.0 / (cfg["rotary_emb_base"] ** (torch.arange(0, rot, 2, dtype=torch.int64).float() / rot))
    emb = torch.cat((torch.outer(torch.arange(T).float(), inv_freq),) * 2, dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)

    def rope(x):  # rotary on the first rotary_ndims dims, the rest passed
        return torch.cat([x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin, x[..., rot:]], dim=-1)

    x = W[p + "embed_in.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        qkv = linear(ln(x, h + "input_layernorm"), W, h + "attention.query_key_value")
        qkv = qkv.view(T, H, 3 * hd).transpose(0, 1)  # [H, T, 3·hd]: each head's q, k, v side by side
        q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        q, k = rope(q), rope(k)
        w = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + causal_mask(T), dim=-1)
        out["attentions.%d" % l] = w
        attn = linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "attention.dense")
        mlp = lambda y: linear(gelu_erf(linear(y, W, h + "mlp.dense_h_to_4h")), W, h + "mlp.dense_4h_to_h")
        if cfg["use_parallel_residual"]:
            x = x + attn + mlp(ln(x, h + "post_attention_layernorm"))
        else:
            x = x + attn
            x = x + mlp(ln(x, h + "post_attention_layernorm"))
    x = ln(x, p + "final_layer_norm")
    out["logits"] = x @ W["embed_out.weight"].T
    return out


def make_pythia(g):
    # Pythia as transformers 4.44 writes it: F16 weights, a quarter of each head rotating
    # (rotary_pct 0.25 of head_size 16: 4 dims), parallel residual, erf GELU, untied embed_out.
    cfg = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "attention_bias": True,
           "attention_dropout": 0.0, "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0,
           "hidden_act": "gelu", "hidden_dropout": 0.0, "hidden_size": 64, "initializer_range": 0.02,
           "intermediate_size": 128, "layer_norm_eps": 1e-05, "max_position_embeddings": 64,
           "num_attention_heads": 4, "num_hidden_layers": 2, "rope_scaling": None, "rotary_emb_base": 10000,
           "rotary_pct": 0.25, "tie_word_embeddings": False, "torch_dtype": "float16",
           "transformers_version": "4.44.0", "use_cache": True, "use_parallel_residual": True, "vocab_size": 100}
    D, I, V = 64, 128, 100
    rnd = rnd_maker(g)
    p = "gpt_neox."
    w = {p + "embed_in.weight": rnd(V, D, std=0.5)}
    _, norm, lin = weight_makers(g, w, D, bias_std=0.2)

    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        norm(h + "input_layernorm")
        norm(h + "post_attention_layernorm")
        lin(h + "attention.query_key_value", 3 * D, D, std=0.25)
        lin(h + "attention.dense", D, D)
        lin(h + "mlp.dense_h_to_4h", I, D)
        lin(h + "mlp.dense_4h_to_h", D, I)
        # Buffers older GPT-NeoX checkpoints saved: the causal mask, its fill value, the rotary frequencies.
        w[h + "attention.bias"] = torch.tril(torch.ones(64, 64, dtype=torch.bool)).view(1, 1, 64, 64)
        w[h + "attention.masked_bias"] = torch.tensor(-1e9)
        w[h + "attention.rotary_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, 4, 2).float() / 4))
    norm(p + "final_layer_norm")
    w["embed_out.weight"] = rnd(V, D, std=0.3)
    w = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in w.items()}
    write_folder("pythia", cfg, w, gpt_neox_reference(as_f64(w), cfg, IDS), IDS)


# ---- GPT-J -------------------------------------------------------------------------------------------

def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def gptj_reference(W, cfg, ids):
    D, H, T = cfg["n_embd"], cfg["n_head"], len(ids)
    hd, rot, eps, p = D // H, cfg["rotary_dim"], cfg["layer_norm_epsilon"], "transformer."
    # create_sinusoidal_positions: float32 inv_freq and angles; sin and cos repeated per pair.
    inv_freq = 1.0 / (10000 ** (torch.arange(0, rot, 2, dtype=torch.int64) / rot))
    angles = torch.einsum("i , j -> i j", torch.arange(T, dtype=torch.int64).float(), inv_freq).float()
    sin = torch.repeat_interleave(angles.sin(), 2, dim=-1).double()
    cos = torch.repeat_interleave(angles.cos(), 2, dim=-1).double()
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)

    def rope(x):
        return torch.cat([x[..., :rot] * cos + rotate_every_two(x[..., :rot]) * sin, x[..., rot:]], dim=-1)

    x = W[p + "wte.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["n_layer"]):
        h = "%sh.%d." % (p, l)
        a = ln(x, h + "ln_1")
        q = linear(a, W, h + "attn.q_proj", False).view(T, H, hd).transpose(0, 1)
        k = linear(a, W, h + "attn.k_proj", False).view(T, H, hd).transpose(0, 1)
        v = linear(a, W, h + "attn.v_proj", False).view(T, H, hd).transpose(0, 1)
        q, k = rope(q), rope(k)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + causal_mask(T), dim=-1)
        out["attentions.%d" % l] = w
        attn = linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "attn.out_proj", False)
        mlp = linear(gelu_new(linear(a, W, h + "mlp.fc_in")), W, h + "mlp.fc_out")
        x = x + attn + mlp
    x = ln(x, p + "ln_f")
    out["logits"] = linear(x, W, "lm_head")
    return out


def make_gptj(g):
    # GPT-J as transformers 4.44 writes GPT-J-6B's config: rotary_dim 8 of head_dim 16 (interleaved),
    # one LayerNorm for attention and MLP side by side, no q/k/v/out biases, an LM head with a bias.
    cfg = {"activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "attn_pdrop": 0.0,
           "bos_token_id": 98, "embd_pdrop": 0.0, "eos_token_id": 98, "initializer_range": 0.02,
           "layer_norm_epsilon": 1e-05, "model_type": "gptj", "n_embd": 64, "n_head": 4, "n_inner": None,
           "n_layer": 2, "n_positions": 64, "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 8,
           "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.44.0",
           "use_cache": True, "vocab_size": 100}
    D, I, V = 64, 256, 100
    rnd = rnd_maker(g)
    p = "transformer."
    w = {p + "wte.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["n_layer"]):
        h = "%sh.%d." % (p, l)
        w[h + "ln_1.weight"] = 1 + rnd(D, std=0.1)
        w[h + "ln_1.bias"] = rnd(D, std=0.1)
        for part in ("q", "k"):
            w[h + "attn.%s_proj.weight" % part] = rnd(D, D, std=0.3)
        w[h + "attn.v_proj.weight"] = rnd(D, D)
        w[h + "attn.out_proj.weight"] = rnd(D, D)
        w[h + "attn.bias"] = torch.tril(torch.ones(64, 64, dtype=torch.bool)).view(1, 1, 64, 64)
        w[h + "attn.masked_bias"] = torch.tensor(-1e9)
        w[h + "mlp.fc_in.weight"] = rnd(I, D)
        w[h + "mlp.fc_in.bias"] = rnd(I, std=0.2)
        w[h + "mlp.fc_out.weight"] = rnd(D, I, std=0.1)
        w[h + "mlp.fc_out.bias"] = rnd(D, std=0.2)
    w[p + "ln_f.weight"] = 1 + rnd(D, std=0.1)
    w[p + "ln_f.bias"] = rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    w["lm_head.bias"] = rnd(V, std=0.3)
    write_folder("gptj", cfg, w, gptj_reference(as_f64(w), cfg, IDS), IDS)


# ---- BLOOM -------------------------------------------------------------------------------------------

def build_alibi_slopes(num_heads):  # modeling_bloom.py's build_alibi_tensor, its slopes
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    slopes = torch.pow(base, torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32))
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float32)
        remaining = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * remaining, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def bloom_gelu(x):  # bloom_gelu_forward
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def bloom_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["n_head"], len(ids)
    hd, eps, p = D // H, cfg["layer_norm_epsilon"], "transformer."
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    # alibi[h, j] = slope_h · j (the key's position), added to the logits: softmax-equal to −slope·(i − j).
    alibi = build_alibi_slopes(H).double()[:, None, None] * torch.arange(T, dtype=torch.float64)[None, None, :]
    x = ln(W[p + "word_embeddings.weight"][torch.tensor(ids)], p + "word_embeddings_layernorm")
    out = {}
    for l in range(cfg["n_layer"]):
        h = "%sh.%d." % (p, l)
        fused = linear(ln(x, h + "input_layernorm"), W, h + "self_attention.query_key_value").view(T, H, 3, hd)
        q, k, v = (fused[:, :, i].transpose(0, 1) for i in range(3))  # [H, T, hd] each
        scores = alibi + (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))  # baddbmm(beta=1, alpha=1/√d)
        w = torch.softmax(scores + causal_mask(T), dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "self_attention.dense")
        m = ln(x, h + "post_attention_layernorm")
        x = x + linear(bloom_gelu(linear(m, W, h + "mlp.dense_h_to_4h")), W, h + "mlp.dense_4h_to_h")
    x = ln(x, p + "ln_f")
    out["logits"] = x @ W[p + "word_embeddings.weight"].T  # tied
    return out


def make_bloom(g):
    # BLOOM as transformers 4.44 writes bloom-560m's config, with 6 heads: not a power of two, so
    # ALiBi's extra slopes (every other slope of 8 heads) are used too.
    cfg = {"apply_residual_connection_post_layernorm": False, "architectures": ["BloomForCausalLM"],
           "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
           "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 48,
           "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "masked_softmax_fusion": True,
           "model_type": "bloom", "n_head": 6, "n_inner": None, "n_layer": 2, "offset_alibi": 100,
           "pad_token_id": 3, "pretraining_tp": 1, "skip_bias_add": True, "skip_bias_add_qkv": False,
           "slow_but_exact": False, "torch_dtype": "float32", "transformers_version": "4.44.0",
           "unk_token_id": 0, "use_cache": True, "vocab_size": 100}
    D, V = 48, 100
    rnd = rnd_maker(g)
    p = "transformer."
    w = {p + "word_embeddings.weight": rnd(V, D, std=0.5)}
    _, norm, lin = weight_makers(g, w, D, bias_std=0.2)

    norm(p + "word_embeddings_layernorm")
    for l in range(cfg["n_layer"]):
        h = "%sh.%d." % (p, l)
        norm(h + "input_layernorm")
        lin(h + "self_attention.query_key_value", 3 * D, D, std=0.3)
        lin(h + "self_attention.dense", D, D)
        norm(h + "post_attention_layernorm")
        lin(h + "mlp.dense_h_to_4h", 4 * D, D)
        lin(h + "mlp.dense_4h_to_h", D, 4 * D)
    norm(p + "ln_f")
    write_folder("bloom", cfg, w, bloom_reference(as_f64(w), cfg, IDS), IDS)


MAKERS = [make_pythia, make_gptj, make_bloom]

if __name__ == "__main__":  # only these folders: python3 fixtures_parallel.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(6000 + i))
