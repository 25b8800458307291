"""BART, Marian and T5 fixtures for tests/core/hf_import_test.cpp, written by make_fixtures.py.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling_bart.py (BartLearnedPositionalEmbedding with its offset of 2,
layernorm_embedding, post-LN BartEncoderLayer/BartDecoderLayer, final_logits_bias),
modeling_marian.py (MarianSinusoidalPositionalEmbedding, scale_embedding, no embedding norm),
modeling_mbart.py (BART's embeddings with pre-LN layers and a LayerNorm ending each stack) and
modeling_t5.py (T5LayerNorm, T5Attention with _relative_position_bucket and no scaling,
T5DenseActDense / T5DenseGatedActDense, the d_model^-0.5 rescaling before a tied lm_head), written
against the Hugging Face weight names; they share nothing with HeadLab's C++.

Each folder's expected.safetensors holds "logits" [T_dec, V] and, per layer l,
"encoder_attentions.l", "decoder_attentions.l" and "cross_attentions.l" [heads, T_query, T_key];
its metadata gives the encoder "ids" and the "decoder_ids".
"""

import math

import numpy as np
import torch

from make_fixtures import IDS, as_f64, gelu_erf, gelu_new, layer_norm, linear, silu, write_folder

DECODER_IDS = [2, 0, 45, 12, 77, 3, 96, 8, 1]  # T_dec = 9, starts from a decoder start token

ACTIVATIONS = {"gelu": gelu_erf, "gelu_new": gelu_new, "swish": silu, "silu": silu, "relu": torch.relu}


def random_maker(g, w):
    def rnd(*shape, std=0.15):
        return (torch.randn(*shape, generator=g) * std).to(torch.float32)

    def lin(name, n_out, n_in, bias=True, std=0.15):
        w[name + ".weight"] = rnd(n_out, n_in, std=std)
        if bias:
            w[name + ".bias"] = rnd(n_out, std=std)

    def norm(name, width, bias=True):
        w[name + ".weight"] = 1 + rnd(width, std=0.1)
        if bias:
            w[name + ".bias"] = rnd(width, std=0.1)
    return rnd, lin, norm


def causal_mask(T):
    return torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)


# ---- BART and Marian (modeling_bart.py, modeling_marian.py) -------------------------------------

def marian_sinusoid(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight: numpy float64, stored as float32."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out = torch.empty(n_pos, dim, dtype=torch.float32)
    sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
    out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    return out


def bart_attention(W, name, x, kv, heads, mask, out_key, out):
    """BartAttention (eager): q scaled by head_dim^-0.5 after its bias, softmax over keys."""
    T, D = x.shape
    S = kv.shape[0]
    d = D // heads
    q = (linear(x, W, name + ".q_proj") * d ** -0.5).view(T, heads, d).transpose(0, 1)
    k = linear(kv, W, name + ".k_proj").view(S, heads, d).transpose(0, 1)
    v = linear(kv, W, name + ".v_proj").view(S, heads, d).transpose(0, 1)
    scores = q @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores + mask
    probs = torch.softmax(scores, dim=-1)
    out[out_key] = probs
    return linear((probs @ v).transpose(0, 1).reshape(T, D), W, name + ".out_proj")


def bart_reference(W, cfg, ids, dec_ids, marian, mbart=False):
    p = "model."
    D = cfg["d_model"]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], 1e-5)
    act = ACTIVATIONS[cfg["activation_function"]]
    scale = math.sqrt(D) if cfg["scale_embedding"] else 1.0
    out = {}

    def embed(stack, tokens):
        T = len(tokens)
        x = W[p + "shared.weight"][torch.tensor(tokens)] * scale
        if marian:
            x = x + W[p + stack + ".embed_positions.weight"][torch.arange(T)]
        else:  # BartLearnedPositionalEmbedding: positions + offset 2
            x = x + W[p + stack + ".embed_positions.weight"][torch.arange(T) + 2]
            x = ln(x, p + stack + ".layernorm_embedding")
        return x

    def sublayer(x, norm, f):
        if mbart:  # MBartEncoderLayer / MBartDecoderLayer: LayerNorm before, residual after
            return x + f(ln(x, norm))
        return ln(x + f(x), norm)  # BART: residual, then LayerNorm

    ffn = lambda h: lambda x: linear(act(linear(x, W, h + "fc1")), W, h + "fc2")
    x = embed("encoder", ids)
    for l in range(cfg["encoder_layers"]):
        h = p + "encoder.layers.%d." % l
        x = sublayer(x, h + "self_attn_layer_norm", lambda z: bart_attention(
            W, h + "self_attn", z, z, cfg["encoder_attention_heads"], None, "encoder_attentions.%d" % l, out))
        x = sublayer(x, h + "final_layer_norm", ffn(h))
    memory = ln(x, p + "encoder.layer_norm") if mbart else x
    y = embed("decoder", dec_ids)
    for l in range(cfg["decoder_layers"]):
        h = p + "decoder.layers.%d." % l
        y = sublayer(y, h + "self_attn_layer_norm", lambda z: bart_attention(
            W, h + "self_attn", z, z, cfg["decoder_attention_heads"], causal_mask(len(dec_ids)),
            "decoder_attentions.%d" % l, out))
        y = sublayer(y, h + "encoder_attn_layer_norm", lambda z: bart_attention(
            W, h + "encoder_attn", z, memory, cfg["decoder_attention_heads"], None, "cross_attentions.%d" % l, out))
        y = sublayer(y, h + "final_layer_norm", ffn(h))
    if mbart:
        y = ln(y, p + "decoder.layer_norm")
    out["logits"] = y @ W[p + "shared.weight"].T + W["final_logits_bias"][0]
    return out


