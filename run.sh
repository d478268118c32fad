#!/usr/bin/env bash
# ./run.sh [lccd arguments...] — install what is missing, build (Release), and run lccd
# in the foreground with etc/lcc.yaml, all roles in one process, data under ./var.
# Ctrl-C stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
./scripts/build.sh
exec ./build/bin/lccd -c etc/lcc.yaml "$@"
