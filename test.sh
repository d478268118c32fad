#!/usr/bin/env bash
# ./test.sh [ctest arguments...] — install what is missing, build, run the whole test
# suite. Exit 0 only if everything passed. .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
./scripts/build.sh
cd build
exec ctest --output-on-failure --no-tests=error -j "$(nproc)" "$@"
