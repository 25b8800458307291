#!/usr/bin/env bash
# ci.sh: the race step of the test command. Builds the window's task system and
# tests/race/race_tests.cpp with clang under ThreadSanitizer (build-race/, -DHEADLAB_TSAN=ON: no
# LibTorch, under a minute on 2 cores) and runs them; a data race, a lock-order inversion or a failed
# assertion fails the step.
#
# What is left out, and why: LibTorch is not instrumented, so the live worker, the jobs and the
# shared model store (which run LibTorch) are not built here — their threads meet through the task
# system tested here and through the model store's mutex, tested in the ordinary suite
# (tests/app/shared_model_test.cpp) — nor the tokenizers, whose concurrent encoding the ordinary
# suite checks by result (tests/core/tokenizer_unit_test.cpp). Nothing is suppressed.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="$here/build-race"
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DHEADLAB_TSAN=ON "${launcher[@]}" >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target race_tests
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}"
# Without address-space randomisation: clang 14's ThreadSanitizer cannot map its shadow memory
# under the larger randomisation of newer kernels ("unexpected memory mapping").
norandom=(); command -v setarch >/dev/null && setarch "$(uname -m)" -R true 2>/dev/null && norandom=(setarch "$(uname -m)" -R)
"${norandom[@]}" "$build/tests/race/race_tests" "$@"
