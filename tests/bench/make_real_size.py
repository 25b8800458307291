#!/usr/bin/env python3
"""Writes a Hugging Face model folder in the exact shapes of a real model, with random BF16 weights.

HeadLab's real-size benchmarks and the memory checks of core/README.md ("Weights as stored") run on
these folders: the shapes, dtypes, tensor names and sharding of the real checkpoints, so memory and
time are what a researcher meets, without downloading anything. Nothing here is committed; the
folders are written where you say.

    python3 tests/bench/make_real_size.py llama-3.1-8b /data/llama-3.1-8b-shaped   # 16.1 GB, 4 shards
    python3 tests/bench/make_real_size.py llama-3.2-1b /data/llama-3.2-1b-shaped   # 2.5 GB, 1 file
    python3 tests/bench/make_real_size.py llama-3.2-3b /data/llama-3.2-3b-shaped   # 6.4 GB, 2 shards
    python3 tests/bench/make_real_size.py heads-32x32 /data/heads-32x32             # 0.2 GB: the 8B's 32 × 32 heads, narrow

Weights are N(0, 0.02) (norms at 1), rounded to BF16. The tokenizer is GPT-2's (its 50,257 ids fall
inside the 128,256-row vocabulary), copied from tests/data/tokenizers/gpt2. Needs only numpy.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

LLAMA3_ROPE = {"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 8192}

# name: (layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied, rope factor, shards)
SHAPES = {
    "llama-3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256, False, 8.0, 4),
    "llama-3.2-3b": (28, 3072, 24, 8, 128, 8192, 128256, True, 32.0, 2),
    "llama-3.2-1b": (16, 2048, 32, 8, 64, 8192, 128256, True, 32.0, 1),
    # The 8B's 32 × 32 heads on a narrow body (0.2 GB): the window's grid and thumbnails at that
    # many heads, where the forward itself should not be what is timed.
    "heads-32x32": (32, 512, 32, 8, 16, 1024, 50304, True, 8.0, 1),
}


def config_for(name):
    layers, hidden, heads, kv, head_dim, ffn, vocab, tied, factor, _ = SHAPES[name]
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
        "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
        "hidden_act": "silu", "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "rope_scaling": dict(LLAMA3_ROPE, factor=factor),
        "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": tied,
        "vocab_size": vocab, "bos_token_id": 128000, "eos_token_id": 128001,
        "initializer_range": 0.02, "pretraining_tp": 1,
    }


def tensors_for(name):
    """(HF name, shape) in the order of Meta's checkpoints."""
    layers, hidden, heads, kv, head_dim, ffn, vocab, tied, _, _ = SHAPES[name]
    out = [("model.embed_tokens.weight", (vocab, hidden))]
    for l in range(layers):
        p = f"model.layers.{l}."
        out += [(p + "self_attn.q_proj.weight", (heads * head_dim, hidden)),
                (p + "self_attn.k_proj.weight", (kv * head_dim, hidden)),
                (p + "self_attn.v_proj.weight", (kv * head_dim, hidden)),
                (p + "self_attn.o_proj.weight", (hidden, heads * head_dim)),
                (p + "mlp.gate_proj.weight", (ffn, hidden)),
                (p + "mlp.up_proj.weight", (ffn, hidden)),
                (p + "mlp.down_proj.weight", (hidden, ffn)),
                (p + "input_layernorm.weight", (hidden,)),
                (p + "post_attention_layernorm.weight", (hidden,))]
    out.append(("model.norm.weight", (hidden,)))
    if not tied:
        out.append(("lm_head.weight", (vocab, hidden)))
    return out


def bf16_bytes(values):
    """float32 array → BF16 bytes, rounded to nearest even."""
    bits = values.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).tobytes()


def write_shard(path, entries, rng):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for tensor, shape in entries:
        size = 2 * int(np.prod(shape))
        header[tensor] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for tensor, shape in entries:
            count = int(np.prod(shape))
            if len(shape) == 1:
                f.write(bf16_bytes(np.ones(count, np.float32)))
                continue
            step = 1 << 24
            for start in range(0, count, step):
                n = min(step, count - start)
                f.write(bf16_bytes(rng.standard_normal(n, dtype=np.float32) * np.float32(0.02)))
    os.replace(tmp, path)
    return offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("shape", choices=sorted(SHAPES))
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "data", "tokenizers",
                                                            "gpt2", "tokenizer.json"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    entries = tensors_for(args.shape)
    shards = SHAPES[args.shape][-1]
    total = sum(2 * int(np.prod(s)) for _, s in entries)
    # Consecutive tensors into shards of about equal size, as transformers' save_pretrained does.
    groups, current, size = [], [], 0
    for entry in entries:
        current.append(entry)
        size += 2 * int(np.prod(entry[1]))
        if size >= total / shards and len(groups) < shards - 1:
            groups.append(current)
            current, size = [], 0
    groups.append(current)
    rng = np.random.default_rng(args.seed)
    weight_map = {}
    for i, group in enumerate(groups):
        file = "model.safetensors" if shards == 1 else f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_shard(os.path.join(args.out, file), group, rng)
        weight_map.update({tensor: file for tensor, _ in group})
        print(f"{file}: {len(group)} tensors", file=sys.stderr)
    if shards > 1:
        with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config_for(args.shape), f, indent=2)
    with open(args.tokenizer, "rb") as src, open(os.path.join(args.out, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())
    print(f"{args.out}: {args.shape}, {total / 1e9:.2f} GB of BF16 in {len(groups)} file(s)")


if __name__ == "__main__":
    main()
