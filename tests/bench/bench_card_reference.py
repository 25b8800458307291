#!/usr/bin/env python3
"""The forward passes bench_card times, in Python transformers on the same card: the baseline
HeadLab's card path is held to (tests/README.md, "Benchmarks").

    python3 tests/bench/bench_card_reference.py DIR [--dtype bfloat16|float32] [--tokens 128,1024] [--repeat 5]

Per length: eager attention with output_attentions=True (every map, as HeadLab captures them), and
SDPA without maps; the median of --repeat runs after one warm-up, synchronised. The ids are
bench_card's: (i * 7919 + 13) mod min(vocabulary, 50000).
"""
import argparse
import statistics
import time

import torch
import transformers


def ids(n, vocab):
    return torch.tensor([[(i * 7919 + 13) % min(vocab, 50000) for i in range(n)]], device="cuda")


def timed(f, repeat):
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--tokens", default="128,1024")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    dtype = getattr(torch, a.dtype)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}: {a.folder} in {a.dtype}")
    for attn in ("eager", "sdpa"):
        t0 = time.perf_counter()
        model = transformers.AutoModelForCausalLM.from_pretrained(a.folder, dtype=dtype, attn_implementation=attn).cuda().eval()
        torch.cuda.synchronize()
        print(f"  load ({attn}) {time.perf_counter() - t0:.1f} s")
        vocab = model.config.vocab_size
        for n in (int(x) for x in a.tokens.split(",")):
            x = ids(n, vocab)
            with torch.no_grad():
                s = timed(lambda: model(input_ids=x, output_attentions=attn == "eager", use_cache=False), a.repeat)
            print(f"  forward {n:5d} {attn:5s} {'every map' if attn == 'eager' else 'no maps':9s} {s * 1e3:8.2f} ms")
        del model
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
