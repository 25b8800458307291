#!/bin/bash
# One call on a GPU machine (app/README.md, "The GPU build"): builds HeadLab without its window against the pip
# torch's CUDA LibTorch (the engine, the GPU tests, bench_card and the CPU suite in one ninja call),
# then runs the steps named in STEPS in that order, each within what is left of BUDGET seconds
# (default 540):
#   gpu      the GPU tests (label gpu: the card against the CPU);
#   suite    the whole CPU suite against this LibTorch (ctest -LE gpu);
#   fixtures the Hugging Face fixtures against the real transformers, layer by layer where one is off
#            (tests/data/hf/check_with_transformers.py; started in the background during the build);
#   bench    bench_card on a Llama-3.1-8B-shaped and a GPT-2-small-shaped folder (exact, then fast
#            precision where time is left), and the same forward
#            passes in transformers on the same card (tests/bench/bench_card_reference.py);
#   cli      the engine's --device on the command line (run, generate, analyze of 500 UD sentences).
# STEPS defaults to "gpu suite fixtures bench cli". It needs .deps/ beside it (tests/gpu/make_deps.sh:
# Debian 12's Catch2, CLI11, nlohmann-json, PCRE2, utf8proc, cairo and pkgconf unpacked into a prefix,
# and the UD English-EWT dev set), since the GPU machine has none of them and no network. Logs go to
# $OUT (default ./card-out); summary.txt has the gist.
set -u
OUT=${OUT:-$PWD/card-out}
BUDGET=${BUDGET:-540}
STEPS=${STEPS:-gpu suite fixtures bench cli}
mkdir -p "$OUT"
T0=$(date +%s)
say() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# Seconds for a step: what is left less `keep` for the steps after it, at most `most`, at least 10.
within() { local n=$(($(left) - $1)); [ $n -gt $2 ] && n=$2; [ $n -lt 10 ] && n=10; echo $n; }

# The lent machine's layout (../shared/design/GPU.md): the venv with torch, cmake and ninja; nvcc.
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
PY=$(command -v python3)
D=/tmp/headlab-deps
# Python's lzma, since the machine may have no xz.
$PY -c "
import lzma, shutil, tarfile
tarfile.open('.deps/prefix.tar.xz').extractall('$D')
shutil.copyfileobj(lzma.open('.deps/en_ewt-ud-dev.conllu.xz'), open('/tmp/en_ewt-ud-dev.conllu', 'wb'))
"
sed -i "s|^prefix=/usr|prefix=$D/usr|" $D/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc
export PKG_CONFIG_PATH=$D/usr/lib/x86_64-linux-gnu/pkgconfig:$D/usr/share/pkgconfig
export LD_LIBRARY_PATH=$D/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PKG_CONFIG=$(command -v pkg-config || echo $D/usr/bin/pkgconf)
say "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader), $(nproc) cores, $($PY -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)')"

# The real-size folders and the fixture check run while the build does.
# Each within the budget: a later `wait` on them never outlasts it.
(
  timeout $(within 60 400) $PY tests/bench/make_real_size.py llama-3.1-8b /tmp/llama-8b
  $PY -c "
import torch, transformers
torch.manual_seed(0)
transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained('/tmp/gpt2-small')
"
  echo "folders made at $(($(date +%s) - T0))s"
) >"$OUT/bench.log" 2>&1 &
MAKER=$!
FIXTURES=
if [ -z "${SKIP_FIXTURES:-}" ]; then
  (OMP_NUM_THREADS=4 timeout $(within 60 400) $PY tests/data/hf/check_with_transformers.py >"$OUT/fixtures.log" 2>&1) &
  FIXTURES=$!
fi

TORCH_PREFIX=$($PY -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_DIR=$($PY -c 'import torch, os; print(os.path.dirname(torch.__file__))')
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DHEADLAB_BUILD_GUI=OFF -DHEADLAB_PCH=ON "-DCMAKE_PREFIX_PATH=$D/usr;$TORCH_PREFIX"
        "-DPKG_CONFIG_EXECUTABLE=$PKG_CONFIG")
if cmake -S . -B build-card "${common[@]}" -DCUDAToolkit_ROOT=/usr/local/cuda >"$OUT/configure.log" 2>&1; then
  say "configured with the pip torch's TorchConfig.cmake"
else
  say "TorchConfig.cmake failed: $(grep -m3 -i error "$OUT/configure.log" | tr '\n' ' ')"
  rm -rf build-card
  cmake -S . -B build-card "${common[@]}" -DHEADLAB_LIBTORCH_DIR="$TORCH_DIR" >>"$OUT/configure.log" 2>&1 ||
    { say "configure failed"; tail -30 "$OUT/configure.log" | tee -a "$OUT/summary.txt"; exit 1; }
  say "configured with HEADLAB_LIBTORCH_DIR=$TORCH_DIR"
