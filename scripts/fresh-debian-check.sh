#!/usr/bin/env bash
# scripts/fresh-debian-check.sh — build and test the LCC the way a new user would: in a
# fresh Debian 12 root that has nothing but what `scripts/deps.sh` installs.
#
# It makes a minimal bookworm root with mmdebstrap, puts a clean clone of this
# repository's HEAD in it (committed work only: what a user would clone), and runs
# `./test.sh` there in a chroot. When the suite passed it packages the build there
# (cpack -G DEB) and installs the .deb, as an operator would, in a second fresh root:
# `apt-get install ./lcc_<version>_<arch>.deb`, then `lccd --version`, `lcc --version`,
# `lcc-bot --version` and `lccd -c /etc/lcc/lcc.yaml --check` there.
# Exit status: 0 only if the suite passed and the .deb installed and ran; 1 if not;
# 2 if the check could not run on this machine (said in one line).
#
#   scripts/fresh-debian-check.sh --deb FILE.deb
#                         the install step only: a fresh root, FILE.deb installed with
#                         apt and run there (about a minute; no build, no tests).
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

deb_only=""
if [ "${1:-}" = --deb ]; then
  [ -f "${2:-}" ] || { echo "usage: scripts/fresh-debian-check.sh --deb FILE.deb" >&2; exit 2; }
  deb_only=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
  shift 2
fi

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
[ -n "$deb_only" ] || git -C "$src" rev-parse HEAD >/dev/null 2>&1 || cannot "$src is not a git checkout"

mirror=${LCC_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${mirror%/debian}/debian-security
work=${LCC_FRESH_DIR:-$(mktemp -d /var/tmp/lcc-fresh.XXXXXX)}
mkdir -p "$work"
rootfs=$work/root
debroot=$work/deb-root
mounted=()

cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  # Mounts a test made inside the root (ip netns mounts /run/netns), deepest first.
  if [ -d "$work" ]; then
    awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/self/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  if [ "${LCC_FRESH_KEEP:-0}" != 1 ]; then rm -rf "$work"; else say "root kept in $rootfs"; fi
}
trap cleanup EXIT
bind() {  # bind HOST_PATH ROOT_PATH [ROOT]
  local root=${3:-$rootfs}
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  mounted+=("$root$2")
}
make_root() {  # make_root DIR [extra packages]: a minbase Debian 12 root
  mmdebstrap --variant=minbase ${2:+--include=$2} --quiet bookworm "$1" \
    "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
    "deb $security bookworm-security main" || cannot "mmdebstrap failed (no Debian mirror reachable?)"
}
# The operator's install: a fresh minbase root (no build dependencies), the .deb
# installed with apt (which fetches its dependencies), then the programs run there.
deb_install_check() {  # deb_install_check FILE.deb
  local deb=$1 rc=0
  say "installing $(basename "$deb") with apt in a fresh Debian 12 root ($debroot)"
  make_root "$debroot"
  cp "$deb" "$debroot/tmp/"
  bind /proc /proc "$debroot"
  bind /dev /dev "$debroot"
  bind /dev/pts /dev/pts "$debroot"
  chroot "$debroot" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive bash -c '
      set -eo pipefail
      apt-get update -qq
      apt-get install -y -q --no-install-recommends "/tmp/$1" 2>&1 | tee /tmp/apt.log | tail -n 3
      if grep -E "^(W|E): |[Ww]arning" /tmp/apt.log; then echo "apt or a maintainer script warned (above)"; exit 1; fi
      dpkg-query -W -f="\${Status}\n" lcc | grep -qx "install ok installed"
      apt-get -s -f install | grep -q "^0 upgraded, 0 newly installed, 0 to remove" ||
        { echo "apt-get -f install would change what is installed:"; apt-get -s -f install; exit 1; }
      for p in lccd lcc lcc-bot; do $p --version | head -n 3; done
      lccd -c /etc/lcc/lcc.yaml --check | tail -n 3
      test "$(stat -c %U:%a /var/lib/lcc)" = lcc:750
    ' deb-check "$(basename "$deb")" || rc=$?
  if [ $rc -eq 0 ]; then say "the .deb installed and ran in a fresh root"; else say "the .deb install FAILED (exit $rc)"; fi
  return $rc
}

started=$(date +%s)
if [ -n "$deb_only" ]; then
  set +e
  deb_install_check "$deb_only"
  rc=$?
  set -e
  say "total $(($(date +%s) - started)) s"
  if [ $rc -eq 0 ]; then say "PASSED"; exit 0; else say "FAILED"; exit 1; fi
fi
say "making a Debian 12 root in $rootfs"
# minbase: essential packages and apt only. ca-certificates and git are what a user
# has to clone the repository; everything the build needs must come from deps.sh.
make_root "$rootfs" ca-certificates,git
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
say "root in $((rooted - started)) s; deps, build and tests in $((finished - rooted)) s"
if [ $rc -eq 0 ]; then
  say "tests passed; packaging the build (cpack -G DEB)"
  set +e
  chroot "$rootfs" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    bash -c 'cd /src/lcc/build && cpack -G DEB -B /src/deb >/src/cpack.log 2>&1 || { tail -n 20 /src/cpack.log; exit 1; }'
  rc=$?
  debs=("$rootfs"/src/deb/lcc_*.deb)
  if [ $rc -eq 0 ] && [ -f "${debs[0]}" ]; then deb_install_check "${debs[0]}"; rc=$?; else rc=1; fi
  set -e
fi
say "total $(($(date +%s) - started)) s"
if [ $rc -eq 0 ]; then say "PASSED"; else say "FAILED (exit $rc)"; rc=1; fi
exit $rc
