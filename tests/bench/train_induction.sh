#!/usr/bin/env bash
# train_induction.sh : the shipped induction model (assets/models/induction), a two-layer
# attention-only causal model of the kind Elhage et al. 2021 and Olsson et al. 2022 study, trained
# by HeadLab on the books until it forms their circuit: a previous-token head in layer 0 and an
# induction head in layer 1 that reads it through K-composition (assets/README.md, "Shipped models").
#
#   1. a 4,096-token byte-level BPE vocabulary trained on the books (`train-tokenizer --kind bpe`);
#   2. the training text (tests/bench/make_repeats.py): 200,000 passages of the books, 4 to 30 words
#      each, every one written twice on its line, so induction pays in a few million tokens;
#   3. assets/configs/attention-only.json (2 layers of 8 heads of size 16, hidden 128, no FFN, RoPE)
#      with layer 1 a NoPE layer: its queries and keys carry content only, so its heads can match a
#      token with its earlier occurrence at any distance, and position reaches it only through what
#      layer 0 writes. Layer 0 keeps RoPE: a previous-token head needs position;
#   4. 3,000 steps of 32 sequences of 128 tokens, peak learning rate 3e-3 (3% warm-up, cosine),
#      gradient clipping 1, weight decay 0.01, seed 0, one thread; stored as F16.
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder, default
# ../shared/data/text/gutenberg), OUT (run root, default runs/induction), STEPS (default 3000),
# THREADS (default 1). The model is OUT/model; `headlab analyze --model OUT/model --probe induction`
# and `headlab circuits --model OUT/model` measure it.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
OUT="${OUT:-$here/runs/induction}"
STEPS="${STEPS:-3000}"
THREADS="${THREADS:-1}"
mkdir -p "$OUT"

tok="$OUT/tokenizer.json"
[[ -f "$tok" ]] || "$HEADLAB" train-tokenizer --data "$DATA"/*.txt --vocab-size 4096 --kind bpe --out "$tok"
text="$OUT/repeats.txt"
[[ -f "$text" ]] || python3 "$here/tests/bench/make_repeats.py" "$text" "$DATA"/*.txt --pairs 200000 --seed 0
config="$OUT/config.json"
python3 - "$here/assets/configs/attention-only.json" "$config" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["name"] = "induction"
c["description"] = (
    "HeadLab's induction model: a two-layer attention-only causal model (8 heads of size 16 a layer, hidden 128, "
    "no FFN; RoPE in layer 0, none in layer 1; a 4,096-token BPE vocabulary) trained by HeadLab on passages of "
    "seven public-domain Project Gutenberg books, each written twice (tests/bench/train_induction.sh). It forms "
    "the circuit of Elhage et al. 2021 and Olsson et al. 2022: a previous-token head in layer 0 and an induction "
    "head in layer 1 that reads it through K-composition.")
c["decoder"]["nope_layers"] = [1]
json.dump(c, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
EOF
"$HEADLAB" train --config "$config" --data "$text" --tokenizer "$tok" --objective causal --out "$OUT/model" \
  --seq-len 128 --batch-tokens 4096 --steps "$STEPS" --lr 3e-3 --warmup 0.03 --decay cosine --clip 1.0 \
  --weight-decay 0.01 --eval-every 250 --seed 0 --threads "$THREADS" --dtype F16 --force
"$HEADLAB" count-tokens --model "$OUT/model" --data "$DATA"/*.txt --force