fi
grep -h "HeadLab: LibTorch" "$OUT/configure.log" | tee -a "$OUT/summary.txt"

targets="headlab-engine headlab_gpu_tests bench_card"
case " $STEPS " in *" suite "*) targets="$targets headlab_tests" ;; esac
timeout $(within 240 420) ninja -C build-card -k 0 $targets >"$OUT/build.log" 2>&1
say "build of $targets: exit $?"
grep -E "error|FAILED" "$OUT/build.log" | head -30 | tee -a "$OUT/summary.txt"

step_gpu() {
  [ -x build-card/tests/headlab_gpu_tests ] || return
  timeout $(within 120 150) build-card/tests/headlab_gpu_tests "[gpu]" -d yes >"$OUT/gpu.log" 2>&1
  say "GPU tests: exit $? — $(grep -E '^(test cases|All tests passed)' "$OUT/gpu.log" | tail -1)"
  grep -B3 -A12 "FAILED" "$OUT/gpu.log" | head -60 >>"$OUT/summary.txt"
}

step_suite() {
  [ -x build-card/tests/headlab_tests ] || { say "CPU suite: not built"; return; }
  (cd build-card && timeout $(within 60 300) ctest -LE gpu -j16 --timeout 120 >"$OUT/cpu_tests.log" 2>&1)
  say "CPU suite: $(grep -E 'tests passed|tests failed' "$OUT/cpu_tests.log")"
  grep -A40 "The following tests FAILED" "$OUT/cpu_tests.log" >>"$OUT/summary.txt"
}

step_fixtures() {
  [ -n "${SKIP_FIXTURES:-}" ] && return
  wait $FIXTURES 2>/dev/null
  say "fixtures against transformers: $(tail -1 "$OUT/fixtures.log")"
  grep -E "e-0[1-5]|not checked|by layer" "$OUT/fixtures.log" >>"$OUT/summary.txt"
}

step_bench() {
  wait $MAKER
  [ -x build-card/tests/bench_card ] || return
  for f in /tmp/llama-8b /tmp/gpt2-small; do
    [ "$(left)" -lt 90 ] && break
    dtype=bfloat16; [ $f = /tmp/gpt2-small ] && dtype=float32
    timeout $(within 60 120) build-card/tests/bench_card $f --device cuda --tokens 128,1024 --generate 32 >>"$OUT/bench.log" 2>&1
    # Fast precision: BF16 products as transformers computes them (and TF32 for the float32 GPT-2,
    # which transformers' reference below leaves off: compare that one with care).
    [ "$(left)" -gt 150 ] && timeout $(within 60 120) build-card/tests/bench_card $f --device cuda --tokens 128,1024 \
      --generate 32 --precision fast >>"$OUT/bench.log" 2>&1
    timeout $(within 60 120) $PY tests/bench/bench_card_reference.py $f --dtype $dtype >>"$OUT/bench.log" 2>&1
  done
  grep -E "forward|gate|LRP|generate|memory|open|bench_card|transformers" "$OUT/bench.log" >>"$OUT/summary.txt"
}

step_cli() {
  local E=build-card/app/headlab-engine
  [ -x $E ] || return
  wait $MAKER
  {
    $E run --model tests/data/hf/llama --ids 1,2,3,4 --device cuda --lrp --out /tmp/r.safetensors --force && echo "run --device cuda: ok"
    $E run --model tests/data/hf/llama --ids 1,2,3,4 --device cuda:9 --out /tmp/r.safetensors --force; echo "run --device cuda:9: exit $?"
    $E generate --model tests/data/hf/gpt2 --ids 1,2,3 --max-new 5 --device cuda && echo "generate --device cuda: ok"
    for dev in cuda cpu; do
      s=$(date +%s.%N)
      timeout $(within 30 150) $E analyze --model /tmp/llama-8b --device $dev --data /tmp/en_ewt-ud-dev.conllu --limit 500 \
        --metrics confidence,positional,rare,syntactic --out /tmp/report-$dev >/tmp/analyze-$dev.log 2>&1
      echo "analyze 8B-shaped, 500 UD sentences, --device $dev: exit $?, $(awk "BEGIN { print $(date +%s.%N) - $s }") s"
      tail -3 /tmp/analyze-$dev.log
      [ $dev = cuda ] && [ "$(left)" -lt 200 ] && break
    done
  } >"$OUT/cli.log" 2>&1
  grep -E "ok|exit|device" "$OUT/cli.log" >>"$OUT/summary.txt"
}

failed=0
for step in $STEPS; do
  if ! declare -F "step_$step" >/dev/null; then
    say "unknown step '$step' (gpu, suite, fixtures, bench, cli)"
    failed=1
    continue
  fi
  [ "$(left)" -lt 30 ] && { say "out of time before $step"; break; }
  say "step $step"
  step_$step
done
grep -q "All tests passed" "$OUT/gpu.log" 2>/dev/null || failed=1
say "done"
exit $failed
