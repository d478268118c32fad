#!/usr/bin/env bash
# Configures and builds into ./build (Release). Idempotent; incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
build_type=${LCC_BUILD_TYPE:-Release}
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
fi
cmake --build build -j "$(nproc)"
# Plugins must not be writable by group/other (the loader refuses them).
chmod -R go-w build/plugins 2>/dev/null || true
