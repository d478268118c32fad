#!/usr/bin/env bash
# scripts/sanitize.sh asan|tsan [ctest options...]
# Builds the whole tree (plugins, tools and tests) under sanitizers in its own folder
# (asan: AddressSanitizer + UndefinedBehaviorSanitizer with leak checks, in build-asan/;
# tsan: ThreadSanitizer, in build-tsan/) and runs the whole ctest suite there.
#
# Every sanitized process of the run (the test executables and every lccd, lcc and
# lcc-bot the end-to-end tests start) writes its reports to files under
# build-<kind>/sanitizer-reports/, so a report from a process whose exit status no test
# looks at is not lost: the run fails if ctest fails or if any report file exists.
# The build is scripts/build.sh's (RelWithDebInfo). On this 2-core machine a build from
# nothing takes about 40 minutes, a ctest run about 5.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh asan|tsan [ctest options...]}
shift
case "$kind" in
  asan) sanitizers='address;undefined' ;;
  tsan) sanitizers='thread' ;;
  *) echo "scripts/sanitize.sh: unknown kind '$kind' (asan or tsan)" >&2; exit 2 ;;
esac
dir=build-$kind
LCC_BUILD_DIR=$dir LCC_BUILD_TYPE=RelWithDebInfo scripts/build.sh -DLCC_SANITIZE="$sanitizers"

reports=$PWD/$dir/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
# log_path: each process appends its reports to $reports/report.<pid>.
common="log_path=$reports/report:print_stacktrace=1"
export ASAN_OPTIONS="$common:detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="$common:halt_on_error=1"
# TSan: report every race (not only the first), keep the run going, and make the
# process's exit status 66 when it reported one.
# The lock-order (deadlock) detector is off: Kyoto's synchronize() holds all of a
# table's slot locks at once, past the 64 that detector can track, and its CHECK stops
# the process. Races are what this run is for.
# scripts/tsan.supp: reports that are not races of the LCC, each with its reason.
export TSAN_OPTIONS="$common:halt_on_error=0:detect_deadlocks=0:history_size=4:suppressions=$PWD/scripts/tsan.supp"
status=0
(cd "$dir" && ctest -j"$(nproc)" --output-on-failure "$@") || status=$?
found=$(find "$reports" -type f | sort)
if [ -n "$found" ]; then
  echo "scripts/sanitize.sh: sanitizer reports in $reports:" >&2
  for f in $found; do
    echo "== $f" >&2
    grep -m3 -E 'ERROR|WARNING|runtime error' "$f" >&2 || head -n 5 "$f" >&2
  done
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "scripts/sanitize.sh: $kind: every test passed, no sanitizer report"
fi
exit "$status"
