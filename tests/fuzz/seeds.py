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
def with_cuts(name, data):
    add(name, data)
    for q in (4, 2):
        add(f"{name}.cut{q}", data[: len(data) * (q - 1) // q])

if target == "tokenizer_json":
    # Small but complete tokenizers of each kind, the shipped default's, and cuts of them.
    specials = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": True} for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])]
    words = ["the", "cat", "sat", "on", "mat", ".", "##s", "##at", "c", "a", "t", "s", "m", "##t", "##a"]
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)}
    bert = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": specials,
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                           "strip_accents": None, "lowercase": True},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                          {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                               "pair": [], "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                                              "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab}}
    with_cuts("wordpiece.json", json.dumps(bert).encode())
    wordlevel = dict(bert, model={"type": "WordLevel", "unk_token": "[UNK]", "vocab": vocab}, post_processor=None)
    with_cuts("wordlevel.json", json.dumps(wordlevel).encode())
    byte_vocab = {chr(c): i for i, c in enumerate(range(33, 127))}
    byte_vocab.update({"\u0120": 94, "th": 95, "\u0120th": 96})
    bpe = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "post_processor": None, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "vocab": byte_vocab, "merges": ["t h", "\u0120 th"]}}
    with_cuts("bpe.json", json.dumps(bpe).encode())
    with_cuts("default.json", (root / "assets/models/default/tokenizer.json").read_bytes())
    # SentencePiece layouts: Unigram with a Precompiled charsmap (T5), byte-fallback BPE (Llama-2).
    with_cuts("spm-unigram.json", (root / "tests/data/tokenizers/spm-unigram/tokenizer.json").read_bytes())
    with_cuts("spm-bpe.json", (root / "tests/data/tokenizers/spm-bpe/tokenizer.json").read_bytes())

if target == "json_documents":
    add("script", json.dumps({"actions": [{"action": "open_model", "folder": ""}, {"action": "set_text", "text": "a b"},
                                          {"action": "set_gate", "layer": 0, "head": 1, "value": 0.5},
                                          {"action": "set_mix", "layer": 0, "which": "post", "preset": "swap", "a": 0, "b": 1},
                                          {"action": "export", "view": "attention_map", "path": "/dev/null"},
                                          {"action": "quit"}]}).encode())
    session = {"format": "headlab-session", "version": 1,
               "model": {"folder": "", "weights_hash": "", "random_config": ""},
               "input": {"text": "the cat sat", "decoder_text": ""},
               "controls": {"encoder_self": [{"gates": [1, 0, 1, 1], "ablation": "zero", "pre_mix": [], "post_mix": []}]},
               "selection": {"stack": "encoder", "layer": 0, "head": 1, "stage": "W", "query": -1, "key": -1,
                             "output_position": -1, "mixer_layer": 0},
               "view": {"colormap": "viridis", "log_scale": False, "auto_range": False, "thumbnail_size": 84, "top_k": 10,
                        "export_scale": 1, "export_dir": "", "grid_measure": "", "workspace": "Explore", "logit_spectra": False},
               "analysis": {}, "layout": {"imgui_ini": ""}}
    with_cuts("session", json.dumps(session).encode())
    # A real report: a few sentences of the bundled UD sample through the shipped default.
    binary = pathlib.Path(os.environ.get("HEADLAB_BIN", root / "build/app/headlab"))
    if binary.exists():
        import subprocess, tempfile
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([str(binary), "analyze", "--model", str(root / "assets/models/default"), "--data",
                            str(root / "tests/data/ud/en_ewt-dev-100.conllu"), "--limit", "3", "--metrics",
                            "confidence,positional,rare,syntactic", "--out", tmp], check=True, capture_output=True)
            report = (pathlib.Path(tmp) / "head_report.json").read_bytes()
            with_cuts("head_report", report)
print(f"{len(list(out.iterdir()))} seeds in {out}")
