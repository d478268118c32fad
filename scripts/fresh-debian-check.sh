#!/usr/bin/env bash
# scripts/fresh-debian-check.sh — build and test the LCC the way a new user would: in a
# fresh Debian 12 root that has nothing but what `scripts/deps.sh` installs.
#
# It makes a minimal bookworm root with mmdebstrap, puts a clean clone of this
# repository's HEAD in it (committed work only: what a user would clone), and runs
# `./test.sh` there in a chroot. Exit status: 0 only if the suite passed there;
# 1 if it failed; 2 if the check could not run on this machine (said in one line).
#
# Environment:
#   LCC_FRESH_DIR=DIR     where to build the root (default: a new folder in /var/tmp;
#                         removed at the end unless LCC_FRESH_KEEP=1)
#   LCC_FRESH_CCACHE=1    keep a ccache for these runs only, in
#                         /var/cache/lcc-fresh-check (never the developer's own cache;
#                         compilers are compared by content). Off by default: the first
#                         build of a new user is a cold one.
#   LCC_FRESH_MIRROR=URL  Debian mirror (default http://deb.debian.org/debian)
# Extra arguments go to ctest inside the root, as with ./test.sh.
set -euo pipefail

say() { echo "fresh-debian-check: $*" >&2; }
cannot() { say "cannot run here: $*"; exit 2; }

src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || cannot "needs root for mmdebstrap and chroot"
chroot / true 2>/dev/null || cannot "this machine does not allow chroot"
if ! command -v mmdebstrap >/dev/null; then
  say "installing mmdebstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null ||
    cannot "mmdebstrap is not installed and could not be installed"
fi
git -C "$src" rev-parse HEAD >/dev/null 2>&1 || cannot "$src is not a git checkout"

mirror=${LCC_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security
work=${LCC_FRESH_DIR:-$(mktemp -d /var/tmp/lcc-fresh.XXXXXX)}
rootfs=$work/root
mounted=()

cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  if [ "${LCC_FRESH_KEEP:-0}" != 1 ]; then rm -rf "$work"; else say "root kept in $rootfs"; fi
}
trap cleanup EXIT
bind() {  # bind HOST_PATH ROOT_PATH [mount options]
  mkdir -p "$rootfs$2"
  mount --bind "$1" "$rootfs$2"
  mounted+=("$rootfs$2")
}

started=$(date +%s)
say "making a Debian 12 root in $rootfs"
# minbase: essential packages and apt only. ca-certificates and git are what a user
# has to clone the repository; everything the build needs must come from deps.sh.
mmdebstrap --variant=minbase --include=ca-certificates,git --quiet bookworm "$rootfs" \
  "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
  "deb $security bookworm-security main" || cannot "mmdebstrap failed (no Debian mirror reachable?)"
rooted=$(date +%s)

git clone --quiet --no-local "$src" "$rootfs/src/lcc"
say "cloned $(git -C "$src" rev-parse --short HEAD) into /src/lcc"
echo "127.0.0.1 localhost" > "$rootfs/etc/hosts"
echo "::1 localhost ip6-localhost" >> "$rootfs/etc/hosts"

bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /dev/pts /dev/pts
mkdir -p "$rootfs/dev/shm"
mount -t tmpfs -o size=4g tmpfs "$rootfs/dev/shm" && mounted+=("$rootfs/dev/shm")
ccache_env=()
if [ "${LCC_FRESH_CCACHE:-0}" = 1 ]; then
  mkdir -p /var/cache/lcc-fresh-check
  bind /var/cache/lcc-fresh-check /var/cache/ccache
  ccache_env=(CCACHE_DIR=/var/cache/ccache CCACHE_COMPILERCHECK=content)
fi

say "running ./test.sh in the root"
# The machine's own trust: certificate authorities its administrator added (a TLS
# proxy on the way out, a company CA) are part of the machine, not of the packages, so
# the root gets them too; without them npm cannot reach its registry here.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  chroot "$rootfs" update-ca-certificates >/dev/null 2>&1 || say "update-ca-certificates failed in the root"
fi

set +e
chroot "$rootfs" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  "${ccache_env[@]}" bash -c 'cd /src/lcc && ./test.sh "$@"' test.sh "$@"
rc=$?
set -e
finished=$(date +%s)
say "root in $((rooted - started)) s; deps, build and tests in $((finished - rooted)) s; total $((finished - started)) s"
if [ $rc -eq 0 ]; then say "PASSED"; else say "FAILED (exit $rc)"; rc=1; fi
exit $rc
