#!/usr/bin/env bash
# train_rare_queries.sh : the rare-word recipe whose layer-3 queries are their biases alone
# (assets/README.md, "A layer whose queries are the same at every position"), then the share of
# queries whose maximum falls on the sentence's rarest token for every head, on UD English-EWT dev
# and on WikiText-2 test sentences, with the token counts the model folder carries.
#
#   tokenizer  WordPiece, 10k tokens of which the 9,600 most frequent words are whole
#              (train-tokenizer --whole-words), on the books, WikiText-2 valid and the sentences of
#              UD English-EWT train; the vocabulary of every model below.
#   model      the default model's config with 4 layers, RoPE on 16 of each head's 32 dimensions,
#              and layer $LAYER without positions (nope_layers).
#   train      masked LM, 256-token sequences, 15% targets without random replacement, 1,400 steps
#              of 2,048 tokens on the books with the modern text read twice; layer $LAYER's query
#              weights start at zero and stay there (--zero, --freeze), so each head's query is its
#              bias: the same vector at every position. About 35 minutes on one core.
#   measure    headlab analyze --metrics confidence,rare on all 2,001 EWT dev sentences and on the
#              2,428 WikiText-2 test sentences tests/bench/wikitext_sentences.py writes.
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder), MODERN (folder with
# text/wikitext-2/ and ud/, default ../shared/data), OUT (run root, default runs/rare), SEED (1),
# LAYER (3), STEPS (1400), TWIN=1 for the talking-heads twin (the same recipe on its config).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
MODERN="${MODERN:-$here/../shared/data}"
OUT="${OUT:-$here/runs/rare}"
SEED="${SEED:-1}"; LAYER="${LAYER:-3}"; STEPS="${STEPS:-1400}"; TWIN="${TWIN:-0}"
mkdir -p "$OUT"

ewt="$OUT/en_ewt-ud-train.txt"; wiki="$OUT/wikitext-2-test-sentences.txt"
[[ -f "$ewt" ]] || python3 "$here/tests/bench/ud_sentences.py" "$MODERN/ud/en_ewt-ud-train.conllu" "$ewt"
[[ -f "$wiki" ]] || python3 "$here/tests/bench/wikitext_sentences.py" "$MODERN/text/wikitext-2/test.txt" "$wiki"
modern=("$MODERN/text/wikitext-2/valid.txt" "$ewt")

tok="$OUT/tokenizer_whole_words.json"
[[ -f "$tok" ]] || "$HEADLAB" train-tokenizer --data "$DATA"/*.txt "${modern[@]}" --kind wordpiece --vocab-size 10000 \
  --whole-words 9600 --limit-alphabet 400 --no-cls-sep --out "$tok"

base=default tag=""; [[ "$TWIN" == 1 ]] && base=talking-heads tag=_th
cfg="$OUT/config_queries_$LAYER$tag.json"
python3 - "$here/assets/models/$base/config.json" "$cfg" "$LAYER" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["encoder"]["layers"] = 4
c["encoder"].pop("local", None)  # windowed layers of a deeper base config are not part of this recipe
c["encoder"]["nope_layers"] = [int(sys.argv[3])]
c["vocab_size"] = 10000
c["rope_dim"] = 16
c["description"] = (f"A 4-layer masked-LM encoder whose layer-{sys.argv[3]} queries are their biases alone "
                    "(tests/bench/train_rare_queries.sh).")
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY

model="$OUT/queries_${LAYER}${tag}_seed$SEED"
q="encoder.$LAYER.attn.q.weight"
"$HEADLAB" train --config "$cfg" --force --data "$DATA"/*.txt "${modern[@]}" "${modern[@]}" --tokenizer "$tok" \
  --objective mlm --batch-tokens 2048 --warmup 0.03 --eval-every 200 --eval-batches 10 --threads 1 \
  --out "$model" --seed "$SEED" --zero "$q" --freeze "$q" --seq-len 256 --steps "$STEPS" --mlm-random 0

for set in ewt wiki; do
  data="$MODERN/ud/en_ewt-ud-dev.conllu"; [[ $set == wiki ]] && data="$wiki"
  "$HEADLAB" analyze --model "$model" --data "$data" --metrics confidence,rare --out "$model.rare_$set"
done
python3 - "$model" <<'PY'
import json, sys
share = {}
for s in ("ewt", "wiki"):
    heads = json.load(open(f"{sys.argv[1]}.rare_{s}/head_report.json"))["heads"]
    share[s] = {(h["layer"], h["head"]): h["rare"]["share"] for h in heads}
best = max(share["ewt"], key=lambda k: min(share["ewt"][k], share["wiki"][k]))
above = sum(v > 0.5 for v in share["ewt"].values())
print("best head on both sets: L%d H%d" % best, "%.1f%% on EWT dev, %.1f%% on WikiText-2 test;" %
      (100 * share["ewt"][best], 100 * share["wiki"][best]), above, "heads above 50% on EWT dev")
PY
