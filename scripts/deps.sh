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
  libxml2-utils      # xmllint: ResourceSync documents against docs/schemas (tests/resourcesync)
  unzip              # unzip -t, zipinfo: the Resource Dump's ZIP packages (tests/resourcesync)
  libsystemd-dev     # sd_notify: lccd as a Type=notify service (etc/lccd.service)
  dpkg-dev file      # cpack -G DEB: dpkg-shlibdeps and CPackDeb need both (tests/install/deb_test.cmake)
  chromium           # tests/e2e/operator_test.py renders the status page headless
  prometheus         # promtool check metrics (tests/e2e/operator_test.py)
  nodejs wget        # warcio reads the WARC answer; wget --warc-file for comparison (tests/e2e/warc_test.py)
  strace             # the ack-after-sync audit (tests/reliability/ack_after_sync_audit.py)
  libpq-dev postgresql  # storage-postgres (libpq) and the private server of its tests (initdb, pg_ctl, psql)
  htdig swish++      # search engines fed by `lcc cu mirror` (tests/cu_engines/engines_test.py)
  python3-aiosmtpd   # the SMTP server of tests/e2e/mail_test.py (mail to site owners, issue 29)
)
# warcio (npm), the independent WARC reader of tests/e2e/warc_test.py, in a fixed folder.
npm_prefix=/usr/local/lib/lcc-npm
install_npm() {
  if [ -f "$npm_prefix/node_modules/warcio/package.json" ] || ! command -v node >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "warcio is missing: sudo npm install --prefix $npm_prefix warcio@2" >&2
    return 1
  fi
  # Debian's nodejs comes without npm (its own package); some nodejs builds include it.
  if ! command -v npm >/dev/null; then
    apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "installing: warcio@2 (npm) into $npm_prefix"
  npm install --no-audit --no-fund --prefix "$npm_prefix" warcio@2 >/dev/null
}
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  install_npm
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
install_npm
