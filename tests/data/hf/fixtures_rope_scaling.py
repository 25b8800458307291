"""Scaled-RoPE fixtures for tests/core/hf_import_test.cpp, written by make_fixtures.py.

Llama and Qwen2 folders whose rope_scaling / rope_parameters select transformers' rope types linear,
dynamic, llama3 (Llama 3.1 / 3.2) and yarn. The inverse frequencies below are independent float32
transcriptions of modeling_rope_utils.py (_compute_linear_scaling_rope_parameters,
_compute_dynamic_ntk_parameters, _compute_llama3_parameters, _compute_yarn_parameters) and the
rotary embedding's cos/sin × attention_scaling; the forward pass is make_fixtures.llama_reference.
Each folder's settings put its rope type to work on the 12-token input: llama3's three wavelength
bands all occur, yarn's ramp covers several dimensions, and dynamic's input is longer than
max_position_embeddings (its base grows only then).
"""

import math

import torch

from make_fixtures import IDS, LLAMA_BASE, as_f64, gemma_reference, gemma_weights, llama_reference, llama_weights, \
    write_folder


def base_inv_freq(theta, dim):  # float32, as transformers computes it
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def rope_object(cfg):
    return cfg.get("rope_parameters") or cfg.get("rope_scaling")


def linear_init(cfg, hd, T):
    return base_inv_freq(cfg["rope_theta"], hd) / rope_object(cfg)["factor"], 1.0


def dynamic_init(cfg, hd, T):
    factor, max_pos = rope_object(cfg)["factor"], cfg["max_position_embeddings"]
    seq_len = max(T, max_pos)  # the eager forward's dynamic update: seq_len = max(position_ids) + 1
    base = cfg["rope_theta"] * ((factor * seq_len / max_pos) - (factor - 1)) ** (hd / (hd - 2))
    return base_inv_freq(base, hd), 1.0


def llama3_init(cfg, hd, T):
    r = rope_object(cfg)
    inv_freq = base_inv_freq(cfg["rope_theta"], hd)
    factor, low, high, old = r["factor"], r["low_freq_factor"], r["high_freq_factor"], r["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv_freq
    llama = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, llama), 1.0


def yarn_init(cfg, hd, T):
    r = rope_object(cfg)
    base, dim = cfg["rope_theta"], hd
    original = r.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    factor = r.get("factor") or cfg["max_position_embeddings"] / original
    mscale, mscale_all_dim = r.get("mscale"), r.get("mscale_all_dim")

    def get_mscale(scale, m=1):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = r.get("attention_factor")
    if attention_factor is None:
        attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) \
            if mscale and mscale_all_dim else get_mscale(factor)
    beta_fast, beta_slow = r.get("beta_fast") or 32, r.get("beta_slow") or 1

    def correction_dim(turns):
        return (dim * math.log(original / (turns * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if r.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    return interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor, attention_factor


def write(g, name, cfg, rope_init, qwen2=False, ref_cfg=None):
    ref_cfg = ref_cfg or cfg
    w = llama_weights(g, ref_cfg, qwen2)
    write_folder(name, cfg, w, llama_reference(as_f64(w), ref_cfg, IDS, qwen2, rope_init), IDS)


def make_llama31(g):
    # Llama 3.1 / 3.2's llama3 type, with a short original context (64) so that on 12 tokens the
    # high (kept), medium (blended) and low (/ 8) frequency bands of head_dim 16 all turn visibly.
    cfg = dict(LLAMA_BASE, head_dim=16, rope_theta=10000.0, tie_word_embeddings=True, max_position_embeddings=512,
               rope_scaling={"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 64, "rope_type": "llama3"})
    write(g, "llama31", cfg, llama3_init)


def make_llama_linear(g):
    # transformers 4.x's older spelling: "type" instead of "rope_type".
    cfg = dict(LLAMA_BASE, rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 4.0})
    write(g, "llama-linear", cfg, linear_init)


def make_llama_dynamic(g):
    # 12 tokens past max_position_embeddings 8: the base grows to θ·(2·12/8 − 1)^(8/6).
    cfg = dict(LLAMA_BASE, rope_theta=10000.0, max_position_embeddings=8,
               rope_scaling={"rope_type": "dynamic", "factor": 2.0})
    write(g, "llama-dynamic", cfg, dynamic_init)


def make_qwen2_yarn(g):
    # Written as transformers 5 writes it (rope_parameters with rope_theta); factor 4 = 256 / 64, so
    # every transformers version reads the same factor; DeepSeek's mscale pair sets the attention factor.
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "attention_dropout": 0.0,
           "bos_token_id": 98, "eos_token_id": 99, "hidden_act": "silu", "hidden_size": 32, "head_dim": 16,
           "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 256,
           "max_window_layers": 2, "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "sliding_window": None, "tie_word_embeddings": False, "dtype": "float32",
           "transformers_version": "5.0.0", "use_cache": True, "use_sliding_window": False, "vocab_size": 100,
           "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                               "original_max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0,
                               "mscale": 0.707, "mscale_all_dim": 1.0}}
    write(g, "qwen2-yarn", cfg, yarn_init, qwen2=True, ref_cfg=dict(cfg, rope_theta=10000.0))


def make_gemma3_scaled(g):
    # Gemma 3 4B and larger: linear scaling (× 8) of the global layers' RoPE only; the local layers keep
    # plain RoPE with rope_local_base_freq (Gemma3RotaryEmbedding and its rotary_emb_local).
    cfg = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "attention_bias": False,
           "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 2, "eos_token_id": 1,
           "final_logit_softcapping": None, "head_dim": 16, "hidden_activation": "gelu_pytorch_tanh",
           "hidden_size": 48, "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 128,
           "num_attention_heads": 4, "num_hidden_layers": 3, "num_key_value_heads": 2, "pad_token_id": 0,
           "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
           "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": 10000.0, "sliding_window": 4,
           "sliding_window_pattern": 3, "torch_dtype": "float32", "transformers_version": "4.50.0",
           "use_cache": True, "vocab_size": 100}
    w = gemma_weights(g, cfg)
    T, hd = len(IDS), cfg["head_dim"]
    inv_freq, _ = linear_init(cfg, hd, T)
    emb = torch.cat((torch.outer(torch.arange(T).float(), inv_freq),) * 2, dim=-1)
    expected = gemma_reference(as_f64(w), cfg, IDS, torch.float32, 10000.0, 10000.0,
                               global_rope=(emb.cos().double(), emb.sin().double()))
    write_folder("gemma3-scaled", cfg, w, expected, IDS)


MAKERS = [make_llama31, make_llama_linear, make_llama_dynamic, make_qwen2_yarn, make_gemma3_scaled]

if __name__ == "__main__":  # only these folders: python3 fixtures_rope_scaling.py
    for i, make in enumerate(MAKERS):
        make(torch.Generator().manual_seed(4000 + i))
