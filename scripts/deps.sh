#!/usr/bin/env bash
# Installs the Debian 12 packages the LCC needs, only those missing. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake pkg-config ccache
  libboost-dev libboost-filesystem-dev libyaml-cpp-dev libexpat1-dev
  libkyotocabinet-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev zlib1g-dev
  libarchive-dev libsodium-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libidn2-dev
  libgtest-dev libgmock-dev
  python3 tar gzip curl nginx-light
  libsystemd-dev     # sd_notify: lccd as a Type=notify service (etc/lccd.service)
  dpkg-dev           # cpack -G DEB: dpkg-shlibdeps (tests/install/deb_test.cmake)
  chromium           # tests/e2e/operator_test.py renders the status page headless
  prometheus         # promtool check metrics (tests/e2e/operator_test.py)
  strace             # the ack-after-sync audit (tests/reliability/ack_after_sync_audit.py)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  echo "run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
