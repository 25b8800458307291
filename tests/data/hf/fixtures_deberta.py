"""DeBERTa-v3 and DeBERTa-v2 fixtures for HeadLab's DeBERTa import tests, written by make_fixtures.py:
disentangled attention (content-to-position and position-to-content terms from one relative-position
table), DeBERTa-v3's logarithmic position buckets and shared attention keys, DeBERTa-v2's clamped
offsets and separate position projections, and both spellings of the masked-LM head.

The reference forward pass is an independent float64 transcription of the eager code path of
transformers' modeling_deberta_v2.py (DebertaV2ForMaskedLM), written against the Hugging Face weight
names, sharing nothing with HeadLab's C++:
- DebertaV2Embeddings: word_embeddings, + position_embeddings when position_biased_input (default
  true), + token_type_embeddings[0] when type_vocab_size > 0, then LayerNorm (no embed_proj here);
- DebertaV2Encoder: rel_embeddings [2·span, D] with span = position_buckets if > 0 else
  max_relative_positions (max_position_embeddings when < 1), LayerNorm'd when norm_rel_ebd has
  "layer_norm"; relative_pos[i, j] = i − j, log-bucketed as make_log_bucket_position does (in float32,
  as there) when position_buckets > 0;
- DisentangledSelfAttention: scale = sqrt(head_dim · (1 + c2p + p2c)); c2p = gather(q · pos_keyᵀ, -1,
  clamp(relative_pos + span, 0, 2·span − 1)); p2c = gather(k · pos_queryᵀ, -1, clamp(−relative_pos +
  span, 0, 2·span − 1))ᵀ; pos_key / pos_query from the layer's key_proj / query_proj when
  share_att_key, else from pos_key_proj / pos_query_proj; post-LN BERT-style layers with erf GELU;
- the masked-LM head: legacy (config "legacy" true or absent) cls.predictions.transform.{dense,
  LayerNorm} then the tied word embeddings + cls.predictions.bias; new (legacy false, the
  microsoft/deberta-v3-* spelling) lm_predictions.lm_head.{dense, LayerNorm, bias}, same formula.
"""

import math

import torch

from make_fixtures import IDS, as_f64, gelu_erf, layer_norm, linear, write_folder


def rnd_maker(g):
    return lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std


# ---- config reading, as DebertaV2Config / the modules' getattr defaults do ---------------------

def pos_att_types(cfg):  # DebertaV2Config: a "p2c|c2p" string is split on "|", lowercased, stripped
    t = cfg.get("pos_att_type")
    if t is None:
        return []
    if isinstance(t, str):
        t = [x.strip() for x in t.lower().split("|")]
    return t


def relative_setup(cfg):
    """(max_relative_positions, position_buckets, att_span) as DebertaV2Encoder / DisentangledSelfAttention."""
    max_rel = cfg.get("max_relative_positions", -1)
    if max_rel < 1:
        max_rel = cfg["max_position_embeddings"]
    buckets = cfg.get("position_buckets", -1)
    span = buckets if buckets > 0 else max_rel
    return max_rel, buckets, span


# ---- relative positions (build_relative_position / make_log_bucket_position) ------------------

def relative_positions(T, bucket_size, max_position):
    """[1, T, T] int64: each query's offset i − j to each key; with buckets, offsets beyond ±mid
    (mid = bucket_size // 2) become ±(⌈ln(|δ|/mid) / ln((max_position − 1)/mid) · (mid − 1)⌉ + mid).
    The arithmetic runs in float32, as torch's default dtype computes it in transformers."""
    delta = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    if bucket_size > 0 and max_position > 0:
        mid = bucket_size // 2
        magnitude = delta.abs().clamp(min=mid - 1)  # offsets inside ±mid count as mid − 1 (log stays finite)
        ratio = torch.log(torch.tensor((max_position - 1) / mid, dtype=torch.float32))
        far = torch.ceil(torch.log(magnitude.to(torch.float32) / mid) / ratio * (mid - 1)) + mid
        delta = torch.where(magnitude <= mid, delta.to(torch.float32), far * delta.sign().to(torch.float32)).long()
    return delta.unsqueeze(0)


# ---- DebertaV2ForMaskedLM --------------------------------------------------------------------

