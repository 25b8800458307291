"""OLMo 2 and ModernBERT fixtures for tests/core/hf_falcon_phi_modernbert_test.cpp, written by
make_fixtures.py: norms after each sublayer, norms of whole query/key projections, an identity norm
before the first layer's attention, local and global layers with RoPE bases of their own.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling files, written against the Hugging Face weight names, sharing nothing with
HeadLab's C++:
- modeling_olmo2.py (Olmo2ForCausalLM): q_norm / k_norm RMSNorms over the whole q_proj / k_proj outputs
  before RoPE, x + post_attention_layernorm(attn(x)), x + post_feedforward_layernorm(mlp(x)) with no
  norm before either, SwiGLU MLP, final norm, untied head;
- modeling_modernbert.py (ModernBertForMaskedLM): tok_embeddings then a LayerNorm without bias, layers
  whose attn_norm is the identity in layer 0, Wqkv viewed [3, heads, head_dim], RoPE with
  global_rope_theta in layers l % global_attn_every_n_layers == 0 and local_rope_theta elsewhere, where
  keys further than local_attention // 2 are masked, GeGLU MLP gelu(Wi's first half) · second half,
  final_norm, head = norm(gelu(dense(x))), decoder tied to the embeddings with a bias.
"""

import torch

from make_fixtures import IDS, as_f64, gelu_erf, layer_norm, linear, rms_norm, rotate_half, silu, write_folder


def rnd_maker(g):
    return lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std


def rope_tables(theta, hd, T):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().double(), emb.sin().double()


# ---- OLMo 2 ------------------------------------------------------------------------------------

def olmo2_reference(W, cfg, ids):
    D, H, KV, T = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], len(ids)
    hd, eps, p = D // H, cfg["rms_norm_eps"], "model."
    cos, sin = rope_tables(cfg["rope_theta"], hd, T)
    mask = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        q = rms_norm(linear(x, W, h + "self_attn.q_proj", False), W[h + "self_attn.q_norm.weight"], eps)
        k = rms_norm(linear(x, W, h + "self_attn.k_proj", False), W[h + "self_attn.k_norm.weight"], eps)
        v = linear(x, W, h + "self_attn.v_proj", False).view(T, KV, hd).transpose(0, 1)
        q, k = q.view(T, H, hd).transpose(0, 1), k.view(T, KV, hd).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k[:, None].expand(KV, H // KV, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(KV, H // KV, T, hd).reshape(H, T, hd)
        w = torch.softmax(q @ k.transpose(-1, -2) * hd ** -0.5 + mask, dim=-1)
        out["attentions.%d" % l] = w
        attn = linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "self_attn.o_proj", False)
        x = x + rms_norm(attn, W[h + "post_attention_layernorm.weight"], eps)
        mlp = linear(silu(linear(x, W, h + "mlp.gate_proj", False)) * linear(x, W, h + "mlp.up_proj", False),
                     W, h + "mlp.down_proj", False)
        x = x + rms_norm(mlp, W[h + "post_feedforward_layernorm.weight"], eps)
    x = rms_norm(x, W[p + "norm.weight"], eps)
    out["logits"] = x @ W["lm_head.weight"].T
    return out


def make_olmo2(g):
    # OLMo 2 as transformers 4.48 writes OLMo-2-1124-7B's config: GQA here (2 key/value heads) so that
    # the key norm's width differs from the query norm's.
    cfg = {"architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": None, "eos_token_id": 99, "hidden_act": "silu", "hidden_size": 32,
           "initializer_range": 0.02, "intermediate_size": 48, "max_position_embeddings": 64,
           "model_type": "olmo2", "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "pad_token_id": 1, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 500000,
           "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.48.0",
           "use_cache": True, "vocab_size": 100}
    D, I, V, hd = 32, 48, 100, 8
    rnd = rnd_maker(g)
    w = {"model.embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "model.layers.%d." % l
        w[h + "self_attn.q_proj.weight"] = rnd(4 * hd, D, std=0.3)
        w[h + "self_attn.k_proj.weight"] = rnd(2 * hd, D, std=0.3)
        w[h + "self_attn.v_proj.weight"] = rnd(2 * hd, D)
        w[h + "self_attn.o_proj.weight"] = rnd(D, 4 * hd)
        w[h + "self_attn.q_norm.weight"] = 1 + rnd(4 * hd, std=0.3)
        w[h + "self_attn.k_norm.weight"] = 1 + rnd(2 * hd, std=0.3)
        w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "mlp.gate_proj.weight"] = rnd(I, D)
        w[h + "mlp.up_proj.weight"] = rnd(I, D)
        w[h + "mlp.down_proj.weight"] = rnd(D, I)
        w[h + "post_feedforward_layernorm.weight"] = 1 + rnd(D, std=0.1)
    w["model.norm.weight"] = 1 + rnd(D, std=0.1)
    w["lm_head.weight"] = rnd(V, D, std=0.3)
    write_folder("olmo2", cfg, w, olmo2_reference(as_f64(w), cfg, IDS), IDS)


