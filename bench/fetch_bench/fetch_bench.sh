#!/usr/bin/env bash
# End-to-end fetch rate: a local nginx serving 10 KB files under 64 provider paths,
# fetched (1) by `curl --parallel --parallel-max 64` writing one file per URL, and
# (2) by lccd's BOT-M + robots + fetch-curl, driven by bench/fetch_bench (a url source
# that keeps capacity x 150% fetches outstanding, as the QM does). Same URLs, same
# number of files written. Results go to docs/benchmarks.md ("Fetching").
#
#   BUILD=build-rel N=20000 RUNS=5 ROBOTS=1 SLOTS=64 [OUT=/dev/shm] bench/fetch_bench/fetch_bench.sh
#
# S3=1 adds, in each run, the same lccd fetching into an S3 bucket of a single-node Ceph
# RADOS Gateway started here (issue 31 §1; S3_UPLOAD_THREADS, default 0: one per slot), and prints it
# against the local-disk run just before it.
#
# Knobs: ROBOTS, SLOTS (robots x slots = capacity), CURL_PARALLEL (curl's --parallel-max,
# default 64), IO_THREADS (fetch-curl writer threads),
# LCCD_THREADS (lccd io threads; default 0: lccd's choice, 1 for roles botm+bot), OUT (where files go: /dev/shm =
# tmpfs), HEAD (bot.max_response_head: 16KiB, 0 keeps no response heads). Diagnostics of the lcc part of each run: THREADS_CPU=1 (CPU seconds and context
# switches per lccd thread), LINKS=tcp (robots over TCP), FRAMES=0|1 (XML or compact frames on
# the TCP links), PERF=<file> (perf record of the whole machine; perf report
# --pid=<printed pid>), STAT=<file> (perf stat), STRACE=<file> (system call counts).
#
# Needs a Release build with lccd, fetch_bench, fetch-curl and storage-memory:
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DLCC_BUILD_TESTS=OFF
#   cmake --build build-rel --target lccd fetch_bench fetch_curl storage_memory
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${BUILD:-$ROOT/build}" && pwd)
N=${N:-20000}
RUNS=${RUNS:-3}
ROBOTS=${ROBOTS:-2}
SLOTS=${SLOTS:-32}
IO_THREADS=${IO_THREADS:-1}
CURL_PARALLEL=${CURL_PARALLEL:-64}  # curl's --parallel-max (64 in the issue)
PROVIDERS=64
FILES_PER_PROVIDER=16
BASE=$((20000 + RANDOM % 20000))
WEB=$BASE; SRC=$((BASE + 1)); ROB=$((BASE + 2)); HTTP=$((BASE + 3))
SCR=$(mktemp -d "${TMPDIR:-/tmp}/lcc-fetch-bench-XXXXXX")
chmod 755 "$SCR"
# Where both contenders write their files: OUT=/dev/shm measures the fetch pipeline
# without the file system's inode allocator (tmpfs); default: next to the scratch data.
OUT=$(mktemp -d "${OUT:-$SCR}/lcc-fetch-out-XXXXXX")
NGINX_PID=""; LCCD_PID=""
cleanup() {
  [ -n "$LCCD_PID" ] && kill "$LCCD_PID" 2>/dev/null || true
  [ -n "${RGW_DIR:-}" ] && "$ROOT/tests/s3/rgw_cluster.sh" stop "$RGW_DIR"
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$SCR" "$OUT"
}
trap cleanup EXIT

# --- the web server: 64 providers x 16 files of 10240 bytes ---
mkdir -p "$SCR/www"
body=$(head -c 10200 /dev/zero | tr '\0' 'x')
for p in $(seq -w 0 $((PROVIDERS - 1))); do
  mkdir -p "$SCR/www/p$p"
  for f in $(seq 1 $FILES_PER_PROVIDER); do
    printf '<html>%s</html>\n%s' "$p-$f" "$body" | head -c 10240 > "$SCR/www/p$p/f$f.html"
  done