def bart_weights(g, cfg, marian, mbart=False):
    w = {}
    rnd, lin, norm = random_maker(g, w)
    p, D, V, F = "model.", cfg["d_model"], cfg["vocab_size"], cfg["encoder_ffn_dim"]
    w[p + "shared.weight"] = rnd(V, D, std=1.0)
    for stack in ("encoder", "decoder"):
        if marian:
            w[p + stack + ".embed_positions.weight"] = marian_sinusoid(cfg["max_position_embeddings"], D)
        else:
            w[p + stack + ".embed_positions.weight"] = rnd(cfg["max_position_embeddings"] + 2, D, std=0.5)
            norm(p + stack + ".layernorm_embedding", D)
        for l in range(cfg[stack + "_layers"]):
            h = p + stack + ".layers.%d." % l
            attentions = ["self_attn"] + (["encoder_attn"] if stack == "decoder" else [])
            for a in attentions:
                for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                    lin(h + a + "." + proj, D, D)
                norm(h + a + "_layer_norm", D)
            lin(h + "fc1", F, D)
            lin(h + "fc2", D, F)
            norm(h + "final_layer_norm", D)
        if mbart:
            norm(p + stack + ".layer_norm", D)
    w["final_logits_bias"] = rnd(1, V, std=0.5)
    return w


