#!/usr/bin/env bash
# bench_startup.sh [HEADLAB] [N]: median wall time of N (default 11) starts of each quick command
# the front end serves without LibTorch — --help, --version, info --model (the default), tokenize
# one line — and of commands it hands to the engine (info --check, predict), for comparison.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$here/build/app/headlab}"
n="${2:-11}"
model="$here/assets/models/default"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() {
  local label="$1"; shift
  for _ in $(seq "$n"); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1 </dev/null || true; t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
  done | median | xargs printf "%-32s %.3f s\n" "$label"
}
measure "--help" "$bin" --help
measure "--version" "$bin" --version
measure "info --model default" "$bin" info --model "$model"
measure "tokenize (one line)" sh -c "echo '\"the cat sat\"' | '$bin' tokenize --tokenizer '$model/tokenizer.json'"
measure "info --check (engine)" "$bin" info --check --model "$model"
measure "predict (engine)" "$bin" predict --model "$model" --text "the [MASK] sat ."
