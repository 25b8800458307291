#!/usr/bin/env bash
# ci.sh [SECONDS]: the sanitizer step of the test command. Builds the torch-free parsers and their
# fuzz targets with clang under ASan + UBSan (build-fuzz-base/, -DHEADLAB_BASE_ONLY=ON: no LibTorch,
# a few minutes on 2 cores), then runs each target for SECONDS (default 20) on its seed corpus.
# A finding fails the step and is kept in build-fuzz-base/findings/TARGET. The window's JSON
# documents need LibTorch's libraries and are fuzzed by run.sh only.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
seconds="${1:-20}"
build="$here/build-fuzz-base"
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DHEADLAB_FUZZ=ON -DHEADLAB_BASE_ONLY=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
export ASAN_OPTIONS="abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
status=0
for target in safetensors model_config tokenizer_json vocab_files tokenize conllu; do
  seeds="$build/seeds/$target"; corpus="$build/corpus/$target"; findings="$build/findings/$target"
  rm -rf "$corpus"; mkdir -p "$corpus" "$findings"
  python3 "$here/tests/fuzz/seeds.py" "$target" "$seeds"
  if "$build/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -max_len=262144 \
      -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "$seeds" >"$build/fuzz_$target.log" 2>&1; then
    echo "fuzz_$target: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz_$target.log" | grep -o '[0-9]*$') inputs in ${seconds} s, no finding"
  else
    echo "fuzz_$target: FINDING (log: $build/fuzz_$target.log)"; tail -40 "$build/fuzz_$target.log"; status=1
  fi
done
exit $status
