#!/usr/bin/env bash
# run.sh TARGET [MINUTES] [JOBS]: fuzz one parser for MINUTES (default 10) under ASan + UBSan.
# Builds build-fuzz/ (clang, -DHEADLAB_FUZZ=ON, no window) on first use, makes the seed corpus from
# real files of the repository and their truncations (seeds.py), then runs libFuzzer; new inputs
# go to build-fuzz/corpus/TARGET, findings to build-fuzz/findings/TARGET. Exit status: libFuzzer's
# (0 = no finding). Targets: safetensors model_config tokenizer_json vocab_files tokenize conllu
# json_documents. `run.sh all 10` runs each in turn.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
target="${1:?usage: run.sh TARGET|all [MINUTES] [JOBS]}"
minutes="${2:-10}"
jobs="${3:-1}"
build="${HEADLAB_FUZZ_BUILD:-$here/build-fuzz}"
all=(safetensors model_config tokenizer_json vocab_files tokenize conllu json_documents)
if [[ "$target" == all ]]; then
  status=0
  for t in "${all[@]}"; do "$0" "$t" "$minutes" "$jobs" || status=1; done
  exit $status
fi
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DHEADLAB_FUZZ=ON -DHEADLAB_BUILD_GUI=OFF "${launcher[@]}" >/dev/null
fi
ninja -C "$build" "fuzz_$target" >/dev/null
seeds="$build/seeds/$target"; corpus="$build/corpus/$target"; findings="$build/findings/$target"
mkdir -p "$corpus" "$findings"
python3 "$here/tests/fuzz/seeds.py" "$target" "$seeds"
# More than one job: libFuzzer forks workers that log to fuzz-N.log in the current folder.
parallel=(); [[ "$jobs" -gt 1 ]] && parallel=(-jobs="$jobs" -workers="$jobs")
# LibTorch's own allocations are not instrumented: leak reports would be about its caches, not ours.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
"$build/tests/fuzz/fuzz_$target" -max_total_time="$(awk -v m="$minutes" 'BEGIN {print int(m * 60)}')" -rss_limit_mb=4096 -timeout=30 -max_len=262144 \
  -print_final_stats=1 -artifact_prefix="$findings/" "${parallel[@]}" "$corpus" "$seeds"
