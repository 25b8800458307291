#!/usr/bin/python3
"""The same GPT-2-small-shaped forward as bench_engine.cpp, in plain Python torch (Debian
python3-torch, the same LibTorch 1.13), for the C++/Python ratio. Prints `median_ms X`."""
import argparse
import math
import time

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    V, D, L, H, F, T = 50257, 768, 12, 12, 3072, 128
    d = D // H
    n = lambda *s: torch.randn(*s) * 0.02
    wte, wpe = n(V, D), n(1024, D)
    layers = [dict(ln1=(torch.ones(D), torch.zeros(D)), q=(n(D, D), torch.zeros(D)), k=(n(D, D), torch.zeros(D)),
                   v=(n(D, D), torch.zeros(D)), o=(n(D, D), torch.zeros(D)), ln2=(torch.ones(D), torch.zeros(D)),
                   up=(n(F, D), torch.zeros(F)), down=(n(D, F), torch.zeros(D))) for _ in range(L)]
    lnf = (torch.ones(D), torch.zeros(D))
    ids = torch.tensor([(i * 7919) % V for i in range(T)]).view(1, T)
    mask = torch.ones(T, T, dtype=torch.bool).tril().logical_not()
    F_ = torch.nn.functional

    def forward():
        x = wte[ids] + wpe[:T].unsqueeze(0)
        for p in layers:
            h = F_.layer_norm(x, (D,), *p["ln1"], 1e-5)
            q = F_.linear(h, *p["q"]).view(1, T, H, d).transpose(1, 2)
            k = F_.linear(h, *p["k"]).view(1, T, H, d).transpose(1, 2)
            v = F_.linear(h, *p["v"]).view(1, T, H, d).transpose(1, 2)
            w = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(d)).masked_fill(mask, float("-inf")), -1)
            x = x + F_.linear((w @ v).transpose(1, 2).reshape(1, T, D), *p["o"])
            h = F_.layer_norm(x, (D,), *p["ln2"], 1e-5)
            x = x + F_.linear(F_.gelu(F_.linear(h, *p["up"]), approximate="tanh"), *p["down"])
        return F_.layer_norm(x, (D,), *lnf, 1e-5) @ wte.t()

    with torch.inference_mode():
        forward()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            forward()
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(f"median_ms {times[len(times) // 2]:.3f}")


if __name__ == "__main__":
    main()
