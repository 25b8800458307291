#!/usr/bin/env bash
# HeadLab set-up in one step: installs whatever Debian packages are missing (apt-get, with sudo
# when not root), configures and builds, then
#   bash .ci/setup.sh run    starts HeadLab on the shipped default model
#   bash .ci/setup.sh test   runs every test (what CI runs), then fuzzes the torch-free parsers
#                            under ASan + UBSan for 20 s each (tests/fuzz/ci.sh)
#   bash .ci/setup.sh build  only builds
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-run}"
case "$mode" in run|test|build) ;; *) echo "usage: bash .ci/setup.sh run|test|build" >&2; exit 2 ;; esac

# Everything comes from Debian's archive. OpenBLAS matters: LibTorch calls whatever libblas.so.3
# the alternatives system gives, and the reference BLAS is ~50x slower. The OpenMP build shares
# LibTorch's thread pool, so HeadLab's thread count holds (the pthread build runs its own threads
# beside LibTorch's: a "1-thread" live re-run then takes both cores from the GUI). openmpi-bin's
# mpirun runs the documented sharded analysis in a test (app/README.md, "Sharding over Slurm or MPI").
packages=(
  cmake ninja-build g++ pkg-config ccache
  libtorch-dev libopenblas0-openmp
  nlohmann-json3-dev libcli11-dev catch2
  libpcre2-dev libutf8proc-dev
  libglfw3-dev libimgui-dev libstb-dev libcairo2-dev fonts-dejavu-core
  xvfb xauth
  clang libclang-rt-14-dev python3
  openmpi-bin
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing from Debian: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
blas_link=libblas.so.3-x86_64-linux-gnu
openmp_blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
if [ -e "$openmp_blas" ] && [ "$(update-alternatives --query "$blas_link" 2>/dev/null | sed -n 's/^Value: //p')" != "$openmp_blas" ]; then
  echo "== selecting OpenBLAS (OpenMP) for libblas.so.3"
  $sudo update-alternatives --set "$blas_link" "$openmp_blas"
fi

jobs="$(nproc 2>/dev/null || echo 2)"
# Paths relative to the checkout in ccache's key, so a fresh clone elsewhere reuses the cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
echo "== configuring and building (build/, $jobs jobs)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

case "$mode" in
  build) ;;
  test)
    echo "== running tests"
    ctest --test-dir build --output-on-failure -j "$jobs"
    echo "== sanitizers: the torch-free parsers fuzzed under ASan + UBSan (tests/fuzz/ci.sh)"
    bash tests/fuzz/ci.sh 20
    echo "== races: the task system under ThreadSanitizer (tests/race/ci.sh)"
    bash tests/race/ci.sh
    ;;
  run)
    exec build/app/headlab "${@:2}"
    ;;
esac
