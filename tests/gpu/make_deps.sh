#!/bin/bash
# Makes .deps/ (in .gitignore) for tests/gpu/run_on_card.sh: the GPU machine has no network and none
# of Debian's Catch2, CLI11, nlohmann-json, PCRE2, utf8proc or cairo, so their Debian 12 packages are
# unpacked here into one prefix (headers, libraries, CMake and pkg-config files; no documentation),
# packed as .deps/prefix.tar.xz, with the UD English-EWT dev set (../shared/data/ud) beside it,
# 3 MB in all. cairo's pkg-config file is replaced by one without its Requires, whose -dev packages
# are not carried: run_on_card.sh links and runs with the prefix on LD_LIBRARY_PATH instead.
set -eu
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download catch2 libcli11-dev nlohmann-json3-dev libpcre2-dev libpcre2-8-0 libutf8proc-dev \
  libutf8proc2 libcairo2-dev libcairo2 libpixman-1-0 libfontconfig1 libfreetype6 libpng16-16 libx11-6 libxcb-render0 \
  libxcb-shm0 libxcb1 libxext6 libxrender1 libxau6 libxdmcp6 libbsd0 libmd0 libexpat1 libbrotli1 pkgconf-bin libpkgconf3)
mkdir -p "$work/prefix"
for f in "$work"/*.deb; do dpkg -x "$f" "$work/prefix"; done
cd "$work/prefix"
rm -rf usr/share/doc usr/share/man usr/share/lintian usr/share/bug usr/share/gtk-doc usr/share/aclocal
find usr/bin -type f ! -name pkgconf -delete
find . -name '*.a' ! -name 'libCatch2*' -delete
find . -xtype l -delete
cat >usr/lib/x86_64-linux-gnu/pkgconfig/cairo.pc <<'PC'
prefix=/usr
libdir=${prefix}/lib/x86_64-linux-gnu
includedir=${prefix}/include
Name: cairo
Description: cairo from Debian 12, carried to the GPU machine without its Requires
Version: 1.16.0
Libs: -L${libdir} -lcairo
Cflags: -I${includedir}/cairo
PC
cd - >/dev/null
mkdir -p .deps
tar cJf .deps/prefix.tar.xz -C "$work/prefix" usr
xz -9 -c ../shared/data/ud/en_ewt-ud-dev.conllu >.deps/en_ewt-ud-dev.conllu.xz
du -sh .deps