def deberta_reference(W, cfg, ids, check=None):
    """logits [T, V] and attentions.<l> [H, T, T]; `check` (a dict) collects each layer's q, k,
    pos_key, pos_query, c2p and p2c terms for the loop re-derivation in self_check."""
    D, H, T, eps = cfg["hidden_size"], cfg["num_attention_heads"], len(ids), cfg["layer_norm_eps"]
    d = D // H
    assert cfg.get("embedding_size", D) == D and cfg.get("conv_kernel_size", 0) == 0
    e = "deberta.embeddings."
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    split = lambda t: t.view(t.shape[0], H, d).permute(1, 0, 2)  # transpose_for_scores: [H, rows, d]

    # DebertaV2Embeddings (attention mask all ones: the mask multiply is the identity)
    x = W[e + "word_embeddings.weight"][torch.tensor(ids)]
    if cfg.get("position_biased_input", True):
        x = x + W[e + "position_embeddings.weight"][torch.arange(T)]
    if cfg.get("type_vocab_size", 0) > 0:
        x = x + W[e + "token_type_embeddings.weight"][torch.zeros(T, dtype=torch.long)]
    x = ln(x, e + "LayerNorm")

    # DebertaV2Encoder
    types = pos_att_types(cfg)
    relative = cfg.get("relative_attention", False)
    share = cfg.get("share_att_key", False)
    if relative:
        max_rel, buckets, span = relative_setup(cfg)
        rel_embeddings = W["deberta.encoder.rel_embeddings.weight"]
        assert rel_embeddings.shape[0] == 2 * span
        norm_rel_ebd = [x_.strip() for x_ in cfg.get("norm_rel_ebd", "none").lower().split("|")]
        if "layer_norm" in norm_rel_ebd:
            rel_embeddings = ln(rel_embeddings, "deberta.encoder.LayerNorm")
        relative_pos = relative_positions(T, buckets, max_rel)  # [1, T, T]
        relative_pos = relative_pos.unsqueeze(1)  # dim 3 -> [1, 1, T, T], as disentangled_attention_bias
    scale_factor = 1 + ("c2p" in types) + ("p2c" in types)
    scale = math.sqrt(d * scale_factor)

    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "deberta.encoder.layer.%d." % l
        s = h + "attention.self."
        q = split(linear(x, W, s + "query_proj"))
        k = split(linear(x, W, s + "key_proj"))
        v = split(linear(x, W, s + "value_proj"))
        scores = q @ k.transpose(-1, -2) / scale
        if relative:
            rel = rel_embeddings[0:span * 2, :]
            if share:
                pos_query = split(linear(rel, W, s + "query_proj"))
                pos_key = split(linear(rel, W, s + "key_proj"))
            else:
                pos_key = split(linear(rel, W, s + "pos_key_proj")) if "c2p" in types else None
                pos_query = split(linear(rel, W, s + "pos_query_proj")) if "p2c" in types else None
            c2p = p2c = None
            if "c2p" in types:
                c2p_att = q @ pos_key.transpose(-1, -2)  # [H, T, 2span]
                c2p_pos = torch.clamp(relative_pos + span, 0, span * 2 - 1)
                c2p = torch.gather(c2p_att, dim=-1, index=c2p_pos.squeeze(0).expand([H, T, relative_pos.size(-1)]))
                scores = scores + c2p / scale
            if "p2c" in types:
                r_pos = relative_pos  # query and key lengths agree
                p2c_pos = torch.clamp(-r_pos + span, 0, span * 2 - 1)
                p2c_att = k @ pos_query.transpose(-1, -2)  # [H, T(keys), 2span]
                p2c = torch.gather(p2c_att, dim=-1, index=p2c_pos.squeeze(0).expand([H, T, T])).transpose(-1, -2)
                scores = scores + p2c / scale
            if check is not None:
                check[l] = {"q": q, "k": k, "pos_key": pos_key, "pos_query": pos_query, "c2p": c2p, "p2c": p2c,
                            "scores": scores}
        probs = torch.softmax(scores, dim=-1)
        out["attentions.%d" % l] = probs
        ctx = (probs @ v).permute(1, 0, 2).reshape(T, D)
        a = ln(linear(ctx, W, h + "attention.output.dense") + x, h + "attention.output.LayerNorm")
        i = gelu_erf(linear(a, W, h + "intermediate.dense"))  # hidden_act "gelu"
        x = ln(linear(i, W, h + "output.dense") + a, h + "output.LayerNorm")

    # the masked-LM head
    if cfg.get("legacy", True):  # LegacyDebertaV2OnlyMLMHead: cls.predictions, decoder tied to the embeddings
        p = "cls.predictions."
        y = ln(gelu_erf(linear(x, W, p + "transform.dense")), p + "transform.LayerNorm")
        out["logits"] = y @ W[e + "word_embeddings.weight"].T + W[p + "bias"]
    else:  # DebertaV2OnlyMLMHead: lm_predictions.lm_head
        p = "lm_predictions.lm_head."
        y = ln(gelu_erf(linear(x, W, p + "dense")), p + "LayerNorm")
        out["logits"] = torch.matmul(y, W[e + "word_embeddings.weight"].t()) + W[p + "bias"]
    return out


