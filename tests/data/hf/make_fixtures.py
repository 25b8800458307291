#!/usr/bin/python3
"""Tiny random-weight Hugging Face model folders and their reference outputs, for
tests/core/hf_import_test.cpp.

    /usr/bin/python3 tests/data/hf/make_fixtures.py     # Debian's python3-torch; no transformers

For each folder under tests/data/hf/ it writes
  config.json           the Hugging Face config, with "architectures"
  model.safetensors     (or shards + model.safetensors.index.json) under Hugging Face names/layouts
  expected.safetensors  reference outputs for the ids in its metadata:
                        "logits" [T, V] and "attentions.<layer>" [heads, T, T]

The reference forward passes below are independent transcriptions of the eager code paths of
transformers' modeling_bert.py, modeling_roberta.py, modeling_distilbert.py, modeling_gpt2.py, modeling_llama.py,
modeling_qwen2.py, modeling_mistral.py, modeling_qwen3.py, modeling_gemma2.py and modeling_gemma3.py
(ELECTRA and ALBERT: fixtures_encoders.py; BART, Marian and T5: fixtures_seq2seq.py; the scaled rope
types: fixtures_rope_scaling.py; Phi-3, SmolLM3, Gemma, OPT and OLMo: fixtures_decoders.py; GPT-NeoX,
GPT-J and BLOOM: fixtures_parallel.py; Mixtral and gpt-oss: fixtures_moe.py; Phi-2 and Falcon:
fixtures_phi_falcon.py; OLMo 2 and ModernBERT: fixtures_olmo2_modernbert.py; DeepSeek-V2 and -V3:
fixtures_deepseek.py; DeBERTa-v3 and -v2: fixtures_deberta.py)
(activation formulas, norms, RoPE, GQA repeat_kv, masks), written against the Hugging Face weight
names and layouts -- they share nothing with HeadLab's C++. They run in float64 from the stored
weights (for the BF16 folder: from the BF16-rounded weights), so the C++ float32 run is compared
with an exact-arithmetic reference. The safetensors files are written by hand (the safetensors
package is not needed): u64 LE header length, JSON header padded with spaces to 8 bytes, data.
The outputs are committed; the C++ tests do not need Python.
"""

import json
import math
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
assert sys.byteorder == "little", "the safetensors writer below assumes a little-endian host"

DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
               torch.bool: "BOOL", torch.uint8: "U8"}

IDS = [1, 17, 42, 99, 5, 63, 2, 88, 31, 7, 54, 0]  # T = 12, includes both ends of the vocabulary


# ---- safetensors --------------------------------------------------------------------------------

def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    if t.dtype == torch.bool:
        return t.to(torch.uint8).numpy().tobytes()
    return t.numpy().tobytes()


