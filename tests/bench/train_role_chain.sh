#!/usr/bin/env bash
# train_role_chain.sh PHASE… : the phased recipe that builds a rare-word head and positional heads
# in one masked-LM encoder (assets/README.md, "Shipped models"). Each phase is one `headlab train` run that
# starts from the previous phase's folder; run them in order (A B C D E), or name one to redo it.
#
#   A  rare-word recipe: 4 layers, 256-token sequences, 15% targets without random replacement
#      (a layer-3 head attends to the sentence's rarest word).
#   B  grow to 5 layers; embeddings, layers 0-2 and layer 3's attention norm frozen (so every
#      layer-3 head sees exactly the input it saw in A), the rare-word head's query/key rows frozen
#      ("locked"); all-[MASK] recipe at lr 3e-3; step 800 of a 2800-step schedule. A layer-3 head
#      becomes positional (offset -1).
#   C, D  same, with the positional head locked as well: another layer-3 head moves towards +1.
#   E  only that head's query/key rows train, with weight decay 16 (AdamW's decay reaches the
#      weights, not the biases): the content part of its scores decays unless the loss needs it, and
#      what stays (biases under RoPE) depends on the relative offset alone, so the +1 pattern holds
#      on words the all-[MASK] loss never queries (94.1% at +1; weight decay 0: 88.8%).
#      The twin trains all of layer 3's query/key and logit mix there, weight decay off (a decay
#      would reach all eight heads). Weights are stored as F16 (the shipped form).
#   V  a vocabulary for modern English, from E (or $FROM): the 8k words stay at their ids and 2,083
#      WordPiece pieces are added (a 4k WordPiece trained on the books, WikiText-2 valid and the UD
#      English-EWT train sentences, less the pieces the 8k words already hold), so a word outside the
#      8k is spelled in pieces instead of [UNK]. Trained on that modern text with the books: the 8k
#      known tokens' rows frozen (--freeze-known-tokens), the new rows drawn like the known ones
#      (Hewitt 2021) and trained, and everything that shapes the heads' maps up to layer 3 frozen
#      (layers 0-2, layer 3's attention norm and query/key, the twin's logit mixes): layer 3's values,
#      output and FFN, layer 4 and the output head train. UD EWT dev and WikiText-2 test stay out.
#
# Environment: HEADLAB (binary, default build/app/headlab), DATA (books folder), OUT (run root),
# TWIN=1 for the talking-heads twin (same phases; talking heads mix all heads, so no head locks),
# SEED_B (phase B's seed, default 1), RARE (the rare-word head, default 3.5), POS1 / POS2 (the
# positional heads B and C/D form, default 3.7 / 3.2), MODERN (folder with text/wikitext-2/ and ud/,
# default ../shared/data; phase V), FROM (phase V's starting folder, default OUT/<tag>_E), STEPS_V
# (default 2000).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
HEADLAB="${HEADLAB:-$here/build/app/headlab}"
DATA="${DATA:-$here/../shared/data/text/gutenberg}"
OUT="${OUT:-$here/runs/roles}"
TWIN="${TWIN:-0}"
SEED_B="${SEED_B:-1}"
RARE="${RARE:-3.5}"; POS1="${POS1:-3.7}"; POS2="${POS2:-3.2}"
mkdir -p "$OUT"

base_config="$here/assets/models/default/config.json"
[[ "$TWIN" == 1 ]] && base_config="$here/assets/models/talking-heads/config.json"
tag=mha; [[ "$TWIN" == 1 ]] && tag=th
cfg4="$OUT/config_${tag}_4.json"; cfg5="$OUT/config_${tag}_5.json"
python3 - "$base_config" "$cfg4" "$cfg5" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
twin = "talking" in c["name"]
for layers, path in ((4, sys.argv[2]), (5, sys.argv[3])):
    c["encoder"]["layers"] = layers
    c["description"] = (
        f"HeadLab's talking-heads twin of the default model: the same {layers}-layer, hidden-256 masked-LM "
        "encoder (RoPE, 8k word-level vocabulary, same books, phases and budget) with talking-heads "
        "attention (Shazeer et al. 2020), 8 key heads, 8 softmax heads, 8 value heads." if twin else
        f"HeadLab's default model: a BERT-like masked-LM encoder ({layers} layers, 8 MHA heads, hidden 256, "
        "RoPE, 8k word-level vocabulary) trained by HeadLab on seven public-domain Project Gutenberg "
        "books in phases (tests/bench/train_role_chain.sh): L3 H5 attends to the rarest word, L3 H7 to "
        "the previous token, L3 H2 to the next.")
    json.dump(c, open(path, "w"), indent=2)
EOF

