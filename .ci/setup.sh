#!/usr/bin/env bash
# HeadLab set-up in one step: installs whatever Debian packages are missing (apt-get, with sudo
# when not root), configures and builds, then
#   bash .ci/setup.sh run    starts HeadLab on the shipped default model
#   bash .ci/setup.sh test   runs every test (what CI runs)
#   bash .ci/setup.sh build  only builds
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-run}"
case "$mode" in run|test|build) ;; *) echo "usage: bash .ci/setup.sh run|test|build" >&2; exit 2 ;; esac

# Everything comes from Debian's archive. libopenblas0-pthread matters: LibTorch calls whatever
# libblas.so.3 the alternatives system gives, and the reference BLAS is ~50x slower.
packages=(
  cmake ninja-build g++ pkg-config ccache
  libtorch-dev libopenblas0-pthread
  nlohmann-json3-dev libcli11-dev catch2
  libpcre2-dev libutf8proc-dev
  libglfw3-dev libimgui-dev libstb-dev libcairo2-dev fonts-dejavu-core
  xvfb xauth
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
    ;;
  run)
    exec build/app/headlab "${@:2}"
    ;;
esac
