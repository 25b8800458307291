#!/usr/bin/env bash
# train_default_chain.sh PHASE… : the shipped default model (assets/models/default) and, with TWIN=1,
# its talking-heads twin — a masked-LM encoder of 5 layers × 256 with 8 heads and a 10k WordPiece
# vocabulary whose 9,600 most frequent words are whole. Each phase is one `headlab train` run into
# OUT/<tag>_<PHASE> (tag mha or th) that starts from the previous phase's folder; run them in order
# (A B P1 P2 P3 F; the twin A B F), or name one to redo it. Every phase reads the seven Gutenberg books
# and the modern text (WikiText-2 valid, the sentences of UD English-EWT train) twice; UD EWT dev and
# WikiText-2 test stay out of training.
#
#   A   tests/bench/train_rare_queries.sh (seed 1, 1,400 steps): 4 layers; layer 3 has no positions
#       and its query weights stay zero, so each head's query is its bias and the layer's maps depend
#       on the keys alone — its heads attend to the sentence's rarest token.
#   B   grow to 5 layers; the new layer 4 attends within 2 tokens either side (a sliding window,
#       encoder.local). Token embeddings, layers 0-2 and layer 3's norm and query/key stay frozen,
#       so layer 3's maps stay exactly A's. All-[MASK] recipe (40% targets, all [MASK], 128 tokens),
#       lr 3e-3, step 800 of a 2,800-step schedule: layer-4 heads turn to offsets and to syntax.
#   P1, P2, P3  rounds in which only some layer-4 heads' query/key rows may change, and AdamW's
#       weight decay reaches only those weights (--decay-only; it never reaches biases): what stays
#       of such a head's scores is its biases, which under RoPE depend on the relative offset alone.
#       Layer 4's values, output and FFN and the output head train beside them, undecayed, so what a
#       head reads can follow where it looks; the other heads' maps stay as they were. Ordinary
#       recipe (256 tokens, 15% targets, none random), lr 3e-3:
#         P1  from B, L4 H4 and L4 H5, weight decay 50, 800 steps (L4 H4 → −1);
#         P2  from P1, L4 H1, weight decay 50, 400 steps (L4 H1 turns from 0 to +1);
#         P3  from P2, L4 H1, weight decay 100, 400 steps (L4 H1 → +1).
#   F   layer 4's maps frozen (its norm and query/key; layers 0-3 and the embeddings stay frozen
#       too), the rest on the ordinary recipe (256 tokens, 15% targets, none random), 800 steps:
#       masked-LM quality back; F16 weights, the shipped form.
#
# The twin runs A B F: P1-P3 choose single heads, which talking heads' logit mixing does not
# have (a softmax head's map mixes every logit head of its layer).
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder), MODERN (folder with
# text/wikitext-2/ and ud/, default ../shared/data), OUT (run root, default runs/default), TWIN=1.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
MODERN="${MODERN:-$here/../shared/data}"
OUT="${OUT:-$here/runs/default}"
TWIN="${TWIN:-0}"
export HEADLAB DATA MODERN OUT
mkdir -p "$OUT"

base=default tag=mha; [[ "$TWIN" == 1 ]] && base=talking-heads tag=th
cfg="$OUT/config_${tag}_5.json"
python3 - "$here/assets/models/$base/config.json" "$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
twin = "talking" in c["name"]
enc = c["encoder"]
enc["layers"] = 5
enc["nope_layers"] = [3]
enc["local"] = {"layers": [4], "pattern": {"window": 2, "dilation": 1, "global_tokens": []}}
c["vocab_size"] = 10000
c["rope_dim"] = 16
kind = ("talking-heads masked-LM encoder (Shazeer et al. 2020; 8 key, softmax and value heads)" if twin
        else "BERT-like masked-LM encoder (8 MHA heads)")
c["description"] = (
    f"A {kind}: 5 layers, hidden 256, RoPE on 16 of each head's 32 dimensions; layer 3 without positions "
    "and with queries that are their biases alone, layer 4 attending within 2 tokens either side. A 10k "
    "WordPiece vocabulary whose 9,600 most frequent words are whole. Trained by HeadLab on seven Gutenberg "
    "books and modern English (tests/bench/train_default_chain.sh).")
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY

ewt="$OUT/en_ewt-ud-train.txt"
[[ -f "$ewt" ]] || python3 "$here/tests/bench/ud_sentences.py" "$MODERN/ud/en_ewt-ud-train.conllu" "$ewt"
modern=("$MODERN/text/wikitext-2/valid.txt" "$ewt")
tok="$OUT/tokenizer_whole_words.json"  # written by phase A (train_rare_queries.sh)
common=(--config "$cfg" --force --data "$DATA"/*.txt "${modern[@]}" "${modern[@]}" --tokenizer "$tok"
        --objective mlm --batch-tokens 2048 --warmup 0.03 --eval-every 200 --eval-batches 10 --threads 1 --seed 1)
all_mask=(--mlm-rate 0.4 --mlm-mask 1.0 --mlm-random 0 --seq-len 128)
below=('tokens.*' 'encoder.[0-3].*')
locks() {  # --freeze-heads for the layer-4 heads not named in $1
  echo --freeze-heads
  for h in 0 1 2 3 4 5 6 7; do [[ " $1 " != *" 4.$h "* ]] && echo "4.$h"; done
}

# The twin's maps also depend on its logit mixes (pre_mix before the softmax, post_mix after it).
tw="" mix3=() mix4=(); [[ "$TWIN" == 1 ]] && tw=_th mix3=('encoder.3.attn.p*_mix') mix4=('encoder.4.attn.p*_mix')
for phase in "$@"; do
  d="$OUT/${tag}_$phase"
  case "$phase" in
    A) TWIN="$TWIN" SEED=1 LAYER=3 STEPS=1400 bash "$here/tests/bench/train_rare_queries.sh"
       rm -rf "$d"; cp -r "$OUT/queries_3${tw}_seed1" "$d" ;;
    B) "$HEADLAB" train "${common[@]}" --out "$d" --init "$OUT/${tag}_A" --reinit 'encoder.4.*' \
         --freeze 'tokens.*' 'encoder.[0-2].*' 'encoder.3.attn_norm.*' 'encoder.3.attn.q.*' 'encoder.3.attn.k.*' \
           "${mix3[@]}" "${all_mask[@]}" --lr 3e-3 --steps 2800 --stop-at 800 ;;
    P1|P2|P3)
       [[ "$TWIN" == 1 ]] && { echo "$phase locks single heads; the twin runs A B F" >&2; exit 2; }
       case "$phase" in  # from, heads, weight decay, steps
         P1) round=(B "4.4 4.5" 50 800) ;;
         P2) round=(P1 "4.1" 50 400) ;;
         P3) round=(P2 "4.1" 100 400) ;;
       esac
       "$HEADLAB" train "${common[@]}" --out "$d" --init "$OUT/${tag}_${round[0]}" \
         --freeze "${below[@]}" 'encoder.4.attn_norm.*' $(locks "${round[1]}") --decay-only 'encoder.4.attn.[qk].weight' \
         --weight-decay "${round[2]}" --steps "${round[3]}" --lr 3e-3 --seq-len 256 --mlm-random 0 ;;
    F) from="$OUT/${tag}_P3"; [[ "$TWIN" == 1 ]] && from="$OUT/${tag}_B"
       "$HEADLAB" train "${common[@]}" --out "$d" --init "$from" \
         --freeze "${below[@]}" 'encoder.4.attn_norm.*' 'encoder.4.attn.q.*' 'encoder.4.attn.k.*' \
           "${mix4[@]}" --seq-len 256 --mlm-random 0 --steps "${STEPS_F:-800}" --dtype F16 ;;
    *) echo "unknown phase '$phase' (A B P1 P2 P3 F)" >&2; exit 2 ;;
  esac
done
