#!/usr/bin/python3
"""The training step bench_train times, in Python torch (Debian python3-torch 1.13): the default
model's architecture (pre-LN encoder, 4 x 256, 8 heads of 32, RoPE, GELU MLP 1024, BERT LM-head
transform, tied 8k embedding), MLM loss on 15% of 32 x 64 tokens, gradient clipping, AdamW.
Prints "tokens/s: N"."""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, D, H, DK, FF, L, B, T = 8000, 256, 8, 32, 1024, 4, 32, 64


def rope(T, d):
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    f = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    e = torch.cat([f, f], -1)
    return e.cos().float(), e.sin().float()


def rotate(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = (nn.Linear(D, H * DK) for _ in range(4))
        self.up, self.down = nn.Linear(D, FF), nn.Linear(FF, D)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, t, H, DK).transpose(1, 2)
        k = self.k(h).view(b, t, H, DK).transpose(1, 2)
        v = self.v(h).view(b, t, H, DK).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        w = torch.softmax(q @ k.transpose(-1, -2) / DK ** 0.5, -1)
        x = x + self.o((w @ v).transpose(1, 2).reshape(b, t, H * DK))
        return x + self.down(F.gelu(self.up(self.n2(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.norm, self.tn = nn.LayerNorm(D), nn.LayerNorm(D)
        self.transform = nn.Linear(D, D)
        self.bias = nn.Parameter(torch.zeros(V))

    def forward(self, ids, labels):
        cos, sin = rope(ids.shape[1], DK)
        x = self.tokens(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin)
        where = (labels.view(-1) != -100).nonzero().squeeze(1)
        h = self.norm(x).view(-1, D).index_select(0, where)
        h = self.tn(F.gelu(self.transform(h)))
        return F.cross_entropy(h @ self.tokens.weight.t() + self.bias, labels.view(-1).index_select(0, where))


def batch(g):
    ids = torch.randint(5, V, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    chosen = torch.rand(B, T, generator=g) < 0.15
    chosen[:, 0] = chosen[:, -1] = False
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    return ids.masked_fill(chosen, 4), labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    g = torch.Generator().manual_seed(1)

    def step():
        ids, labels = batch(g)
        opt.zero_grad()
        loss = model(ids, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    print(f"tokens/s: {B * T * a.steps / (time.perf_counter() - start):.1f}")


if __name__ == "__main__":
    main()
