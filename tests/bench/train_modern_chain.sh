#!/usr/bin/env bash
# train_modern_chain.sh PHASE… : masked-LM encoders of the default's size (5 layers × 256, 8 heads,
# RoPE) that read modern English — trained on the seven Gutenberg books and modern text (WikiText-2
# valid, the sentences of UD English-EWT train) with a 12k WordPiece vocabulary whose 8,000 most
# frequent words are whole tokens and every other word is spelled in subword pieces
# (`train-tokenizer --whole-words`), so no ordinary text is [UNK]. UD EWT dev and WikiText-2 test stay
# out of training: `headlab evaluate` measures the [UNK] share and top-1 there. Phases (each one
# `headlab train` run into OUT/<tag>_<PHASE>):
#
#   A  rare-word recipe: 4 layers, 256-token sequences, 15% targets, none random (STEPS_A, 2000).
#   B  grow to 5 layers; embeddings, layers 0-2 and layer 3's norm frozen, the $RARE head locked;
#      all-[MASK] recipe at lr 3e-3, step STOP_B (800) of a 2800-step schedule (RESUME_B=--resume
#      continues it to a later STOP_B).
#   P  from $FROM (B): only the query/key rows of the heads in $POS_HEADS train, weight decay WD_P
#      (16), lr 1e-2, 800 steps, into <tag>_$P_NAME (P): what stays of their scores under the decay is
#      their biases, which under RoPE depend on the relative offset alone.
#   M  the all-[MASK] recipe from scratch, every layer training (STEPS_M, 1200): positional heads form.
#   L  from M: the $POS_HEADS heads locked, everything else on the rare-word recipe (STEPS_L, 1500),
#      for language-model quality; F16 weights.
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder), MODERN (folder with
# text/wikitext-2/ and ud/, default ../shared/data), OUT (run root, default runs/modern), TWIN=1 for
# the talking-heads twin (same phases, no head locks: talking heads mix every head's logits).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
MODERN="${MODERN:-$here/../shared/data}"
OUT="${OUT:-$here/runs/modern}"
TWIN="${TWIN:-0}"
STEPS_A="${STEPS_A:-2000}"; STOP_B="${STOP_B:-800}"; RESUME_B="${RESUME_B:-}"
RARE="${RARE:-3.6}"; POS_HEADS="${POS_HEADS:-3.5}"
mkdir -p "$OUT"

base_config="$here/assets/models/default/config.json"
[[ "$TWIN" == 1 ]] && base_config="$here/assets/models/talking-heads/config.json"
tag=mha; [[ "$TWIN" == 1 ]] && tag=th
cfg4="$OUT/config_${tag}_4.json"; cfg5="$OUT/config_${tag}_5.json"
python3 - "$base_config" "$cfg4" "$cfg5" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
twin = "talking" in c["name"]
for layers, path in ((4, sys.argv[2]), (5, sys.argv[3])):
    c["encoder"]["layers"] = layers
    c["vocab_size"] = 12000
    c["description"] = (
        f"A talking-heads masked-LM encoder ({layers} layers, hidden 256, RoPE, 8 key, softmax and value heads; "
        "Shazeer et al. 2020) with a 12k WordPiece vocabulary whose 8k most frequent words are whole, trained "
        "by HeadLab on seven Gutenberg books and modern English (tests/bench/train_modern_chain.sh)." if twin else
        f"A BERT-like masked-LM encoder ({layers} layers, 8 MHA heads, hidden 256, RoPE) with a 12k WordPiece "
        "vocabulary whose 8k most frequent words are whole, trained by HeadLab on seven Gutenberg books and "
        "modern English (tests/bench/train_modern_chain.sh).")
    json.dump(c, open(path, "w"), indent=2)
PY

ewt="$OUT/en_ewt-ud-train.txt"
[[ -f "$ewt" ]] || python3 "$here/tests/bench/ud_sentences.py" "$MODERN/ud/en_ewt-ud-train.conllu" "$ewt"
data=("$DATA"/*.txt "$MODERN/text/wikitext-2/valid.txt" "$ewt")

tok="$OUT/tokenizer.json"
[[ -f "$tok" ]] || "$HEADLAB" train-tokenizer --data "${data[@]}" --kind wordpiece --vocab-size 12000 \
  --whole-words 8000 --limit-alphabet 400 --no-cls-sep --out "$tok"

common=(--force --data "${data[@]}" --tokenizer "$tok" --objective mlm --batch-tokens 2048 --warmup 0.03
        --eval-every 200 --eval-batches 10 --threads 1)
all_mask=(--mlm-rate 0.4 --mlm-mask 1.0 --mlm-random 0 --seq-len 128)
below=('tokens.*' 'encoder.[0-2].*' 'encoder.3.attn_norm.*')
heads_except() {  # layer-3 heads not named in $1
  for h in 0 1 2 3 4 5 6 7; do [[ " $1 " != *" 3.$h "* ]] && echo "3.$h"; done
}

for phase in "$@"; do
  d="$OUT/${tag}_$phase"
  case "$phase" in
    A) "$HEADLAB" train --config "$cfg4" "${common[@]}" --out "$d" --seed 1 --seq-len 256 --steps "$STEPS_A" \
         --mlm-random 0 ;;
    B) lock=(); [[ "$TWIN" == 1 ]] || lock=(--freeze-heads "$RARE")
       "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 --init "$OUT/${tag}_A" \
         --reinit 'encoder.4.*' --freeze "${below[@]}" "${lock[@]}" "${all_mask[@]}" --lr 3e-3 \
         --steps 2800 --stop-at "$STOP_B" $RESUME_B ;;
    P) d="$OUT/${tag}_${P_NAME:-P}"
       lock=(); [[ "$TWIN" == 1 ]] || lock=(--freeze-heads $(heads_except "$POS_HEADS"))
       "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 --init "$OUT/${tag}_${FROM:-B}" \
         --freeze "${below[@]}" 'encoder.4.*' 'encoder.3.attn.v.*' 'encoder.3.attn.o.*' 'encoder.3.ffn*' \
           'encoder_norm.*' 'head_*' "${lock[@]}" "${all_mask[@]}" --lr 1e-2 --weight-decay "${WD_P:-16}" \
         --steps 800 --dtype F16 ;;
    M) "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 "${all_mask[@]}" --steps "${STEPS_M:-1200}" ;;
    L) lock=(); [[ "$TWIN" == 1 ]] || lock=(--freeze-heads $POS_HEADS)
       "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 --init "$OUT/${tag}_M" "${lock[@]}" \
         --seq-len 256 --mlm-random 0 --steps "${STEPS_L:-1500}" --dtype F16 ;;
    *) echo "unknown phase '$phase' (A B P M L)" >&2; exit 2 ;;
  esac
done
