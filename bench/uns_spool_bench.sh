#!/bin/sh
# uns_spool_bench.sh — lccd's peak RSS (VmHWM) while `lcc cp send` sends one large set
# to a UNS whose QM is down (issue 13, "the UNS spools a set in parts"): a UNS-only lccd
# (roles [uns], storage-kyoto) whose uns.qm is a closed 127.0.0.1 port, so the whole
# set goes to the spool. Prints the set's size, the time to set_accepted, lccd's VmRSS
# at start and its VmHWM at the ack, and the spool's bytes. Run it with an older build's
# bin/ for the "before" figure (docs/benchmarks.md, ingest_bench).
#
#   bench/uns_spool_bench.sh [BIN_DIR (build/bin)] [URLS (1000000)]
set -eu
bin=$(cd "${1:-build/bin}" && pwd)
urls=${2:-1000000}
plugins=$(cd "$bin/../plugins" && pwd)
work=$(mktemp -d /tmp/uns-spool-bench.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# Three free loopback ports: the UNS, the admin HTTP listener, and the QM's (left closed).
set -- $(python3 -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
uns_port=$1 http_port=$2 qm_port=$3

cat > "$work/lcc.yaml" <<EOF
node:
  data_dir: $work/var
  machine_id: m1
roles: [uns]
listen:
  uns: 127.0.0.1:$uns_port
  http: 127.0.0.1:$http_port
storage:
  plugin_dir: $plugins
  providers: {plugin: storage-kyoto}
log:
  level: warn
  file: $work/lccd.log
uns:
  qm: 127.0.0.1:$qm_port
  max_set_urls: $urls
  spool_limit: 64GiB
  session_timeout: 1h
  idle_timeout: 10m
EOF

# The set `lcc cp scan` would print for $urls files (sz, md5, mt on each), as ingest_bench.
awk -v n="$urls" 'BEGIN {
  print "<lococa:set xmlns:lococa=\"http://www.lococa.org/1.0\" set=\"partial\" urlprefix=\"http://p0.example/\">"
  for (i = 0; i < n; i++)
    printf "<url c=\"http://p0.example/d%03d/file-%09d.html\" m=\"text/html\" sz=\"%d\" md5=\"%032x\" mt=\"2024-05-%02dT10:%02d:%02dZ\"/>\n",
      i % 1000, i, 1000 + i % 50000, i * 2654435761 % 4294967296, 1 + i % 28, i % 60, int(i / 60) % 60
  print "</lococa:set>" }' > "$work/set.xml"

"$bin/lccd" -c "$work/lcc.yaml" & pid=$!
i=0
until "$bin/lcc" --config "$work/lcc.yaml" status > /dev/null 2>&1; do
  i=$((i + 1)); [ $i -lt 100 ] || { echo "lccd did not start" >&2; exit 1; }; sleep 0.1
done
added=$("$bin/lcc" --config "$work/lcc.yaml" provider add --prefix http://p0.example/ --password bench-password)
id=$(echo "$added" | sed -n 's/^id=\([0-9]*\) .*/\1/p')
kb() { awk -v f="$1:" '$1 == f { print int($2 / 1024) }' "/proc/$pid/status"; }
rss_start=$(kb VmRSS)
t0=$(date +%s.%N)
"$bin/lcc" cp send --uns "127.0.0.1:$uns_port" --id "$id" --password bench-password "$work/set.xml" > "$work/send.out" 2>&1 ||
  { echo "cp send failed:" >&2; cat "$work/send.out" >&2; exit 1; }
t1=$(date +%s.%N)
hwm=$(kb VmHWM)
spool=$("$bin/lcc" --config "$work/lcc.yaml" status --json | python3 -c 'import json, sys
j = json.load(sys.stdin)
def find(o):
    if isinstance(o, dict):
        if "spool_bytes" in o: return o
        for v in o.values():
            r = find(v)
            if r: return r
fwd = find(j) or {}
print(fwd.get("spool_sets"), fwd.get("spool_bytes"), fwd.get("qm_connected"), fwd.get("memory_bytes_max", "-"))')
set -- $spool
echo "$urls URLs ($(($(stat -c %s "$work/set.xml") / 1048576)) MiB of XML), QM down: set_accepted in" \
  "$(echo "$t1 - $t0" | bc) s; lccd VmRSS at start $rss_start MiB, VmHWM at the ack $hwm MiB;" \
  "spool: $1 sets, $(($2 / 1048576)) MiB, qm_connected $3, forwarder memory_bytes_max $4; load $(cut -d' ' -f1-3 /proc/loadavg)"
