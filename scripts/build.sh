#!/usr/bin/env bash
# Configures and builds into ./build (Release). Idempotent; incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
build_type=${LCC_BUILD_TYPE:-Release}
# ccache: hash paths relative to the checkout, so another clone reuses the objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
fi
cmake --build build -j "$(nproc)"
# Plugins must not be writable by group/other (the loader refuses them).
chmod -R go-w build/plugins 2>/dev/null || true