# ---- self-check: the same position terms from explicit loops --------------------------------

def bucket_scalar(r, bucket_size, max_position):  # make_log_bucket_position for one offset, in float64
    mid = bucket_size // 2
    if abs(r) <= mid:
        return r
    log_pos = math.ceil(math.log(abs(r) / mid) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    return log_pos if r > 0 else -log_pos


def self_check(W, cfg, ids, out):
    T, H = len(ids), cfg["num_attention_heads"]
    d = cfg["hidden_size"] // H
    max_rel, buckets, span = relative_setup(cfg)
    types = pos_att_types(cfg)
    scale = math.sqrt(d * (1 + ("c2p" in types) + ("p2c" in types)))

    def delta(r):  # relative position i − j after bucketing
        return bucket_scalar(r, buckets, max_rel) if buckets > 0 else r

    clamp = lambda t: min(max(t, 0), 2 * span - 1)
    table = relative_positions(T, buckets, max_rel)[0]
    assert all(int(table[i, j]) == delta(i - j) for i in range(T) for j in range(T)), "bucket table differs"
    check = {}
    again = deberta_reference(W, cfg, ids, check)
    worst = 0.0
    for l, c in check.items():
        q, k, pk, pq = c["q"], c["k"], c["pos_key"], c["pos_query"]
        for hh in range(H):
            for i in range(T):
                for j in range(T):
                    want = float(q[hh, i] @ k[hh, j]) / scale
                    # c2p: query i against the table row of its offset to key j
                    c2p = float(q[hh, i] @ pk[hh, clamp(delta(i - j) + span)])
                    # p2c: key j against the table row of the negated offset of key j to query i
                    p2c = float(k[hh, j] @ pq[hh, clamp(-delta(j - i) + span)])
                    worst = max(worst, abs(c2p - float(c["c2p"][hh, i, j])), abs(p2c - float(c["p2c"][hh, i, j])))
                    want += c2p / scale + p2c / scale
                    worst = max(worst, abs(want - float(c["scores"][hh, i, j])))
    for key in out:
        worst = max(worst, float((again[key] - out[key]).abs().max()))
    assert worst < 1e-12, worst
    rows = max(float((out["attentions.%d" % l].sum(-1) - 1).abs().max()) for l in range(cfg["num_hidden_layers"]))
    assert rows < 1e-12, rows
    return table, worst, rows


# ---- the fixtures ----------------------------------------------------------------------------

def base_config(version):
    return {"architectures": ["DebertaV2ForMaskedLM"], "model_type": "deberta-v2",
            "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
            "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 48, "layer_norm_eps": 1e-07,
            "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0,
            "pooler_dropout": 0, "pooler_hidden_act": "gelu", "pooler_hidden_size": 32, "relative_attention": True,
            "torch_dtype": "float32", "transformers_version": version, "vocab_size": 100}


def deberta_weights(g, cfg):
    D, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    rnd = rnd_maker(g)
    norm = lambda w, name: w.update({name + ".weight": 1 + rnd(D, std=0.1), name + ".bias": rnd(D, std=0.1)})
    dense = lambda w, name, n_out, n_in, std=0.15: w.update({name + ".weight": rnd(n_out, n_in, std=std),
                                                            name + ".bias": rnd(n_out, std=0.1)})
    e = "deberta.embeddings."
    w = {e + "word_embeddings.weight": rnd(V, D, std=0.5)}
    if cfg.get("position_biased_input", True):
        w[e + "position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], D, std=0.5)
    if cfg.get("type_vocab_size", 0) > 0:
        w[e + "token_type_embeddings.weight"] = rnd(cfg["type_vocab_size"], D, std=0.5)
    norm(w, e + "LayerNorm")
    types, share = pos_att_types(cfg), cfg.get("share_att_key", False)
    for l in range(cfg["num_hidden_layers"]):
        h = "deberta.encoder.layer.%d." % l
        s = h + "attention.self."
        dense(w, s + "query_proj", D, D, std=0.3)
        dense(w, s + "key_proj", D, D, std=0.3)
        dense(w, s + "value_proj", D, D)
        if not share:
            if "c2p" in types:
                dense(w, s + "pos_key_proj", D, D, std=0.3)
            if "p2c" in types:
                dense(w, s + "pos_query_proj", D, D, std=0.3)
        dense(w, h + "attention.output.dense", D, D)
        norm(w, h + "attention.output.LayerNorm")
        dense(w, h + "intermediate.dense", I, D)
        dense(w, h + "output.dense", D, I)
        norm(w, h + "output.LayerNorm")
    _, _, span = relative_setup(cfg)
    w["deberta.encoder.rel_embeddings.weight"] = rnd(2 * span, D, std=1.0)
    if "layer_norm" in cfg.get("norm_rel_ebd", "none"):
        norm(w, "deberta.encoder.LayerNorm")
    if cfg.get("legacy", True):  # the decoder weight is the tied word embeddings: not stored
        dense(w, "cls.predictions.transform.dense", D, D, std=0.3)
        norm(w, "cls.predictions.transform.LayerNorm")
        w["cls.predictions.bias"] = rnd(V, std=0.2)
    else:
        dense(w, "lm_predictions.lm_head.dense", D, D, std=0.3)
        norm(w, "lm_predictions.lm_head.LayerNorm")
        w["lm_predictions.lm_head.bias"] = rnd(V, std=0.2)
    return w


def make_deberta(name, cfg, g):
    w = deberta_weights(g, cfg)
    W = as_f64(w)
    out = deberta_reference(W, cfg, IDS)
    table, worst, rows = self_check(W, cfg, IDS, out)
    write_folder(name, cfg, w, out, IDS)
    if __name__ == "__main__":  # only when run alone: what the self-check saw
        print("  relative positions after bucketing (query i down, key j across):")
        for row in table.tolist():
            print("   " + " ".join("%3d" % r for r in row))
        att = torch.stack([out["attentions.%d" % l] for l in range(cfg["num_hidden_layers"])])
        print("  loop re-derivation max |diff| %.2e, max |row sum - 1| %.2e, attention max %.3f min %.2e"
              % (worst, rows, float(att.max()), float(att.min())))


def make_deberta_v3(g):
    # microsoft/deberta-v3-*'s shape as transformers 4.4x writes it (with the new head's legacy false):
    # 8 position buckets (offsets beyond ±4 share logarithmic rows up to 64), share_att_key, the
    # position table LayerNorm'd, no absolute positions, no token types.
    cfg = base_config("4.48.0")
    cfg.update({"legacy": False, "max_relative_positions": -1, "norm_rel_ebd": "layer_norm",
                "pos_att_type": ["p2c", "c2p"], "position_biased_input": False, "position_buckets": 8,
                "share_att_key": True, "type_vocab_size": 0})
    make_deberta("deberta-v3", cfg, g)


def make_deberta_v2(g):
    # The older DeBERTa-v2 spelling: offsets clamped to ±6, pos_key_proj / pos_query_proj per layer, the
    # "p2c|c2p" string, absolute positions and token types added, no "legacy" key (cls.predictions).
    cfg = base_config("4.26.1")
    cfg.update({"max_relative_positions": 6, "pos_att_type": "p2c|c2p", "position_biased_input": True,
                "share_att_key": False, "type_vocab_size": 2})
    make_deberta("deberta-v2", cfg, g)


MAKERS = [make_deberta_v3, make_deberta_v2]

if __name__ == "__main__":  # only these folders: python3 fixtures_deberta.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(11000 + i))
