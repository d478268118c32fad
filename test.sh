#!/usr/bin/env bash
# ./test.sh [ctest arguments...] — install what is missing, build, run the whole test
# suite, then each fuzz target for 30 s when clang can build them (scripts/fuzz.sh
# all 30; LCC_FUZZ_SECONDS changes the time, 0 skips the step). Exit 0 only if
# everything passed. .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh --test
# A build folder ./run.sh made has the tests off: turn them on.
if grep -q '^LCC_BUILD_TESTS:BOOL=OFF' build/CMakeCache.txt 2>/dev/null; then
  cmake -S . -B build -DLCC_BUILD_TESTS=ON >/dev/null
fi
./scripts/build.sh
status=0
(cd build && ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@") || status=$?
fuzz_seconds=${LCC_FUZZ_SECONDS:-30}
probe='extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }'
if [ "$fuzz_seconds" != 0 ] && command -v clang++ >/dev/null &&
   echo "$probe" | clang++ -fsanitize=fuzzer,address,undefined -x c++ - -o /dev/null 2>/dev/null; then
  LCC_FUZZ_JOBS=$(nproc) ./scripts/fuzz.sh all "$fuzz_seconds" || status=1
else
  echo "fuzz step skipped (LCC_FUZZ_SECONDS=0, or no clang++ with libFuzzer: libclang-rt-14-dev)"
fi
exit "$status"
