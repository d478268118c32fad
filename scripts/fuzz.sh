#!/usr/bin/env bash
# scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
# Builds fuzz/TARGET with clang (-fsanitize=fuzzer,address,undefined) in build-fuzz/,
# apart from the normal build, and runs it for SECONDS on a copy of its seed corpus
# (fuzz/corpus/<name>/, name = TARGET without "_fuzz"). New inputs go to
# build-fuzz/corpus/<name>/; crashes to build-fuzz/artifacts/. Needs clang and
# libclang-rt-14-dev (Debian 12), which the normal build does not.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
shift 2
name=${target%_fuzz}
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLCC_FUZZ=ON -DLCC_BUILD_TESTS=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi
cmake --build build-fuzz -j2 --target "$target"
mkdir -p "build-fuzz/corpus/$name" build-fuzz/artifacts
cp -n "fuzz/corpus/$name"/* "build-fuzz/corpus/$name/" 2>/dev/null || true
exec build-fuzz/bin/"$target" -max_total_time="$seconds" -max_len=4096 \
  -artifact_prefix=build-fuzz/artifacts/ "$@" "build-fuzz/corpus/$name"