BART_CONFIG = {"activation_dropout": 0.0, "activation_function": "gelu", "add_bias_logits": False,
               "add_final_layer_norm": False, "architectures": ["BartForConditionalGeneration"],
               "attention_dropout": 0.0, "bos_token_id": 0, "classifier_dropout": 0.0, "d_model": 32,
               "decoder_attention_heads": 4, "decoder_ffn_dim": 48, "decoder_layerdrop": 0.0, "decoder_layers": 2,
               "decoder_start_token_id": 2, "dropout": 0.1, "encoder_attention_heads": 4, "encoder_ffn_dim": 48,
               "encoder_layerdrop": 0.0, "encoder_layers": 2, "eos_token_id": 2, "forced_eos_token_id": 2,
               "init_std": 0.02, "is_encoder_decoder": True, "max_position_embeddings": 40, "model_type": "bart",
               "normalize_before": False, "normalize_embedding": True, "num_hidden_layers": 2, "pad_token_id": 1,
               "scale_embedding": False, "static_position_embeddings": False, "torch_dtype": "float32",
               "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}


def make_bart(g):
    cfg = dict(BART_CONFIG)
    w = bart_weights(g, cfg, False)
    expected = bart_reference(as_f64(w), cfg, IDS, DECODER_IDS, False)
    write_folder("bart", cfg, w, expected, IDS, extra_metadata={"decoder_ids": ",".join(map(str, DECODER_IDS))})


MARIAN_CONFIG = {"activation_dropout": 0.0, "activation_function": "swish", "architectures": ["MarianMTModel"],
                 "attention_dropout": 0.0, "bos_token_id": 0, "classifier_dropout": 0.0, "d_model": 32,
                 "decoder_attention_heads": 4, "decoder_ffn_dim": 48, "decoder_layerdrop": 0.0, "decoder_layers": 2,
                 "decoder_start_token_id": 99, "decoder_vocab_size": 100, "dropout": 0.1,
                 "encoder_attention_heads": 4, "encoder_ffn_dim": 48, "encoder_layerdrop": 0.0, "encoder_layers": 2,
                 "eos_token_id": 0, "forced_eos_token_id": 0, "init_std": 0.02, "is_encoder_decoder": True,
                 "max_position_embeddings": 40, "model_type": "marian", "normalize_embedding": False,
                 "num_hidden_layers": 2, "pad_token_id": 99, "scale_embedding": True,
                 "share_encoder_decoder_embeddings": True, "static_position_embeddings": True,
                 "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}


def make_marian(g):
    cfg = dict(MARIAN_CONFIG)
    w = bart_weights(g, cfg, True)
    dec = [99] + DECODER_IDS[1:]  # Marian's decoder starts from <pad>
    expected = bart_reference(as_f64(w), cfg, IDS, dec, True)
    write_folder("marian", cfg, w, expected, IDS, extra_metadata={"decoder_ids": ",".join(map(str, dec))})


def make_mbart(g):
    """mBART: pre-LN, a LayerNorm ending each stack, scaled embeddings, no decoder_start_token_id
    (the decoder starts from a language code; here the tokenizer-less fixture's first id)."""
    cfg = dict(BART_CONFIG)
    cfg.update({"architectures": ["MBartForConditionalGeneration"], "model_type": "mbart", "scale_embedding": True,
                "decoder_start_token_id": None})
    for key in ("add_bias_logits", "add_final_layer_norm", "normalize_before", "normalize_embedding",
                "static_position_embeddings"):
        del cfg[key]
    w = bart_weights(g, cfg, False, True)
    expected = bart_reference(as_f64(w), cfg, IDS, DECODER_IDS, False, True)
    write_folder("mbart", cfg, w, expected, IDS, extra_metadata={"decoder_ids": ",".join(map(str, DECODER_IDS))})


# ---- T5 (modeling_t5.py) ------------------------------------------------------------------------

def t5_layer_norm(x, w, eps):
    """T5LayerNorm: no mean subtracted, no bias."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + eps))


def relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance):
    """T5Attention._relative_position_bucket, its logarithm in float32 as there."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large,
                                           torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_position_bias(W, name, q_len, k_len, bidirectional, cfg):
    context = torch.arange(q_len, dtype=torch.long)[:, None]
    memory = torch.arange(k_len, dtype=torch.long)[None, :]
    buckets = relative_position_bucket(memory - context, bidirectional, cfg["relative_attention_num_buckets"],
                                       cfg["relative_attention_max_distance"])
    return W[name][buckets].permute(2, 0, 1)  # [heads, q, k]


def t5_attention(W, name, x, kv, cfg, bias, out_key, out):
    """T5Attention (eager): no scaling, position bias (and mask) added to the scores."""
    H, dk = cfg["num_heads"], cfg["d_kv"]
    T, S = x.shape[0], kv.shape[0]
    q = (x @ W[name + ".q.weight"].T).view(T, H, dk).transpose(0, 1)
    k = (kv @ W[name + ".k.weight"].T).view(S, H, dk).transpose(0, 1)
    v = (kv @ W[name + ".v.weight"].T).view(S, H, dk).transpose(0, 1)
    scores = q @ k.transpose(-1, -2)
    if bias is not None:
        scores = scores + bias
    probs = torch.softmax(scores, dim=-1)
    out[out_key] = probs
    return (probs @ v).transpose(0, 1).reshape(T, H * dk) @ W[name + ".o.weight"].T


def t5_ffn(W, name, x, cfg):
    proj = cfg["feed_forward_proj"]
    if proj.startswith("gated-"):  # T5DenseGatedActDense; "gated-gelu" runs gelu_new
        act = gelu_new if proj == "gated-gelu" else ACTIVATIONS[proj[6:]]
        h = act(x @ W[name + ".wi_0.weight"].T) * (x @ W[name + ".wi_1.weight"].T)
    else:
        h = ACTIVATIONS[proj](x @ W[name + ".wi.weight"].T)
    return h @ W[name + ".wo.weight"].T


def t5_reference(W, cfg, ids, dec_ids):
    eps = cfg["layer_norm_epsilon"]
    norm = lambda x, name: t5_layer_norm(x, W[name + ".weight"], eps)
    out = {}
    x = W["shared.weight"][torch.tensor(ids)]
    T = len(ids)
    bias = t5_position_bias(W, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", T, T, True, cfg)
    for l in range(cfg["num_layers"]):
        h = "encoder.block.%d.layer." % l
        x = x + t5_attention(W, h + "0.SelfAttention", norm(x, h + "0.layer_norm"), norm(x, h + "0.layer_norm"), cfg,
                             bias, "encoder_attentions.%d" % l, out)
        x = x + t5_ffn(W, h + "1.DenseReluDense", norm(x, h + "1.layer_norm"), cfg)
    memory = norm(x, "encoder.final_layer_norm")
    y = W["shared.weight"][torch.tensor(dec_ids)]
    Td = len(dec_ids)
    bias = t5_position_bias(W, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", Td, Td, False,
                            cfg) + causal_mask(Td)
    for l in range(cfg["num_decoder_layers"]):
        h = "decoder.block.%d.layer." % l
        n = norm(y, h + "0.layer_norm")
        y = y + t5_attention(W, h + "0.SelfAttention", n, n, cfg, bias, "decoder_attentions.%d" % l, out)
        y = y + t5_attention(W, h + "1.EncDecAttention", norm(y, h + "1.layer_norm"), memory, cfg, None,
                             "cross_attentions.%d" % l, out)
        y = y + t5_ffn(W, h + "2.DenseReluDense", norm(y, h + "2.layer_norm"), cfg)
    y = norm(y, "decoder.final_layer_norm")
    if cfg["tie_word_embeddings"]:
        out["logits"] = (y * cfg["d_model"] ** -0.5) @ W["shared.weight"].T
    else:
        out["logits"] = y @ W["lm_head.weight"].T
    return out


def t5_weights(g, cfg):
    w = {}
    rnd, lin, norm = random_maker(g, w)
    D, V, F, H, dk = cfg["d_model"], cfg["vocab_size"], cfg["d_ff"], cfg["num_heads"], cfg["d_kv"]
    w["shared.weight"] = rnd(V, D, std=1.0)
    gated = cfg["feed_forward_proj"].startswith("gated-")
    for stack, layers in (("encoder", cfg["num_layers"]), ("decoder", cfg["num_decoder_layers"])):
        for l in range(layers):
            h = "%s.block.%d.layer." % (stack, l)
            attentions = [("0.", "SelfAttention")] + ([("1.", "EncDecAttention")] if stack == "decoder" else [])
            for index, a in attentions:
                for proj, shape in (("q", (H * dk, D)), ("k", (H * dk, D)), ("v", (H * dk, D)), ("o", (D, H * dk))):
                    lin(h + index + a + "." + proj, *shape, bias=False)
                if l == 0 and a == "SelfAttention":
                    w[h + "0.SelfAttention.relative_attention_bias.weight"] = rnd(
                        cfg["relative_attention_num_buckets"], H, std=1.0)
                norm(h + index + "layer_norm", D, bias=False)
            f = h + ("2." if stack == "decoder" else "1.")
            if gated:
                lin(f + "DenseReluDense.wi_0", F, D, bias=False)
                lin(f + "DenseReluDense.wi_1", F, D, bias=False)
            else:
                lin(f + "DenseReluDense.wi", F, D, bias=False)
            lin(f + "DenseReluDense.wo", D, F, bias=False)
            norm(f + "layer_norm", D, bias=False)
        norm(stack + ".final_layer_norm", D, bias=False)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = rnd(V, D, std=0.5)
    return w


T5_CONFIG = {"architectures": ["T5ForConditionalGeneration"], "d_ff": 48, "d_kv": 6, "d_model": 32,
             "decoder_start_token_id": 0, "dense_act_fn": "relu", "dropout_rate": 0.1, "eos_token_id": 1,
             "feed_forward_proj": "relu", "initializer_factor": 1.0, "is_encoder_decoder": True,
             "is_gated_act": False, "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512,
             "num_decoder_layers": 3, "num_heads": 4, "num_layers": 2, "pad_token_id": 0,
             "relative_attention_max_distance": 10, "relative_attention_num_buckets": 8, "tie_word_embeddings": True,
             "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}


def make_t5(g):
    """T5 v1.0: ReLU feed-forward, tied head; 8 buckets up to distance 10, so 12 tokens reach the
    logarithmic buckets and their clamp."""
    cfg = dict(T5_CONFIG)
    w = t5_weights(g, cfg)
    dec = [0] + DECODER_IDS[1:]
    expected = t5_reference(as_f64(w), cfg, IDS, dec)
    write_folder("t5", cfg, w, expected, IDS, extra_metadata={"decoder_ids": ",".join(map(str, dec))})


def make_t5_v1_1(g):
    """T5 v1.1: gated-GELU (gelu_new), an untied lm_head, the default 32 buckets up to 128."""
    cfg = dict(T5_CONFIG)
    cfg.update({"dense_act_fn": "gelu_new", "feed_forward_proj": "gated-gelu", "is_gated_act": True,
                "num_decoder_layers": 2, "relative_attention_max_distance": 128,
                "relative_attention_num_buckets": 32, "tie_word_embeddings": False})
    del cfg["n_positions"]
    w = t5_weights(g, cfg)
    dec = [0] + DECODER_IDS[1:]
    expected = t5_reference(as_f64(w), cfg, IDS, dec)
    write_folder("t5-v1_1", cfg, w, expected, IDS, extra_metadata={"decoder_ids": ",".join(map(str, dec))})


MAKERS = [make_bart, make_marian, make_t5, make_t5_v1_1, make_mbart]
