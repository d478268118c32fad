#!/usr/bin/env bash
# ./run.sh [lccd arguments...] — install what is missing, build (Release), and run lccd
# in the foreground with etc/lcc.yaml, all roles in one process, data under ./var.
# Ctrl-C stops it cleanly. It installs what building and running need, not the test
# suite's tools (scripts/deps.sh), and a build folder it makes first leaves the tests out
# (./test.sh turns them on in the same folder).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/deps.sh
./scripts/build.sh -DLCC_BUILD_TESTS=OFF
exec ./build/bin/lccd -c etc/lcc.yaml "$@"
