#!/usr/bin/env bash
# scripts/build.sh [cmake configure options...]
# Configures and builds into ./build (Release), or into LCC_BUILD_DIR with
# LCC_BUILD_TYPE; the options apply when the folder is first configured
# (scripts/sanitize.sh passes -DLCC_SANITIZE=...). Idempotent; incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${LCC_BUILD_DIR:-build}
build_type=${LCC_BUILD_TYPE:-Release}
# ccache: hash paths relative to the checkout, so another clone reuses the objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$build_type" "$@" >/dev/null
fi
cmake --build "$dir" -j "$(nproc)"
# Plugins must not be writable by group/other (the loader refuses them).
chmod -R go-w "$dir/plugins" 2>/dev/null || true
