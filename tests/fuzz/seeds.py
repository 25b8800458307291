#!/usr/bin/env python3
"""seeds.py TARGET DIR: the seed corpus of a fuzz target — real files of the repository and their
truncations at a quarter, a half and three quarters (and, for the file parsers, one byte cut off
and one flipped). Small by design: libFuzzer finds its way from there."""
import json, os, pathlib, sys

root = pathlib.Path(__file__).resolve().parents[2]
target, out = sys.argv[1], pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)

def files(*patterns, limit=200_000):
    found = []
    for p in patterns:
        found += [f for f in sorted(root.glob(p)) if f.is_file() and f.stat().st_size <= limit]
    return found

sources = {
    "safetensors": files("tests/data/hf/*/model.safetensors", "tests/data/hf/*/expected.safetensors"),
    "model_config": files("tests/data/hf/*/config.json", "assets/configs/*.json", "assets/models/*/config.json"),
    "tokenizer_json": files("tests/data/hf/*/tokenizer.json", limit=60_000),
    "vocab_files": [],
    "tokenize": [],
    "conllu": files("tests/data/ud/*.conllu"),
    "json_documents": files("tests/data/**/*session*.json", "tests/data/**/*script*.json",
                            "tests/data/**/head_report.json"),
}[target]

def add(name, data):
    (out / name).write_bytes(data)

for f in sources:
    data = f.read_bytes()
    stem = f"{f.parent.name}-{f.name}"
    add(stem, data)
    for q in (4, 2):
        add(f"{stem}.cut{q}", data[: len(data) * (q - 1) // q])
    if data:
        add(f"{stem}.short", data[:-1])
        flipped = bytearray(data)
        flipped[len(data) // 3] ^= 0x55
        add(f"{stem}.flip", bytes(flipped))

if target == "vocab_files":
    add("wordpiece", b"[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n##s\nsat\n.\n")
    add("bpe", json.dumps({"h": 0, "e": 1, "l": 2, "o": 3, "he": 4, "ll": 5, "\u0120": 6}).encode()
        + b"\0#version: 0.2\nh e\nl l\n")
if target == "tokenize":
    texts = ["The cat sat on the [MASK].", "naïve café — 東京 🙂\t\n", "a" * 300, "<unk> @-@ 3 @.@ 5",
             "  leading and trailing  "]
    for i, text in enumerate(texts):
        add(f"text{i}", text.encode())
    add("invalid-utf8", b"\xff\xfe broken \xc3 and \xe6\x9d")
if target == "json_documents":
    add("script", b'{"actions": [{"action": "set_text", "text": "a b"}, {"action": "run"}]}')
    add("session", b'{"format": "headlab-session", "version": 1, "model": "x", "text": "a"}')
    add("report", b'{"format": "headlab-head-report", "heads": []}')
print(f"{len(list(out.iterdir()))} seeds in {out}")