done
chmod -R a+rX "$SCR/www"
mkdir -p "$SCR/nginx/logs"
cat > "$SCR/nginx/nginx.conf" <<NGINX
worker_processes 2;
daemon off;
pid $SCR/nginx/nginx.pid;
error_log $SCR/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  open_file_cache max=4000;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  types { text/html html; }
  client_body_temp_path $SCR/nginx/body;
  proxy_temp_path $SCR/nginx/proxy;
  fastcgi_temp_path $SCR/nginx/fastcgi;
  uwsgi_temp_path $SCR/nginx/uwsgi;
  scgi_temp_path $SCR/nginx/scgi;
  server { listen 127.0.0.1:$WEB; root $SCR/www; }
}
NGINX
nginx -p "$SCR/nginx" -c "$SCR/nginx/nginx.conf" -e "$SCR/nginx/logs/error.log" &
NGINX_PID=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$WEB/p00/f1.html" && break; sleep 0.05; done

# --- S3=1: a single-node Ceph RADOS Gateway (tests/s3/rgw_cluster.sh) for the lcc-s3 runs ---
RGW_DIR=""
S3_UPLOAD_THREADS=${S3_UPLOAD_THREADS:-0}  # 0: the schema's default (one per slot)
if [ "${S3:-0}" = 1 ]; then
  RGW_DIR="$SCR/rgw"; RGW=$((BASE + 5)); S3_SECRET=bench-secret-0123456789
  RGW_MEMSTORE_BYTES=$((1024 * 1024 * 1024)) "$ROOT/tests/s3/rgw_cluster.sh" start "$RGW_DIR" $((BASE + 4)) "$RGW" \
    bench-access "$S3_SECRET" || { echo "the RADOS Gateway did not start"; exit 1; }
  s3curl() { curl -s --aws-sigv4 aws:amz:us-east-1:s3 --user "bench-access:$S3_SECRET" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }
  s3curl -X PUT "http://127.0.0.1:$RGW/lcc-bench" >/dev/null
  # Objects under m1/ (ListObjectsV2 pages of 1000).
  s3_count() {
    local n=0 token="" page
    for _ in $(seq 1000); do
      page=$(s3curl "http://127.0.0.1:$RGW/lcc-bench?${token:+continuation-token=$(printf %s "$token" | jq -sRr @uri)&}list-type=2&prefix=m1%2F")
      n=$((n + $(grep -o '<Key>' <<<"$page" | wc -l)))
      token=$(sed -n 's:.*<NextContinuationToken>\(.*\)</NextContinuationToken>.*:\1:p' <<<"$page")
      [ -z "$token" ] && break
    done
    echo "$n"
  }
  printf '%s\n' "$S3_SECRET" > "$SCR/s3.secret"; chmod 600 "$SCR/s3.secret"
  S3_YAML="s3: {endpoint: 'http://127.0.0.1:$RGW', bucket: lcc-bench, access_key: bench-access, secret_key_file: $SCR/s3.secret, upload_threads: $S3_UPLOAD_THREADS}"
fi

# --- the URL list: N fetches cycling over providers first (like a politeness-limited QM) ---
: > "$SCR/urls.txt"
for f in $(seq 1 $FILES_PER_PROVIDER); do
  for p in $(seq -w 0 $((PROVIDERS - 1))); do echo "http://127.0.0.1:$WEB/p$p/f$f.html"; done
done >> "$SCR/urls.txt"
awk -v n="$N" '{u[NR]=$0} END {for (i = 0; i < n; i++) print u[i % NR + 1]}' "$SCR/urls.txt" > "$SCR/urls_n.txt"
awk -v out="$OUT/curl_out" '{d=int((NR-1)/256); printf "url = \"%s\"\noutput = \"%s/%02x/%02x/%x\"\n", $0, out, int(d/256)%256, d%256, NR-1}' \
  "$SCR/urls_n.txt" > "$SCR/curl.cfg"

