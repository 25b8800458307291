"""ELECTRA and ALBERT fixtures for tests/core/hf_import_test.cpp, written by make_fixtures.py.

The reference forward passes are independent float64 transcriptions of the eager code paths of
transformers' modeling_electra.py (ElectraEmbeddings, embeddings_project, the BERT-style
ElectraLayer, ElectraGeneratorPredictions + generator_lm_head) and modeling_albert.py
(AlbertEmbeddings, AlbertTransformer's embedding_hidden_mapping_in and layer groups, AlbertLayer,
AlbertMLMHead), written against the Hugging Face weight names; they share nothing with HeadLab's C++.
"""

import math

import torch

from make_fixtures import IDS, as_f64, bert_encoder, bert_layer_weights, weight_makers, gelu_erf, gelu_new, \
    layer_norm, linear, write_folder

TYPES = [0] * 6 + [1] * 6


def embeddings(W, p, ids, types, ln):
    """ElectraEmbeddings / AlbertEmbeddings: LayerNorm(word + token type + absolute position), all of
    width embedding_size."""
    ids_t, types_t, pos = torch.tensor(ids), torch.tensor(types), torch.arange(len(ids))
    x = (W[p + "embeddings.word_embeddings.weight"][ids_t] + W[p + "embeddings.token_type_embeddings.weight"][types_t]
         + W[p + "embeddings.position_embeddings.weight"][pos])
    return ln(x, p + "embeddings.LayerNorm")


def embedding_weights(rnd, norm_e, w, p, cfg):
    E, V = cfg["embedding_size"], cfg["vocab_size"]
    w[p + "embeddings.word_embeddings.weight"] = rnd(V, E, std=1.0)
    w[p + "embeddings.position_embeddings.weight"] = rnd(cfg["max_position_embeddings"], E, std=0.5)
    w[p + "embeddings.token_type_embeddings.weight"] = rnd(cfg["type_vocab_size"], E, std=0.5)
    w[p + "embeddings.position_ids"] = torch.arange(cfg["max_position_embeddings"]).unsqueeze(0)  # the buffer
    norm_e(p + "embeddings.LayerNorm")


def norm_maker(rnd, w, width):
    def norm(name):
        w[name + ".weight"] = 1 + rnd(width, std=0.1)
        w[name + ".bias"] = rnd(width, std=0.1)
    return norm


# ---- ELECTRA (modeling_electra.py) --------------------------------------------------------------

ELECTRA_BASE = {"model_type": "electra", "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
                "embedding_size": 16, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 32,
                "initializer_range": 0.02, "intermediate_size": 64, "layer_norm_eps": 1e-12,
                "max_position_embeddings": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "pad_token_id": 0,
                "position_embedding_type": "absolute", "summary_activation": "gelu", "summary_last_dropout": 0.1,
                "summary_type": "first", "summary_use_proj": True, "torch_dtype": "float32",
                "transformers_version": "4.44.0", "type_vocab_size": 2, "use_cache": True, "vocab_size": 100}


def electra_reference(W, cfg, ids, types):
    p, eps = "electra.", cfg["layer_norm_eps"]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    x = embeddings(W, p, ids, types, ln)
    if cfg["embedding_size"] != cfg["hidden_size"]:  # ElectraModel.embeddings_project
        x = linear(x, W, p + "embeddings_project")
    out = {}
    x = bert_encoder(W, cfg, x, p, ln, out)  # ElectraLayer is BertLayer (hidden_act "gelu")
    word = W[p + "embeddings.word_embeddings.weight"]
    if "generator_predictions.dense.weight" in W:
        # ElectraGeneratorPredictions: LayerNorm(gelu(dense(h))) at embedding_size (gelu whatever
        # hidden_act says; LayerNorm eps = layer_norm_eps), then generator_lm_head tied to the words.
        t = ln(gelu_erf(linear(x, W, "generator_predictions.dense")), "generator_predictions.LayerNorm")
        out["logits"] = t @ word.T + W["generator_lm_head.bias"]
    else:
        # ElectraForPreTraining's discriminator_predictions gives one logit per token, which HeadLab
        # does not run: its stand-in scores the final hidden states against the word embeddings.
        out["logits"] = x @ word.T
    return out


def make_electra_generator(g):
    # ElectraForMaskedLM with embedding_size 16 < hidden_size 32, as the released generators are.
    cfg = dict(ELECTRA_BASE, architectures=["ElectraForMaskedLM"])
    E, D, I, V = cfg["embedding_size"], cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D)
    p = "electra."
    embedding_weights(rnd, norm_maker(rnd, w, E), w, p, cfg)
    lin(p + "embeddings_project", D, E, 0.3)
    bert_layer_weights(lin, norm, p, cfg["num_hidden_layers"], D, I)
    lin("generator_predictions.dense", E, D)
    norm_maker(rnd, w, E)("generator_predictions.LayerNorm")
    w["generator_lm_head.bias"] = rnd(V, std=0.1)
    expected = electra_reference(as_f64(w), cfg, IDS, TYPES)
    write_folder("electra", cfg, w, expected, IDS, extra_metadata={"token_types": ",".join(map(str, TYPES))})


