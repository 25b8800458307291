#!/usr/bin/env bash
# train_induction.sh : the shipped induction model (assets/models/induction/), a paper's result
# reproduced with HeadLab's own trainer. Elhage et al. 2021 and Olsson et al. 2022 found that a
# two-layer attention-only causal model trained on text forms a previous-token head in layer 0 and an
# induction head in layer 1 that reads it through K-composition. This trains
# assets/configs/attention-only.json (2 layers × 8 heads, 128 wide, no FFN, learned positions) on the
# seven public-domain books with a 4,096-token byte-level BPE trained on the same books, then
# measures the heads on HeadLab's own induction probe and the composition scores.
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder, default
# ../shared/data/text/gutenberg), OUT (default runs/induction), STEPS (default 3000), SEED (default 1),
# THREADS (default: all cores).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
OUT="${OUT:-$here/runs/induction}"
STEPS="${STEPS:-3000}"
SEED="${SEED:-1}"
threads=()
[[ -n "${THREADS:-}" ]] && threads=(--threads "$THREADS")
mkdir -p "$OUT"
"$HEADLAB" train-tokenizer --data "$DATA"/*.txt --kind bpe --vocab-size 4096 --out "$OUT/tokenizer.json" --force
"$HEADLAB" train --config "$here/assets/configs/attention-only.json" --data "$DATA"/*.txt \
  --tokenizer "$OUT/tokenizer.json" --objective causal --out "$OUT/model" --force \
  --steps "$STEPS" --seq-len 128 --batch-tokens 8192 --lr 2e-3 --warmup 0.05 --decay cosine \
  --weight-decay 0.01 --eval-every 250 --held-out 0.01 --seed "$SEED" --dtype F16 "${threads[@]}"
"$HEADLAB" analyze --model "$OUT/model" --probe induction --out "$OUT/report" --force
"$HEADLAB" circuits --model "$OUT/model" --out "$OUT/circuits" --force