now() { date +%s.%N; }
# One lccd run (BOT-M + robots + fetch-curl, driven by fetch_bench as the url source):
# lcc_run LABEL EXTRA_YAML; sets rate and lcpu.
lcc_run() {
  rm -rf "$OUT/curl_out" "$OUT/lcc"; mkdir -p "$OUT/lcc"; sync
  # LINKS=tcp: the robots link to the BOT-M over loopback TCP (node.in_process_links:
  # false); FRAMES=0|1 (a build that has node.link_frames): XML or compact frames on the
  # TCP links, fetch_bench's included (issue 28).
  node_extra=""
  [ "${LINKS:-}" = tcp ] && node_extra="$node_extra, in_process_links: false"
  [ -n "${FRAMES:-}" ] && node_extra="$node_extra, link_frames: $([ "$FRAMES" = 1 ] && echo true || echo false)"
  cat > "$SCR/lcc.yaml" <<YAML
node: {data_dir: $OUT/lcc, machine_id: m1$node_extra}
roles: [botm, bot]
threads: ${LCCD_THREADS:-0}
listen: {botm: 127.0.0.1:$SRC, robots: 127.0.0.1:$ROB, http: 127.0.0.1:$HTTP}
log: {level: warn}
storage: {plugin_dir: $BUILD/plugins, queue: storage-memory, content: storage-memory, providers: storage-memory}
fetcher: {plugin: fetch-curl, options: {allow_private: true, max_connections: 256, io_threads: $IO_THREADS}}
bot: {robots: $ROBOTS, slots: $SLOTS, max_response_head: ${HEAD:-16KiB}}
botm: {reconnect_min: 10ms, reconnect_max: 100ms}
$2
YAML
  frames_arg=(); [ "${FRAMES:-}" = 1 ] && frames_arg=(--frames 1)
  "$BUILD/bin/fetch_bench" --listen "127.0.0.1:$SRC" --urls "$SCR/urls_n.txt" --count "$N" "${frames_arg[@]}" \
    > "$SCR/lcc_result.txt" &
  BENCH_PID=$!
  sleep 0.2
  "$BUILD/bin/lccd" -c "$SCR/lcc.yaml" 2> "$SCR/lccd.log" &
  LCCD_PID=$!
  PERF_PID=""
  if [ -n "${PERF:-}" ]; then  # PERF=<file>: profile the lcc part of the last run (perf report -i <file>)
    echo "lccd pid $LCCD_PID" >&2
    perf record -a -F 1999 -g -o "$PERF" 2>/dev/null >/dev/null &  # whole machine: report with --pid=<lccd pid>
    PERF_PID=$!
  elif [ -n "${STAT:-}" ]; then  # STAT=<file>: perf stat of lccd (CPU, context switches)
    perf stat -e "${STAT_EVENTS:-task-clock,context-switches,cpu-migrations}" -o "$STAT" -p "$LCCD_PID" &
    PERF_PID=$!
  elif [ -n "${STRACE:-}" ]; then  # STRACE=<file>: system call counts of lccd in the last run
    strace -c -f -o "$STRACE" -p "$LCCD_PID" 2>/dev/null &
    PERF_PID=$!
  fi
  wait "$BENCH_PID" || { echo "fetch_bench failed:"; cat "$SCR/lcc_result.txt" "$SCR/lccd.log" | tail -20; exit 1; }
  # CPU of lccd (BOT-M + robots + fetch-curl), clock ticks of utime + stime.
  ticks=$(awk '{print $14 + $15}' "/proc/$LCCD_PID/stat")
  if [ -n "${THREADS_CPU:-}" ]; then  # THREADS_CPU=1: CPU seconds of each lccd thread
    for t in /proc/$LCCD_PID/task/*; do
      printf '  thread %s %s: %.2fs, %s context switches\n' "$(basename "$t")" "$(cat "$t/comm")" \
        "$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "$t/stat")" \
        "$(awk '/ctxt_switches/ {n += $2} END {print n}' "$t/status")"
    done
  fi
  lcpu=$(echo "$ticks / $(getconf CLK_TCK)" | bc -l)
  [ -n "$PERF_PID" ] && { kill -INT "$PERF_PID"; wait "$PERF_PID" || true; }
  kill -TERM "$LCCD_PID"; wait "$LCCD_PID" || true; LCCD_PID=""
  line=$(cat "$SCR/lcc_result.txt")
  files=$(find "$OUT/lcc/content" -type f | wc -l)
  [ -n "$2" ] && files="$files objects=$(s3_count)"  # S3: the objects in the bucket, no file on disk
  rate=$(echo "$line" | sed -n 's/.*rate=\([0-9.]*\).*/\1/p')
  printf 'run %d %s %s files=%s lccd cpu=%.2fs (%.0f files per CPU-second) load=%s\n' "$run" "$1" "$line" "$files" "$lcpu" \
    "$(echo "$N / $lcpu" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"
}