def make_electra_discriminator(g):
    # ElectraForPreTraining with embedding_size = hidden_size (no embeddings_project), as
    # electra-base-discriminator; the discriminator head is in the file and left out by HeadLab.
    cfg = dict(ELECTRA_BASE, architectures=["ElectraForPreTraining"], embedding_size=32)
    D, I = cfg["hidden_size"], cfg["intermediate_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D)
    p = "electra."
    embedding_weights(rnd, norm, w, p, cfg)
    bert_layer_weights(lin, norm, p, cfg["num_hidden_layers"], D, I)
    lin("discriminator_predictions.dense", D, D)
    lin("discriminator_predictions.dense_prediction", 1, D)
    expected = electra_reference(as_f64(w), cfg, IDS, TYPES)
    write_folder("electra-discriminator", cfg, w, expected, IDS,
                 extra_metadata={"token_types": ",".join(map(str, TYPES))})


# ---- ALBERT (modeling_albert.py) ----------------------------------------------------------------

def albert_reference(W, cfg, ids, types):
    p, eps = "albert.", cfg["layer_norm_eps"]
    H, D, L, G = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_hidden_groups"]
    d, T = D // H, len(ids)
    act = {"gelu": gelu_erf, "gelu_new": gelu_new}[cfg["hidden_act"]]
    ln = lambda x, name: layer_norm(x, W[name + ".weight"], W[name + ".bias"], eps)
    x = embeddings(W, p, ids, types, ln)
    x = linear(x, W, p + "encoder.embedding_hidden_mapping_in")  # AlbertTransformer, always present
    out = {}
    for i in range(L):
        group = int(i / (L / G))  # AlbertTransformer: layer i runs group i / (layers per group)
        h = "%sencoder.albert_layer_groups.%d.albert_layers.0." % (p, group)  # inner_group_num = 1
        split = lambda t: t.view(T, H, d).permute(1, 0, 2)
        q = split(linear(x, W, h + "attention.query"))
        k = split(linear(x, W, h + "attention.key"))
        v = split(linear(x, W, h + "attention.value"))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        out["attentions.%d" % i] = probs
        context = (probs @ v).transpose(0, 1).reshape(T, D)
        a = ln(x + linear(context, W, h + "attention.dense"), h + "attention.LayerNorm")
        f = linear(act(linear(a, W, h + "ffn")), W, h + "ffn_output")  # AlbertLayer.ff_chunk
        x = ln(f + a, h + "full_layer_layer_norm")
    # AlbertMLMHead: decoder(LayerNorm(act(dense(h)))) at embedding_size, act = hidden_act, LayerNorm
    # eps = layer_norm_eps; the decoder is tied to the word embeddings and its bias is predictions.bias.
    t = ln(act(linear(x, W, "predictions.dense")), "predictions.LayerNorm")
    out["logits"] = t @ W[p + "embeddings.word_embeddings.weight"].T + W["predictions.bias"]
    return out


def make_albert(g):
    # AlbertForMaskedLM: 3 layers sharing one set of weights, embedding_size 16 < hidden_size 32,
    # gelu_new (ALBERT's default), both names of the tied decoder bias and the tied decoder weight saved,
    # as converted checkpoints are.
    cfg = {"architectures": ["AlbertForMaskedLM"], "model_type": "albert", "attention_probs_dropout_prob": 0,
           "bos_token_id": 2, "classifier_dropout_prob": 0.1, "embedding_size": 16, "eos_token_id": 3,
           "hidden_act": "gelu_new", "hidden_dropout_prob": 0, "hidden_size": 32, "initializer_range": 0.02,
           "inner_group_num": 1, "intermediate_size": 64, "layer_norm_eps": 1e-12, "max_position_embeddings": 64,
           "num_attention_heads": 4, "num_hidden_groups": 1, "num_hidden_layers": 3, "pad_token_id": 0,
           "position_embedding_type": "absolute", "torch_dtype": "float32", "transformers_version": "4.44.0",
           "type_vocab_size": 2, "vocab_size": 100}
    E, D, I, V = cfg["embedding_size"], cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    w = {}
    rnd, norm, lin = weight_makers(g, w, D)
    p = "albert."
    embedding_weights(rnd, norm_maker(rnd, w, E), w, p, cfg)
    lin(p + "encoder.embedding_hidden_mapping_in", D, E, 0.3)
    h = p + "encoder.albert_layer_groups.0.albert_layers.0."
    lin(h + "attention.query", D, D, 0.3)
    lin(h + "attention.key", D, D, 0.3)
    lin(h + "attention.value", D, D)
    lin(h + "attention.dense", D, D)
    norm(h + "attention.LayerNorm")
    lin(h + "ffn", I, D)
    lin(h + "ffn_output", D, I)
    norm(h + "full_layer_layer_norm")
    lin("predictions.dense", E, D)
    norm_maker(rnd, w, E)("predictions.LayerNorm")
    w["predictions.bias"] = rnd(V, std=0.1)
    w["predictions.decoder.bias"] = w["predictions.bias"]
    w["predictions.decoder.weight"] = w[p + "embeddings.word_embeddings.weight"]
    expected = albert_reference(as_f64(w), cfg, IDS, TYPES)
    write_folder("albert", cfg, w, expected, IDS, extra_metadata={"token_types": ",".join(map(str, TYPES))})


MAKERS = [make_electra_generator, make_electra_discriminator, make_albert]