tok="$OUT/tokenizer.json"
[[ -f "$tok" ]] || "$HEADLAB" train-tokenizer --data "$DATA"/*.txt --vocab-size 8000 --kind wordlevel \
  --no-cls-sep --out "$tok"

common=(--force --data "$DATA"/*.txt --tokenizer "$tok" --objective mlm --batch-tokens 2048 --warmup 0.03
        --eval-every 200 --eval-batches 10 --threads 1)
all_mask=(--mlm-rate 0.4 --mlm-mask 1.0 --mlm-random 0 --seq-len 128)
# Everything below layer 3's heads: their input stays exactly what phase A trained.
below=('tokens.*' 'encoder.[0-2].*' 'encoder.3.attn_norm.*')
lock() { [[ "$TWIN" == 1 ]] && return; echo --freeze-heads "$@"; }

# Phase V's data, tokenizer and config: the books with modern text (WikiText-2 valid, the sentences of
# UD English-EWT train), the 8k words plus the WordPiece pieces they lack, the 5-layer config at that size.
MODERN="${MODERN:-$here/../shared/data}"
ewt="$OUT/en_ewt-ud-train.txt"
modern=("$DATA"/*.txt "$MODERN/text/wikitext-2/valid.txt" "$ewt")
pieces="$OUT/pieces_4k.json"; tokv="$OUT/tokenizer_v.json"; cfgv="$OUT/config_${tag}_v.json"
modern_vocabulary() {
  [[ -f "$ewt" ]] || python3 "$here/tests/bench/ud_sentences.py" "$MODERN/ud/en_ewt-ud-train.conllu" "$ewt"
  [[ -f "$pieces" ]] || "$HEADLAB" train-tokenizer --data "${modern[@]}" --kind wordpiece --vocab-size 4000 \
    --limit-alphabet 400 --no-cls-sep --out "$pieces"
  python3 - "$tok" "$pieces" "$tokv" "$cfg5" "$cfgv" <<'PY'
import json, sys
words, pieces = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
vocab = dict(words["model"]["vocab"])  # the 8k words keep their ids
for token, _ in sorted(pieces["model"]["vocab"].items(), key=lambda item: item[1]):
    if token not in vocab: vocab[token] = len(vocab)
words["model"] = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab}
words["decoder"] = pieces["decoder"]
json.dump(words, open(sys.argv[3], "w", encoding="utf-8"), ensure_ascii=False)
c = json.load(open(sys.argv[4]))
c["vocab_size"] = len(vocab)
twin = "talking" in c["name"]
c["description"] = (
    f"HeadLab's talking-heads twin of the default model: the same 5-layer, hidden-256 masked-LM encoder "
    f"(RoPE, the same {len(vocab)}-token vocabulary, books, modern text, phases and budget) with talking-heads "
    "attention (Shazeer et al. 2020), 8 key heads, 8 softmax heads, 8 value heads." if twin else
    f"HeadLab's default model: a BERT-like masked-LM encoder (5 layers, 8 MHA heads, hidden 256, RoPE) with a "
    f"{len(vocab)}-token vocabulary (8k whole words; WordPiece pieces spell every other word), trained by HeadLab "
    "on seven Project Gutenberg books and modern English in phases (tests/bench/train_role_chain.sh): L3 H7 "
    "attends to the previous token, L3 H2 to the next, and four layer-3 heads follow syntactic relations; L3 H5, a "
    "rare-word head before the pieces were added, finds the sentence's rarest token for only a quarter of queries "
    "on modern text.")
json.dump(c, open(sys.argv[5], "w"), indent=2)
PY
}

for phase in "$@"; do
  d="$OUT/${tag}_$phase"
  case "$phase" in
    A) "$HEADLAB" train --config "$cfg4" "${common[@]}" --out "$d" --seed 1 --seq-len 256 --steps 1400 \
         --mlm-random 0 ;;
    B) "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed "$SEED_B" --init "$OUT/${tag}_A" \
         --reinit 'encoder.4.*' --freeze "${below[@]}" $(lock "$RARE") "${all_mask[@]}" --lr 3e-3 \
         --steps 2800 --stop-at 800 ;;
    C|D) previous=B; [[ "$phase" == D ]] && previous=C
       "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 --init "$OUT/${tag}_$previous" \
         --freeze "${below[@]}" $(lock "$RARE" "$POS1") "${all_mask[@]}" --lr 3e-3 --steps 1200 ;;
    E) others=(); scores_only=('encoder.3.attn.v.*' 'encoder.3.attn.o.*')
       # Talking heads: the logit mix (pre_mix) shapes the patterns and trains; the output mix is frozen.
       [[ "$TWIN" == 1 ]] && scores_only+=('encoder.3.attn.post_mix')
       for h in 0 1 2 3 4 5 6 7; do [[ "3.$h" != "$POS2" ]] && others+=("3.$h"); done
       decay=16; [[ "$TWIN" == 1 ]] && decay=0
       "$HEADLAB" train --config "$cfg5" "${common[@]}" --out "$d" --seed 1 --init "$OUT/${tag}_D" \
         --freeze "${below[@]}" 'encoder.4.*' "${scores_only[@]}" 'encoder.3.ffn*' \
           'encoder_norm.*' 'head_*' $(lock "${others[@]}") "${all_mask[@]}" --lr 1e-2 --weight-decay $decay \
         --steps 800 --dtype F16 ;;
    V) modern_vocabulary
       "$HEADLAB" train --config "$cfgv" --force --data "${modern[@]}" --tokenizer "$tokv" --objective mlm \
         --batch-tokens 2048 --warmup 0.03 --eval-every 200 --eval-batches 10 --threads 1 --out "$d" --seed 1 \
         --init "${FROM:-$OUT/${tag}_E}" --freeze-known-tokens \
         --freeze 'encoder.[0-2].*' 'encoder.3.attn_norm.*' 'encoder.3.attn.[qkp]*' \
         --seq-len 256 --mlm-random 0 --steps "${STEPS_V:-2000}" --dtype F16 ;;
    *) echo "unknown phase '$phase' (A B C D E V)" >&2; exit 2 ;;
  esac
done
