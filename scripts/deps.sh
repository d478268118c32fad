#!/usr/bin/env bash
# scripts/deps.sh [--test] — installs the Debian 12 packages the LCC needs, only those
# missing. Idempotent.
#   scripts/deps.sh          what building and running need (./run.sh)
#   scripts/deps.sh --test   that and what the test suite needs (./test.sh): the private
#                            servers and the independent readers the tests compare with
# Nothing installed here is left running as a system service: the tests start their
# own private servers (initdb + pg_ctl, nginx -c), so while apt installs, a policy-rc.d
# forbids starting services, and the services that came with the install are then
# disabled so they do not start at boot either (see no_services below).
set -euo pipefail
with_tests=0
case "${1:-}" in
  --test) with_tests=1 ;;
  "") ;;
  *) echo "usage: scripts/deps.sh [--test]" >&2; exit 2 ;;
esac
# Building and running: the compiler, the libraries lccd, lcc, lcc-bot and the plugins
# link, and python3 (the test suite's folders are configured by default, and the
# README's tour serves a site with python3 -m http.server).
run_packages=(
  build-essential cmake pkg-config ccache
  libboost-dev libboost-filesystem-dev libyaml-cpp-dev libexpat1-dev
  libkyotocabinet-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev zlib1g-dev
  libarchive-dev libsodium-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libidn2-dev
  libsystemd-dev     # sd_notify: lccd as a Type=notify service (etc/lccd.service)
  libpq-dev          # storage-postgres links libpq (the plugin is skipped without it)
  python3
)
# The tests only (./test.sh): one package per line or a few with a comment saying who needs them.
packages=(
  libgtest-dev libgmock-dev
  python3 tar gzip curl nginx-light
  libxml2-utils      # xmllint: ResourceSync documents against docs/schemas (tests/resourcesync)
  unzip              # unzip -t, zipinfo: the Resource Dump's ZIP packages (tests/resourcesync)
  dpkg-dev file      # cpack -G DEB: dpkg-shlibdeps and CPackDeb need both (tests/install/deb_test.cmake)
  lintian            # the .deb must have no lintian error (tests/install/deb_test.cmake)
  chromium           # tests/e2e/operator_test.py renders the status page headless
  prometheus         # promtool check metrics (tests/e2e/operator_test.py)
  nodejs wget        # warcio reads the WARC answer; wget --warc-file for comparison (tests/e2e/warc_test.py)
  strace             # the ack-after-sync audit (tests/reliability/ack_after_sync_audit.py)
  libpq-dev postgresql  # storage-postgres (libpq) and the private server of its tests (initdb, pg_ctl, psql)
  htdig swish++      # search engines fed by `lcc cu mirror` (tests/cu_engines/engines_test.py)
  python3-aiosmtpd   # the SMTP server of tests/e2e/mail_test.py (mail to site owners, issue 29)
  etcd-server patroni iproute2  # the multi-host bed: PostgreSQL failover (tests/multihost, issue 27)
  radosgw ceph-mon ceph-osd  # the Ceph RADOS Gateway the S3 content tests start (tests/s3/rgw_cluster.sh, issue 31)
)
wanted=("${run_packages[@]}")
if [ "$with_tests" = 1 ]; then wanted+=("${packages[@]}"); fi

# warcio (npm), the independent WARC reader of tests/e2e/warc_test.py, in a fixed folder.
npm_prefix=/usr/local/lib/lcc-npm
install_npm() {
  if [ "$with_tests" = 0 ] || [ -f "$npm_prefix/node_modules/warcio/package.json" ] || ! command -v node >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "warcio is missing: sudo npm install --prefix $npm_prefix warcio@2" >&2
    return 1
  fi
  # Debian's nodejs comes without npm (its own package); some nodejs builds include it.
  if ! command -v npm >/dev/null; then
    apt_install npm
  fi
  echo "installing: warcio@2 (npm) into $npm_prefix"
  npm install --no-audit --no-fund --prefix "$npm_prefix" warcio@2 >/dev/null
}

# The services on the machine, one a line: "systemd UNIT" or "initd NAME".
services() {
  { find /lib/systemd/system /usr/lib/systemd/system -maxdepth 1 ! -name '*@*' \
      \( -name '*.service' -o -name '*.socket' -o -name '*.timer' \) -printf 'systemd %f\n'
    find /etc/init.d -maxdepth 1 -type f -printf 'initd %f\n'; } 2>/dev/null | sort -u
}
# apt-get install with no service started (policy-rc.d exit 101, which invoke-rc.d and
# deb-systemd-invoke obey); the services it brought are then stopped if running and
# disabled. A policy-rc.d already on the machine is left as it is.
apt_install() {
  local before policy=/usr/sbin/policy-rc.d ours=0 kind name
  before=$(services)
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/deps.sh of the LCC: no service starts while it installs.\nexit 101\n' > "$policy"
    chmod 0755 "$policy"
    ours=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  if [ "$ours" = 1 ]; then rm -f "$policy"; trap - EXIT; fi
  comm -13 <(echo "$before") <(services) | while read -r kind name; do
    if [ "$kind" = initd ]; then
      if command -v update-rc.d >/dev/null; then update-rc.d "$name" disable >/dev/null 2>&1 || true; fi
    else
      if [ -d /run/systemd/system ]; then systemctl stop "$name" >/dev/null 2>&1 || true; fi
      if command -v systemctl >/dev/null; then
        systemctl disable --quiet "$name" >/dev/null 2>&1 || true
      elif command -v deb-systemd-helper >/dev/null; then
        deb-systemd-helper disable "$name" >/dev/null 2>&1 || true
      fi
    fi
    echo "deps.sh: $kind $name came with the install: not started, disabled (the tests run their own servers)"
  done
}

# What is missing, from one dpkg-query for all the packages.
mapfile -t missing < <(comm -23 <(printf '%s\n' "${wanted[@]}" | sort -u) \
  <(dpkg-query -W -f='${Package} ${Status}\n' "${wanted[@]}" 2>/dev/null |
    awk '$2 == "install" && $3 == "ok" && $4 == "installed" { print $1 }' | sort -u))
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
apt-get update -qq
apt_install "${missing[@]}"
install_npm
