#!/usr/bin/env bash
# train_variants.sh [VARIANT…] : the attention variants of the default model's size, trained alike,
# for `headlab compare` (assets/README.md, "Comparing variants"). Every variant has the shape of the
# default model the study was run on (assets/studies/variants/base_config.json: 5 layers, hidden 256,
# FFN 1024, RoPE, its 10,083-token vocabulary in assets/studies/variants/tokenizer.json), trained with the same
# data (the books, WikiText-2 valid, the UD English-EWT train sentences), seed, schedule and token
# budget: 64-token sequences, 2,048 tokens a batch, BERT masking, 1,200 steps.
#
#   mha      8 heads × key/value size 32 (key size below the sequence length: Bhojanapalli et al.'s
#            low-rank bottleneck, rank(logits) ≤ 32 < 64)
#   th       talking heads (Shazeer et al. 2020), 8 key, 8 softmax, 8 value heads of size 32
#   collab   collaborative attention (Cordonnier et al. 2020), shared key size 128
#   gqa      grouped-query attention (Ainslie et al. 2023), 2 key/value heads
#   key64    decoupled key size: 8 heads with key size 64 = the sequence length, values 32
#   wide4    4 heads × key/value size 64 = the sequence length, the same parameters as mha
#   mha-learned  mha with learned positions instead of RoPE: collaborative conversion needs it
#            (a rotation per head does not factor through shared projections); it learns far slower
#            under this budget (held-out loss 6.08 at step 1,200 against RoPE's 6.04 at step 200);
#            assets/README.md's conversion study continues it for 1,200 more steps:
#              headlab train --config OUT/config_mha-learned.json --init OUT/mha-learned --force \
#                --data <the same files> --tokenizer assets/studies/variants/tokenizer.json --objective mlm \
#                --seq-len 64 --batch-tokens 2048 --steps 1200 --warmup 0.02 --seed 2 --threads 1 \
#                --out OUT/mha-learned-2400
#
# Environment: HEADLAB (binary), OUT (run root, default runs/variants), SHARED (default ../shared),
# STEPS (default 1200), THREADS (default 1).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
OUT="${OUT:-$here/runs/variants}"
SHARED="${SHARED:-$here/../shared}"
STEPS="${STEPS:-1200}"
THREADS="${THREADS:-1}"
mkdir -p "$OUT"

ewt="$OUT/en_ewt-ud-train.txt"
[[ -f "$ewt" ]] || grep '^# text = ' "$SHARED/data/ud/en_ewt-ud-train.conllu" | sed 's/^# text = //' >"$ewt"
data=("$SHARED"/data/text/gutenberg/*.txt "$SHARED/data/text/wikitext-2/valid.txt" "$ewt")

variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || variants=(mha th collab gqa key64 wide4)
for v in "${variants[@]}"; do
  python3 - "$here/assets/studies/variants/base_config.json" "$OUT/config_$v.json" "$v" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
v = sys.argv[3]
a = c["encoder"]["attention"]
if v.endswith("-learned"):
    c["positions"] = "learned"
    v = v[: -len("-learned")]
c["name"] = "variant-" + sys.argv[3]
what = {
    "mha": "8 MHA heads of key/value size 32",
    "th": "talking heads (Shazeer et al. 2020): 8 key, 8 softmax and 8 value heads of size 32",
    "collab": "collaborative attention (Cordonnier et al. 2020): 8 heads sharing key size 128",
    "gqa": "grouped-query attention (Ainslie et al. 2023): 8 query heads over 2 key/value heads",
    "key64": "8 heads with key size 64 (the training sequence length) and value size 32",
    "wide4": "4 heads of key/value size 64 (the training sequence length)",
}[v] + (", learned positions" if c["positions"] == "learned" else ", RoPE")
if v == "th":
    a["talking_heads"] = {"key_heads": 8, "softmax_heads": 8, "value_heads": 8}
elif v == "collab":
    a["collaborative"] = {"shared_key_size": 128}
elif v == "gqa":
    a["kv_heads"] = 2
elif v == "key64":
    a["key_size"] = 64
elif v == "wide4":
    a.update(heads=4, kv_heads=4, key_size=64, value_size=64)
elif v != "mha":
    sys.exit("unknown variant " + v + " (mha th collab gqa key64 wide4, NAME-learned)")
c["description"] = ("An attention variant trained alike with the others for `headlab compare`: the default "
                    "model's size (5 layers, hidden 256) with " + what + ".")
json.dump(c, open(sys.argv[2], "w"), indent=2)
EOF
  "$HEADLAB" train --config "$OUT/config_$v.json" --force --data "${data[@]}" \
    --tokenizer "$here/assets/studies/variants/tokenizer.json" --objective mlm --seq-len 64 --batch-tokens 2048 \
    --steps "$STEPS" --warmup 0.05 --lr 1e-3 --eval-every 200 --eval-batches 10 --seed 1 --threads "$THREADS" \
    --out "$OUT/$v" 2>&1 | tail -n 3
done