# ---- ModernBERT --------------------------------------------------------------------------------

def modernbert_reference(W, cfg, ids):
    D, H, T = cfg["hidden_size"], cfg["num_attention_heads"], len(ids)
    hd, eps, p = D // H, cfg["norm_eps"], "model."
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], 0.0, eps)  # norm_bias false
    tables = {"global": rope_tables(cfg["global_rope_theta"], hd, T),
              "local": rope_tables(cfg["local_rope_theta"], hd, T)}
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    window = torch.zeros(T, T, dtype=torch.float64).masked_fill(
        (i - j).abs() > cfg["local_attention"] // 2, torch.finfo(torch.float64).min)
    x = ln(W[p + "embeddings.tok_embeddings.weight"][torch.tensor(ids)], p + "embeddings.norm")
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        glob = l % cfg["global_attn_every_n_layers"] == 0
        cos, sin = tables["global" if glob else "local"]
        a = x if l == 0 else ln(x, h + "attn_norm")
        qkv = linear(a, W, h + "attn.Wqkv", False).view(T, 3, H, hd)
        q, k, v = (qkv[:, n].transpose(0, 1) for n in range(3))
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        scores = q @ k.transpose(-1, -2) * hd ** -0.5 + (0 if glob else window)
        w = torch.softmax(scores, dim=-1)
        out["attentions.%d" % l] = w
        x = x + linear((w @ v).transpose(0, 1).reshape(T, D), W, h + "attn.Wo", False)
        inp, gate = linear(ln(x, h + "mlp_norm"), W, h + "mlp.Wi", False).chunk(2, dim=-1)
        x = x + linear(gelu_erf(inp) * gate, W, h + "mlp.Wo", False)
    x = ln(x, p + "final_norm")
    y = ln(gelu_erf(linear(x, W, "head.dense", False)), "head.norm")
    out["logits"] = y @ W[p + "embeddings.tok_embeddings.weight"].T + W["decoder.bias"]
    return out


def make_modernbert(g):
    # ModernBERT as transformers 4.48 writes ModernBERT-base's config: 4 layers (global, local, local,
    # global), a local window of 6 (3 keys each side of the 12 tokens), RoPE bases 160000 / 10000.
    cfg = {"architectures": ["ModernBertForMaskedLM"], "attention_bias": False, "attention_dropout": 0.0,
           "bos_token_id": 50, "classifier_activation": "gelu", "classifier_bias": False,
           "classifier_dropout": 0.0, "classifier_pooling": "mean", "cls_token_id": 50, "decoder_bias": True,
           "deterministic_flash_attn": False, "embedding_dropout": 0.0, "eos_token_id": 51,
           "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0, "hidden_activation": "gelu",
           "hidden_size": 32, "initializer_cutoff_factor": 2.0, "initializer_range": 0.02,
           "intermediate_size": 48, "local_attention": 6, "local_rope_theta": 10000.0,
           "max_position_embeddings": 128, "mlp_bias": False, "mlp_dropout": 0.0, "model_type": "modernbert",
           "norm_bias": False, "norm_eps": 1e-05, "num_attention_heads": 4, "num_hidden_layers": 4,
           "pad_token_id": 52, "sep_token_id": 51, "sparse_pred_ignore_index": -100, "sparse_prediction": False,
           "torch_dtype": "float32", "transformers_version": "4.48.0", "vocab_size": 100}
    D, I, V = 32, 48, 100
    rnd = rnd_maker(g)
    p = "model."
    w = {p + "embeddings.tok_embeddings.weight": rnd(V, D, std=0.5),
         p + "embeddings.norm.weight": 1 + rnd(D, std=0.1)}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        if l > 0:
            w[h + "attn_norm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "attn.Wqkv.weight"] = rnd(3 * D, D, std=0.3)
        w[h + "attn.Wo.weight"] = rnd(D, D)
        w[h + "mlp_norm.weight"] = 1 + rnd(D, std=0.1)
        w[h + "mlp.Wi.weight"] = rnd(2 * I, D)
        w[h + "mlp.Wo.weight"] = rnd(D, I)
    w[p + "final_norm.weight"] = 1 + rnd(D, std=0.1)
    w["head.dense.weight"] = rnd(D, D, std=0.3)
    w["head.norm.weight"] = 1 + rnd(D, std=0.1)
    w["decoder.bias"] = rnd(V, std=0.2)
    write_folder("modernbert", cfg, w, modernbert_reference(as_f64(w), cfg, IDS), IDS)


MAKERS = [make_olmo2, make_modernbert]

if __name__ == "__main__":  # only these folders: python3 fixtures_olmo2_modernbert.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(9000 + i))