def save_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, t in tensors.items():
        data = tensor_bytes(t)
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def write_folder(name, config, weights, expected, ids, shards=1, extra_metadata=None):
    folder = os.path.join(HERE, name)
    os.makedirs(folder, exist_ok=True)
    for old in os.listdir(folder):
        if old.endswith(".safetensors") or old.endswith(".json"):
            os.remove(os.path.join(folder, old))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    if shards == 1:
        save_safetensors(os.path.join(folder, "model.safetensors"), weights, {"format": "pt"})
    else:
        names = list(weights)
        per = math.ceil(len(names) / shards)
        weight_map = {}
        for s in range(shards):
            file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = {n: weights[n] for n in names[s * per:(s + 1) * per]}
            save_safetensors(os.path.join(folder, file), part, {"format": "pt"})
            weight_map.update({n: file for n in part})
        total = sum(t.numel() * t.element_size() for t in weights.values())
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
            f.write("\n")
    metadata = {"ids": ",".join(str(i) for i in ids), "producer": "make_fixtures.py"}
    metadata.update(extra_metadata or {})
    save_safetensors(os.path.join(folder, "expected.safetensors"),
                     {k: v.to(torch.float32).contiguous() for k, v in expected.items()}, metadata)
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
    print("%-10s %3d KB  %s" % (name, size // 1024, ", ".join(sorted(k for k in expected if "." not in k))))


# ---- shared math (float64) ----------------------------------------------------------------------

def layer_norm(x, w, b, eps):  # torch.nn.LayerNorm: biased variance
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):  # LlamaRMSNorm / Qwen2RMSNorm
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gelu_erf(x):  # GELUActivation ("gelu")
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_new(x):  # NewGELUActivation ("gelu_new")
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def silu(x):
    return x * torch.sigmoid(x)


def linear(x, W, name, bias=True):  # nn.Linear: weight [out, in]
    y = x @ W[name + ".weight"].T
    return y + W[name + ".bias"] if bias else y


def as_f64(weights):
    return {k: v.to(torch.float64) for k, v in weights.items() if v.is_floating_point()}


# ---- BERT (modeling_bert.py) --------------------------------------------------------------------

def bert_encoder(W, cfg, x, p, ln, out):
    """modeling_bert.py's BertLayer stack (RoBERTa's is the same): post-LN self-attention and GELU MLP;
    each layer's attention probabilities go into out["attentions.<l>"]."""
    H, D = cfg["num_attention_heads"], cfg["hidden_size"]
    d, T = D // H, x.shape[0]
    for l in range(cfg["num_hidden_layers"]):
        h = "%sencoder.layer.%d." % (p, l)
        split = lambda t: t.view(T, H, d).permute(1, 0, 2)  # transpose_for_scores
        q = split(linear(x, W, h + "attention.self.query"))
        k = split(linear(x, W, h + "attention.self.key"))
        v = split(linear(x, W, h + "attention.self.value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        out["attentions.%d" % l] = probs
        context = (probs @ v).permute(1, 0, 2).reshape(T, D)
        a = ln(linear(context, W, h + "attention.output.dense") + x, h + "attention.output.LayerNorm")
        i = gelu_erf(linear(a, W, h + "intermediate.dense"))
        x = ln(linear(i, W, h + "output.dense") + a, h + "output.LayerNorm")
    return x


def weight_makers(g, w, D, norm_names=(".weight", ".bias"), bias_std=0.1, bias=True):
    """Random-weight makers that fill `w`: rnd(*shape, std), norm(name) (a LayerNorm of width D) and
    lin(name, n_out, n_in, std) (an nn.Linear, with a bias of std `bias_std` when `bias`)."""
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std

    def norm(name):
        w[name + norm_names[0]] = 1 + rnd(D, std=0.1)
        w[name + norm_names[1]] = rnd(D, std=0.1)

    def lin(name, n_out, n_in, std=0.15):
        w[name + ".weight"] = rnd(n_out, n_in, std=std)
        if bias:
            w[name + ".bias"] = rnd(n_out, std=bias_std)

    return rnd, norm, lin


def bert_layer_weights(lin, norm, p, layers, D, I):
    """Random weights of BertLayer stacks under p + "encoder.layer.<l>." (BERT and RoBERTa)."""
    for l in range(layers):
        h = "%sencoder.layer.%d." % (p, l)
        lin(h + "attention.self.query", D, D, 0.3)
        lin(h + "attention.self.key", D, D, 0.3)
        lin(h + "attention.self.value", D, D)
        lin(h + "attention.output.dense", D, D)
        norm(h + "attention.output.LayerNorm")
        lin(h + "intermediate.dense", I, D)
        lin(h + "output.dense", D, I)
        norm(h + "output.LayerNorm")


def bert_reference(W, cfg, ids, types):
    p, eps, T = "bert.", cfg["layer_norm_eps"], len(ids)

    def ln(x, name):  # this fixture stores LayerNorms as gamma/beta, like bert-base-uncased
        return layer_norm(x, W[name + ".gamma"], W[name + ".beta"], eps)

    ids_t, types_t, pos = torch.tensor(ids), torch.tensor(types), torch.arange(T)
    x = (W[p + "embeddings.word_embeddings.weight"][ids_t] + W[p + "embeddings.token_type_embeddings.weight"][types_t]
         + W[p + "embeddings.position_embeddings.weight"][pos])
    x = ln(x, p + "embeddings.LayerNorm")
    out = {}
    x = bert_encoder(W, cfg, x, p, ln, out)
    t = gelu_erf(linear(x, W, "cls.predictions.transform.dense"))
    t = ln(t, "cls.predictions.transform.LayerNorm")
    out["logits"] = t @ W[p + "embeddings.word_embeddings.weight"].T + W["cls.predictions.bias"]
    return out


def make_bert(g):
    cfg = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "attention_probs_dropout_prob": 0.1,
           "classifier_dropout": None, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 32,
           "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-12,
           "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0,
           "position_embedding_type": "absolute", "torch_dtype": "float32", "transformers_version": "4.44.0",
           "type_vocab_size": 2, "use_cache": True, "vocab_size": 100}
    D, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D, (".gamma", ".beta"))  # gamma/beta, like bert-base-uncased

    p = "bert."
    w[p + "embeddings.word_embeddings.weight"] = rnd(V, D, std=1.0)
    w[p + "embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], D, std=0.5)
    w[p + "embeddings.token_type_embeddings.weight"] = rnd(2, D, std=0.5)
    w[p + "embeddings.position_ids"] = torch.arange(cfg["max_position_embeddings"]).unsqueeze(0)  # old buffer
    norm(p + "embeddings.LayerNorm")
    bert_layer_weights(lin, norm, p, cfg["num_hidden_layers"], D, I)
    lin(p + "pooler.dense", D, D)  # unused by the MLM logits (checkpoints from BertForPreTraining have it)
    lin("cls.predictions.transform.dense", D, D)
    norm("cls.predictions.transform.LayerNorm")
    w["cls.predictions.bias"] = rnd(V, std=0.1)
    lin("cls.seq_relationship", 2, D)  # next-sentence head, unused
    types = [0] * 6 + [1] * 6
    expected = bert_reference(as_f64(w), cfg, IDS, types)
    write_folder("bert", cfg, w, expected, IDS, extra_metadata={"token_types": ",".join(map(str, types))})


# ---- RoBERTa (modeling_roberta.py) --------------------------------------------------------------

ROBERTA_IDS = [0, 17, 42, 99, 5, 63, 3, 88, 31, 7, 54, 2]  # <s> … </s>; no padding id (1)


def roberta_reference(W, cfg, ids):
    p, eps, pad = "roberta.", cfg["layer_norm_eps"], cfg["pad_token_id"]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    ids_t = torch.tensor(ids)
    mask = (ids_t != pad).long()
    pos = torch.cumsum(mask, 0) * mask + pad  # create_position_ids_from_input_ids: pad + 1, pad + 2, …
    x = (W[p + "embeddings.word_embeddings.weight"][ids_t] + W[p + "embeddings.token_type_embeddings.weight"][0]
         + W[p + "embeddings.position_embeddings.weight"][pos])
    x = ln(x, p + "embeddings.LayerNorm")
    out = {}
    x = bert_encoder(W, cfg, x, p, ln, out)
    # RobertaLMHead: decoder(layer_norm(gelu(dense(x)))) + bias, the decoder tied to the word embeddings.
    t = ln(gelu_erf(linear(x, W, "lm_head.dense")), "lm_head.layer_norm")
    out["logits"] = t @ W[p + "embeddings.word_embeddings.weight"].T + W["lm_head.bias"]
    return out


def make_roberta(g):
    cfg = {"architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "attention_probs_dropout_prob": 0.1,
           "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
           "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-05,
           "max_position_embeddings": 34, "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 1,
           "position_embedding_type": "absolute", "torch_dtype": "float32", "transformers_version": "4.44.0",
           "type_vocab_size": 1, "use_cache": True, "vocab_size": 100}
    D, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D)

    p = "roberta."
    w[p + "embeddings.word_embeddings.weight"] = rnd(V, D, std=1.0)
    w[p + "embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], D, std=0.5)
    w[p + "embeddings.token_type_embeddings.weight"] = rnd(1, D, std=0.5)
    norm(p + "embeddings.LayerNorm")
    bert_layer_weights(lin, norm, p, cfg["num_hidden_layers"], D, I)
    lin("lm_head.dense", D, D)
    norm("lm_head.layer_norm")
    w["lm_head.bias"] = rnd(V, std=0.1)
    w["lm_head.decoder.weight"] = w[p + "embeddings.word_embeddings.weight"]  # saved tied, as released files are
    write_folder("roberta", cfg, w, roberta_reference(as_f64(w), cfg, ROBERTA_IDS), ROBERTA_IDS)


# ---- DistilBERT (modeling_distilbert.py) --------------------------------------------------------

def distilbert_reference(W, cfg, ids):
    p, eps = "distilbert.", 1e-12  # every DistilBERT LayerNorm uses eps=1e-12
    H, D = cfg["n_heads"], cfg["dim"]
    d, T = D // H, len(ids)
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    x = W[p + "embeddings.word_embeddings.weight"][torch.tensor(ids)] + W[p + "embeddings.position_embeddings.weight"][:T]
    x = ln(x, p + "embeddings.LayerNorm")
    out = {}
    for l in range(cfg["n_layers"]):
        h = "%stransformer.layer.%d." % (p, l)
        split = lambda t: t.view(T, H, d).transpose(0, 1)
        q = split(linear(x, W, h + "attention.q_lin")) / math.sqrt(d)  # MultiHeadSelfAttention scales q first
        k = split(linear(x, W, h + "attention.k_lin"))
        v = split(linear(x, W, h + "attention.v_lin"))
        probs = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        out["attentions.%d" % l] = probs
        context = (probs @ v).transpose(0, 1).reshape(T, D)
        sa = ln(linear(context, W, h + "attention.out_lin") + x, h + "sa_layer_norm")
        f = linear(gelu_erf(linear(sa, W, h + "ffn.lin1")), W, h + "ffn.lin2")
        x = ln(f + sa, h + "output_layer_norm")
    t = ln(gelu_erf(linear(x, W, "vocab_transform")), "vocab_layer_norm")
    out["logits"] = t @ W[p + "embeddings.word_embeddings.weight"].T + W["vocab_projector.bias"]
    return out


def make_distilbert(g):
    cfg = {"architectures": ["DistilBertForMaskedLM"], "model_type": "distilbert", "activation": "gelu",
           "attention_dropout": 0.1, "dim": 32, "dropout": 0.1, "hidden_dim": 64, "initializer_range": 0.02,
           "max_position_embeddings": 64, "n_heads": 4, "n_layers": 2, "pad_token_id": 0, "qa_dropout": 0.1,
           "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True,
           "torch_dtype": "float32", "transformers_version": "4.44.0", "vocab_size": 100}
    D, I, V = cfg["dim"], cfg["hidden_dim"], cfg["vocab_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D)

    p = "distilbert."
    w[p + "embeddings.word_embeddings.weight"] = rnd(V, D, std=1.0)
    w[p + "embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], D, std=0.5)
    norm(p + "embeddings.LayerNorm")
    for l in range(cfg["n_layers"]):
        h = "%stransformer.layer.%d." % (p, l)
        lin(h + "attention.q_lin", D, D, 0.3)
        lin(h + "attention.k_lin", D, D, 0.3)
        lin(h + "attention.v_lin", D, D)
        lin(h + "attention.out_lin", D, D)
        norm(h + "sa_layer_norm")
        lin(h + "ffn.lin1", I, D)
        lin(h + "ffn.lin2", D, I)
        norm(h + "output_layer_norm")
    lin("vocab_transform", D, D)
    norm("vocab_layer_norm")
    w["vocab_projector.bias"] = rnd(V, std=0.1)
    write_folder("distilbert", cfg, w, distilbert_reference(as_f64(w), cfg, IDS), IDS)


# ---- GPT-2 (modeling_gpt2.py) -------------------------------------------------------------------

def gpt2_reference(W, cfg, ids):
    eps, H, D = cfg["layer_norm_epsilon"], cfg["n_head"], cfg["n_embd"]
    d, T = D // H, len(ids)
    conv1d = lambda x, name: x @ W[name + ".weight"] + W[name + ".bias"]  # Conv1D: weight [in, out]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    x = W["wte.weight"][torch.tensor(ids)] + W["wpe.weight"][torch.arange(T)]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    out = {}
    for l in range(cfg["n_layer"]):
        h = "h.%d." % l
        a = ln(x, h + "ln_1")
        q, k, v = conv1d(a, h + "attn.c_attn").split(D, dim=-1)
        split = lambda t: t.view(T, H, d).permute(1, 0, 2)
        q, k, v = split(q), split(k), split(v)
        w = q @ k.transpose(-1, -2)
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)  # scale_attn_weights
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = torch.softmax(w, dim=-1)
        out["attentions.%d" % l] = w
        context = (w @ v).permute(1, 0, 2).reshape(T, D)
        x = x + conv1d(context, h + "attn.c_proj")
        m = gelu_new(conv1d(ln(x, h + "ln_2"), h + "mlp.c_fc"))
        x = x + conv1d(m, h + "mlp.c_proj")
    x = ln(x, "ln_f")
    out["logits"] = x @ W["wte.weight"].T  # lm_head tied to wte
    return out


def make_gpt2(g):
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
           "attn_pdrop": 0.1, "bos_token_id": 98, "embd_pdrop": 0.1, "eos_token_id": 98,
           "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "n_ctx": 32, "n_embd": 32, "n_head": 4,
           "n_inner": None, "n_layer": 2, "n_positions": 32, "resid_pdrop": 0.1, "scale_attn_weights": True,
           "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}
    D, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
    I = 4 * D
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    w = {"wte.weight": rnd(V, D, std=0.5), "wpe.weight": rnd(P, D, std=0.3)}

    def norm(name):
        w[name + ".weight"] = 1 + rnd(D, std=0.1)
        w[name + ".bias"] = rnd(D, std=0.1)

    def conv(name, n_in, n_out, std=0.15):
        w[name + ".weight"] = rnd(n_in, n_out, std=std)
        w[name + ".bias"] = rnd(n_out, std=0.1)

    for l in range(cfg["n_layer"]):
        h = "h.%d." % l
        norm(h + "ln_1")
        w[h + "attn.bias"] = torch.tril(torch.ones(P, P)).view(1, 1, P, P)  # the old causal-mask buffer
        w[h + "attn.masked_bias"] = torch.tensor(-1e4)
        conv(h + "attn.c_attn", D, 3 * D, 0.3)
        conv(h + "attn.c_proj", D, D)
        norm(h + "ln_2")
        conv(h + "mlp.c_fc", D, I)
        conv(h + "mlp.c_proj", I, D)
    norm("ln_f")
    write_folder("gpt2", cfg, w, gpt2_reference(as_f64(w), cfg, IDS), IDS)


# ---- Llama / Qwen2 (modeling_llama.py, modeling_qwen2.py) ---------------------------------------

def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def default_rope_init(cfg, hd, T):  # _compute_default_rope_parameters: float32 inv_freq, no attention factor
    return 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd)), 1.0


def llama_reference(W, cfg, ids, qwen2, rope_init=default_rope_init):
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or D // H
    eps, T = cfg["rms_norm_eps"], len(ids)
    p = "model."
    q_bias = qwen2 or cfg.get("attention_bias", False)
    o_bias = (not qwen2) and cfg.get("attention_bias", False)
    # LlamaRotaryEmbedding: float32 inv_freq and angles, as transformers does; a scaled rope type
    # (fixtures_rope_scaling.py) gives its inv_freq and the attention factor cos and sin are scaled by.
    inv_freq, attention_factor = rope_init(cfg, hd, T)
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = (emb.cos() * attention_factor).double(), (emb.sin() * attention_factor).double()
    mask = torch.triu(torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64), diagonal=1)
    if cfg.get("sliding_window") and cfg.get("model_type") == "mistral":
        # modeling_mistral.py: query i sees keys j with i - sliding_window < j <= i.
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = mask.masked_fill(j <= i - cfg["sliding_window"], torch.finfo(torch.float64).min)

    def norm(x, name):
        if cfg.get("model_type") == "olmo":  # OlmoLayerNorm: no weight or bias, eps 1e-5
            return layer_norm(x, 1.0, 0.0, 1e-5)
        return rms_norm(x, W[name + ".weight"], eps)

    x = W[p + "embed_tokens.weight"][torch.tensor(ids)]
    out = {}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        a = norm(x, h + "input_layernorm")
        q = linear(a, W, h + "self_attn.q_proj", q_bias)
        k = linear(a, W, h + "self_attn.k_proj", q_bias)
        v = linear(a, W, h + "self_attn.v_proj", q_bias)
        if cfg.get("clip_qkv"):  # modeling_olmo.py: each projection clamped to [-clip_qkv, clip_qkv]
            c = cfg["clip_qkv"]
            q, k, v = q.clamp(-c, c), k.clamp(-c, c), v.clamp(-c, c)
        q = q.view(T, H, hd).transpose(0, 1)
        k = k.view(T, KV, hd).transpose(0, 1)
        v = v.view(T, KV, hd).transpose(0, 1)
        if cfg.get("model_type") == "qwen3":  # modeling_qwen3.py: q_norm/k_norm over head_dim, before RoPE
            q = rms_norm(q, W[h + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, W[h + "self_attn.k_norm.weight"], eps)
        if cfg.get("no_rope_layers") is None or cfg["no_rope_layers"][l]:  # SmolLM3: 0 = a NoPE layer
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin  # apply_rotary_pos_emb
        n_rep = H // KV  # repeat_kv
        k = k[:, None].expand(KV, n_rep, T, hd).reshape(KV * n_rep, T, hd)
        v = v[:, None].expand(KV, n_rep, T, hd).reshape(KV * n_rep, T, hd)
        w = q @ k.transpose(-1, -2) * hd ** -0.5 + mask
        w = torch.softmax(w, dim=-1)
        out["attentions.%d" % l] = w
        context = (w @ v).transpose(0, 1).reshape(T, H * hd)
        x = x + linear(context, W, h + "self_attn.o_proj", o_bias)
        m = norm(x, h + "post_attention_layernorm")
        mlp_bias = cfg.get("mlp_bias", False)
        m = linear(silu(linear(m, W, h + "mlp.gate_proj", mlp_bias)) * linear(m, W, h + "mlp.up_proj", mlp_bias),
                   W, h + "mlp.down_proj", mlp_bias)
        x = x + m
    x = norm(x, p + "norm")
    head = W[p + "embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else W["lm_head.weight"]
    out["logits"] = x @ head.T
    return out


def llama_weights(g, cfg, qwen2, inv_freq_buffer=False):
    D, H, V, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"], cfg["intermediate_size"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or D // H
    q_bias = qwen2 or cfg.get("attention_bias", False)
    o_bias = (not qwen2) and cfg.get("attention_bias", False)
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    p = "model."
    w = {p + "embed_tokens.weight": rnd(V, D, std=0.5)}

    def lin(name, n_out, n_in, bias, std=0.15):
        w[name + ".weight"] = rnd(n_out, n_in, std=std)
        if bias:
            w[name + ".bias"] = rnd(n_out, std=0.2)

    norms = cfg.get("model_type") != "olmo"  # OlmoLayerNorm has no weights
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        if norms:
            w[h + "input_layernorm.weight"] = 1 + rnd(D, std=0.1)
        lin(h + "self_attn.q_proj", H * hd, D, q_bias, 0.3)
        lin(h + "self_attn.k_proj", KV * hd, D, q_bias, 0.3)
        lin(h + "self_attn.v_proj", KV * hd, D, q_bias)
        lin(h + "self_attn.o_proj", D, H * hd, o_bias)
        if cfg.get("model_type") == "qwen3":
            w[h + "self_attn.q_norm.weight"] = 1 + rnd(hd, std=0.3)
            w[h + "self_attn.k_norm.weight"] = 1 + rnd(hd, std=0.3)
        if inv_freq_buffer:  # older Llama checkpoints saved the rotary buffer
            w[h + "self_attn.rotary_emb.inv_freq"] = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
        if norms:
            w[h + "post_attention_layernorm.weight"] = 1 + rnd(D, std=0.1)
        lin(h + "mlp.gate_proj", I, D, False)
        lin(h + "mlp.up_proj", I, D, False)
        lin(h + "mlp.down_proj", D, I, False)
    if norms:
        w[p + "norm.weight"] = 1 + rnd(D, std=0.1)
    if not cfg.get("tie_word_embeddings", False):
        w["lm_head.weight"] = rnd(V, D, std=0.3)
    return w


LLAMA_BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
              "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
              "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64,
              "max_position_embeddings": 64, "mlp_bias": False, "num_attention_heads": 4,
              "num_hidden_layers": 2, "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
              "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": False,
              "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}


def make_llama(g):
    cfg = dict(LLAMA_BASE)  # GQA: 4 query heads, 2 kv heads
    w = llama_weights(g, cfg, False, inv_freq_buffer=True)
    write_folder("llama", cfg, w, llama_reference(as_f64(w), cfg, IDS, False), IDS)


def make_llama_bf16(g):
    # BF16 weights; also MQA (1 kv head), an explicit head_dim != hidden/heads, attention_bias
    # (q, k, v and o), tied embeddings (no lm_head in the file) and a "default" rope_scaling.
    cfg = dict(LLAMA_BASE, num_key_value_heads=1, head_dim=16, attention_bias=True, tie_word_embeddings=True,
               rope_scaling={"rope_type": "default"}, rope_theta=10000.0, torch_dtype="bfloat16")
    w = {k: v.to(torch.bfloat16) for k, v in llama_weights(g, cfg, False).items()}
    # The reference runs on exactly the stored (BF16-rounded) values.
    write_folder("llama-bf16", cfg, w, llama_reference(as_f64(w), cfg, IDS, False), IDS)


def make_qwen2(g):
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "attention_dropout": 0.0,
           "bos_token_id": 98, "eos_token_id": 99, "hidden_act": "silu", "hidden_size": 32,
           "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 128,
           "max_window_layers": 2, "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 128, "tie_word_embeddings": False,
           "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True,
           "use_sliding_window": False, "vocab_size": 100}
    w = llama_weights(g, cfg, True)
    # Sharded, as the released Qwen2 checkpoints are.
    write_folder("qwen2", cfg, w, llama_reference(as_f64(w), cfg, IDS, True), IDS, shards=2)


def make_mistral(g):
    # Mistral: Llama's layout with a sliding window of 4 keys (the query and the 3 before it), so the
    # window cuts into the 12-token input.
    cfg = dict(LLAMA_BASE, architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=4,
               rope_theta=10000.0, head_dim=8)
    for key in ("attention_bias", "mlp_bias", "pretraining_tp"):
        cfg.pop(key)
    w = llama_weights(g, cfg, False)
    write_folder("mistral", cfg, w, llama_reference(as_f64(w), cfg, IDS, False), IDS)


def make_qwen3(g):
    # Qwen3: per-head RMSNorm of queries and keys (q_norm, k_norm) before RoPE, head_dim (12) unlike
    # hidden/heads (8), no biases, tied embeddings; written as transformers 5 writes configs.
    cfg = dict(LLAMA_BASE, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=12,
               tie_word_embeddings=True, rms_norm_eps=1e-06, use_sliding_window=False, sliding_window=None,
               max_window_layers=2, layer_types=["full_attention", "full_attention"], dtype="float32",
               rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, transformers_version="5.0.0")
    for key in ("mlp_bias", "pretraining_tp", "rope_theta", "rope_scaling", "torch_dtype"):
        cfg.pop(key)
    cfg_ref = dict(cfg, rope_theta=1000000.0)
    w = llama_weights(g, cfg_ref, False)
    write_folder("qwen3", cfg, w, llama_reference(as_f64(w), cfg_ref, IDS, False), IDS)


# ---- Gemma 2 / Gemma 3 (modeling_gemma2.py, modeling_gemma3.py) -------------------------------

def gemma_rms_norm(x, w, eps):  # Gemma2RMSNorm / Gemma3RMSNorm: the weight is stored as an offset from 1
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def gemma_layer_types(cfg):
    if cfg.get("layer_types"):
        return cfg["layer_types"]
    # Gemma2DecoderLayer: is_sliding = not bool(layer_idx % 2); Gemma3: bool((layer_idx + 1) % pattern).
    pattern = cfg.get("sliding_window_pattern", 6 if cfg["model_type"] == "gemma3_text" else 2)
    return ["sliding_attention" if (l + 1) % pattern else "full_attention" for l in range(cfg["num_hidden_layers"])]


def rope_cos_sin(theta, hd, T):  # the default rotary embedding: float32 inv_freq and angles
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    emb = torch.cat((torch.outer(torch.arange(T).float(), inv_freq),) * 2, dim=-1)
    return emb.cos().double(), emb.sin().double()


def gemma_reference(W, cfg, ids, embed_dtype, global_theta, local_theta, global_rope=None):
    """Gemma2ForCausalLM / Gemma3ForCausalLM, eager attention, no padding. `global_theta` and
    `local_theta` are the RoPE bases of full_attention and sliding_attention layers; `global_rope`
    (cos, sin) replaces the global layers' tables (a scaled rope type)."""
    gemma3 = cfg["model_type"] == "gemma3_text"
    D, H, KV, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, T, p = cfg["rms_norm_eps"], len(ids), "model."
    bias = cfg.get("attention_bias", False)
    scaling = cfg["query_pre_attn_scalar"] ** -0.5
    attn_cap, final_cap = cfg.get("attn_logit_softcapping"), cfg.get("final_logit_softcapping")
    rope = {"full_attention": global_rope or rope_cos_sin(global_theta, hd, T),
            "sliding_attention": rope_cos_sin(local_theta, hd, T)}
    min_value = torch.finfo(torch.float64).min
    causal = torch.triu(torch.full((T, T), min_value, dtype=torch.float64), diagonal=1)
    # Sliding layers also mask keys j <= i - sliding_window (tril(ones, diagonal=-sliding_window)).
    window = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-cfg["sliding_window"])
    # The embeddings are multiplied by sqrt(hidden_size) as a tensor of the embeddings' dtype.
    normalizer = torch.tensor(D ** 0.5, dtype=embed_dtype).double()
    x = W[p + "embed_tokens.weight"][torch.tensor(ids)] * normalizer
    out = {}
    for l, layer_type in enumerate(gemma_layer_types(cfg)):
        h = "%slayers.%d." % (p, l)
        a = gemma_rms_norm(x, W[h + "input_layernorm.weight"], eps)
        q = linear(a, W, h + "self_attn.q_proj", bias).view(T, H, hd).transpose(0, 1)
        k = linear(a, W, h + "self_attn.k_proj", bias).view(T, KV, hd).transpose(0, 1)
        v = linear(a, W, h + "self_attn.v_proj", bias).view(T, KV, hd).transpose(0, 1)
        if gemma3:  # Gemma3Attention: q_norm/k_norm over head_dim, before RoPE
            q = gemma_rms_norm(q, W[h + "self_attn.q_norm.weight"], eps)
            k = gemma_rms_norm(k, W[h + "self_attn.k_norm.weight"], eps)
        cos, sin = rope[layer_type]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        n_rep = H // KV
        k = k[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
        v = v[:, None].expand(KV, n_rep, T, hd).reshape(H, T, hd)
        w = q @ k.transpose(-1, -2) * scaling
        if attn_cap is not None:
            w = torch.tanh(w / attn_cap) * attn_cap
        mask = causal.masked_fill(window, min_value) if layer_type == "sliding_attention" else causal
        w = torch.softmax(w + mask, dim=-1)
        out["attentions.%d" % l] = w
        context = (w @ v).transpose(0, 1).reshape(T, H * hd)
        o = linear(context, W, h + "self_attn.o_proj", bias)
        x = x + gemma_rms_norm(o, W[h + "post_attention_layernorm.weight"], eps)
        m = gemma_rms_norm(x, W[h + "pre_feedforward_layernorm.weight"], eps)
        m = linear(gelu_new(linear(m, W, h + "mlp.gate_proj", False)) * linear(m, W, h + "mlp.up_proj", False),
                   W, h + "mlp.down_proj", False)  # gelu_pytorch_tanh is gelu_new's formula
        x = x + gemma_rms_norm(m, W[h + "post_feedforward_layernorm.weight"], eps)
    x = gemma_rms_norm(x, W[p + "norm.weight"], eps)
    logits = x @ W[p + "embed_tokens.weight"].T  # tied
    if final_cap is not None:
        logits = torch.tanh(logits / final_cap) * final_cap
    out["logits"] = logits
    return out


def gemma_weights(g, cfg):
    D, H, V, I = cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"], cfg["intermediate_size"]
    KV, hd = cfg["num_key_value_heads"], cfg["head_dim"]
    rnd = lambda *shape, std=0.15: torch.randn(*shape, generator=g) * std
    p = "model."
    w = {p + "embed_tokens.weight": rnd(V, D, std=0.5)}
    for l in range(cfg["num_hidden_layers"]):
        h = "%slayers.%d." % (p, l)
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            w[h + norm + ".weight"] = rnd(D, std=0.3)  # offsets from 1
        w[h + "self_attn.q_proj.weight"] = rnd(H * hd, D, std=0.4)
        w[h + "self_attn.k_proj.weight"] = rnd(KV * hd, D, std=0.4)
        w[h + "self_attn.v_proj.weight"] = rnd(KV * hd, D)
        w[h + "self_attn.o_proj.weight"] = rnd(D, H * hd)
        if cfg["model_type"] == "gemma3_text":
            w[h + "self_attn.q_norm.weight"] = rnd(hd, std=0.5)
            w[h + "self_attn.k_norm.weight"] = rnd(hd, std=0.5)
        w[h + "mlp.gate_proj.weight"] = rnd(I, D)
        w[h + "mlp.up_proj.weight"] = rnd(I, D)
        w[h + "mlp.down_proj.weight"] = rnd(D, I)
    w[p + "norm.weight"] = rnd(D, std=0.3)
    return w


def make_gemma2(g):
    # Gemma 2 as transformers 4.44 writes it (no layer_types: even layers slide): a window of 4 keys
    # within the 12-token input, both soft-caps small enough to bend the logits, head_dim (12) unlike
    # hidden/heads (8) and query_pre_attn_scalar (16) unlike head_dim.
    cfg = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attention_bias": False,
           "attention_dropout": 0.0, "attn_logit_softcapping": 3.0, "bos_token_id": 2,
           "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": 10.0, "head_dim": 12,
           "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 32,
           "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
           "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2, "pad_token_id": 0,
           "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4,
           "torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": 100}
    w = gemma_weights(g, cfg)
    expected = gemma_reference(as_f64(w), cfg, IDS, torch.float32, 10000.0, 10000.0)
    write_folder("gemma2", cfg, w, expected, IDS)