curl_rates=(); lcc_rates=(); curl_cpu=(); lcc_cpu=(); pair_ratios=(); s3_rates=(); s3_cpu=(); s3_ratios=()
for run in $(seq 1 "$RUNS"); do
  # --- curl --parallel, one file per URL ---
  rm -rf "$OUT/curl_out" "$OUT/lcc"; sync
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$SCR/curl_cpu.txt" \
    curl -s --no-progress-meter --parallel --parallel-max "$CURL_PARALLEL" --create-dirs -K "$SCR/curl.cfg"
  t1=$(now)
  got=$(find "$OUT/curl_out" -type f | wc -l)
  rate=$(echo "$N / ($t1 - $t0)" | bc -l)
  cpu=$(awk '{print $1 + $2}' "$SCR/curl_cpu.txt")
  curl_rates+=("$rate"); curl_cpu+=("$(echo "$N / $cpu" | bc -l)")
  printf 'run %d curl  files=%d seconds=%.3f rate=%.0f/s cpu=%.2fs (%.0f files per CPU-second) load=%s\n' "$run" "$got" \
    "$(echo "$t1 - $t0" | bc -l)" "$rate" "$cpu" "$(echo "$N / $cpu" | bc -l)" "$(cut -d' ' -f1 /proc/loadavg)"

  lcc_run lcc ""
  lcc_rates+=("$rate"); lcc_cpu+=("$(echo "$N / $lcpu" | bc -l)")
  pair_ratios+=("$(echo "$rate / ${curl_rates[-1]}" | bc -l)")  # this run's lcc against this run's curl
  if [ "${S3:-0}" = 1 ]; then  # the same fetches, bodies PUT to the RADOS Gateway (issue 31 §1)
    disk_rate=$rate
    lcc_run lcc-s3 "$S3_YAML"
    s3_rates+=("$rate"); s3_cpu+=("$(echo "$N / $lcpu" | bc -l)")
    s3_ratios+=("$(echo "$rate / $disk_rate" | bc -l)")  # this run's S3 against this run's local disk
  fi
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cm=$(median "${curl_rates[@]}"); lm=$(median "${lcc_rates[@]}")
cc=$(median "${curl_cpu[@]}"); lc=$(median "${lcc_cpu[@]}")
printf 'median curl --parallel-max %d: %.0f files/s; lcc (robots=%d x slots=%d, io_threads=%d): %.0f files/s; ratio %.2f\n' "$CURL_PARALLEL" \
  "$cm" "$ROBOTS" "$SLOTS" "$IO_THREADS" "$lm" "$(echo "$lm / $cm" | bc -l)"
printf 'median files per CPU-second: curl %.0f, lccd %.0f (lccd alone, nginx and fetch_bench not counted); ratio %.2f\n' \
  "$cc" "$lc" "$(echo "$lc / $cc" | bc -l)"
pairs=$(printf '%s\n' "${pair_ratios[@]}" | sort -g | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1}')
printf 'ratio of each run (lcc / the curl run just before it), sorted: %s; median %.2f\n' "$pairs" \
  "$(median "${pair_ratios[@]}")"
if [ "${S3:-0}" = 1 ]; then
  sm=$(median "${s3_rates[@]}"); sc=$(median "${s3_cpu[@]}")
  s3pairs=$(printf '%s\n' "${s3_ratios[@]}" | sort -g | awk '{printf "%s%.2f", (NR > 1 ? " " : ""), $1}')
  printf 'median lcc to the object store (RADOS Gateway, s3.upload_threads=%d): %.0f files/s, %.0f files per CPU-second of lccd; against local disk in the same runs, sorted: %s; median %.2f\n' \
    "$S3_UPLOAD_THREADS" "$sm" "$sc" "$s3pairs" "$(median "${s3_ratios[@]}")"
fi
