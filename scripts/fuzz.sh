#!/usr/bin/env bash
# scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
# scripts/fuzz.sh all SECONDS     every target in turn, SECONDS each (test.sh: 30)
# Builds fuzz/TARGET with clang (-fsanitize=fuzzer,address,undefined) in build-fuzz/,
# apart from the normal build, and runs it for SECONDS on a copy of its seed corpus
# (fuzz/corpus/<name>/, name = TARGET without "_fuzz"). New inputs go to
# build-fuzz/corpus/<name>/; crashes to build-fuzz/artifacts/. Needs clang and
# libclang-rt-14-dev (Debian 12), which the normal build does not.
# LCC_FUZZ_JOBS sets the build's parallel jobs (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh TARGET|all SECONDS}
seconds=${2:?usage: scripts/fuzz.sh TARGET|all SECONDS}
shift 2
all_targets="url_fuzz sitemap_fuzz cp_uns_fuzz cu_query_fuzz cu_cursor_fuzz uns_qm_fuzz botm_link_fuzz link_frames_fuzz robot_frames_fuzz config_fuzz journal_fuzz proxy_header_fuzz indexnow_fuzz http_request_fuzz"
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLCC_FUZZ=ON -DLCC_BUILD_TESTS=OFF \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
fi

run_one() {  # TARGET SECONDS [options...]
  local t=$1 s=$2 name=${1%_fuzz}
  shift 2
  mkdir -p "build-fuzz/corpus/$name" build-fuzz/artifacts
  cp -n "fuzz/corpus/$name"/* "build-fuzz/corpus/$name/" 2>/dev/null || true
  # The targets that parse what anonymous clients send run within 512 MB, so that a
  # parser that grows without bound fails here.
  local rss=2048
  case "$t" in http_request_fuzz | indexnow_fuzz) rss=512 ;; esac
  build-fuzz/bin/"$t" -max_total_time="$s" -max_len=4096 -timeout=10 -rss_limit_mb="$rss" \
    -artifact_prefix=build-fuzz/artifacts/ "$@" "build-fuzz/corpus/$name"
}

if [ "$target" = all ]; then
  # shellcheck disable=SC2086 # the list is words
  cmake --build build-fuzz -j"${LCC_FUZZ_JOBS:-2}" --target $all_targets
  failed=""
  for t in $all_targets; do
    log=build-fuzz/$t.log
    if run_one "$t" "$seconds" "$@" >"$log" 2>&1; then
      echo "fuzz $t: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log" | tail -1)"
    else
      echo "fuzz $t: FAILED (build-fuzz/artifacts/, $log):"
      tail -30 "$log"
      failed="$failed $t"
    fi
  done
  [ -z "$failed" ] || { echo "fuzz targets failed:$failed"; exit 1; }
  exit 0
fi
cmake --build build-fuzz -j"${LCC_FUZZ_JOBS:-2}" --target "$target"
run_one "$target" "$seconds" "$@"