def make_gemma3(g):
    # Gemma 3 text as transformers 4.50 writes it: five sliding layers (RoPE base 10⁴) and one global
    # layer (10⁶), q/k norms, no soft-capping; BF16 weights, so sqrt(48) is rounded to BF16 (6.9375).
    cfg = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "attention_bias": False,
           "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2,
           "cache_implementation": "hybrid", "eos_token_id": 1, "final_logit_softcapping": None, "head_dim": 16,
           "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 48, "initializer_range": 0.02,
           "intermediate_size": 64, "max_position_embeddings": 128, "num_attention_heads": 4,
           "num_hidden_layers": 6, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 16,
           "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": None, "rope_theta": 1000000.0,
           "sliding_window": 4, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
           "transformers_version": "4.50.0", "use_cache": True, "vocab_size": 100}
    w = {k: v.to(torch.bfloat16) for k, v in gemma_weights(g, cfg).items()}
    expected = gemma_reference(as_f64(w), cfg, IDS, torch.bfloat16, 1000000.0, 10000.0)
    write_folder("gemma3", cfg, w, expected, IDS)


def main():
    torch.manual_seed(0)
    for i, make in enumerate([make_bert, make_gpt2, make_llama, make_llama_bf16, make_qwen2, make_mistral,
                              make_qwen3, make_roberta, make_distilbert, make_gemma2, make_gemma3]):
        make(torch.Generator().manual_seed(1000 + i))
    # The other files' folders, each file's makers seeded from its own base.
    import importlib
    for name, seed in (("fixtures_encoders", 2000),  # ELECTRA, ALBERT
                       ("fixtures_seq2seq", 3000),  # BART, Marian, T5
                       ("fixtures_rope_scaling", 4000),  # Llama 3.1's and the other scaled rope types
                       ("fixtures_decoders", 5000),  # Phi-3, SmolLM3, Gemma, OPT, OLMo (and with clip_qkv)
                       ("fixtures_parallel", 6000),  # GPT-NeoX (Pythia), GPT-J, BLOOM
                       ("fixtures_moe", 7000),  # Mixtral, gpt-oss
                       ("fixtures_phi_falcon", 8000),  # Phi-2, Falcon's three layouts
                       ("fixtures_olmo2_modernbert", 9000),  # OLMo 2, ModernBERT
                       ("fixtures_deepseek", 10000),  # DeepSeek-V2 (and -Lite), DeepSeek-V3
                       ("fixtures_deberta", 11000)):  # DeBERTa-v3, DeBERTa-v2
        for i, make in enumerate(importlib.import_module(name).MAKERS):
            make(torch.Generator().manual_seed(seed + i))

if __name__ == "__main__":
    main()
