#!/usr/bin/env bash
# End-to-end fetch rate: a local nginx serving 10 KB files under 64 provider paths,
# fetched (1) by `curl --parallel --parallel-max 64` writing one file per URL, and
# (2) by lccd's BOT-M + robots + fetch-curl, driven by bench/fetch_bench (a url source
# that keeps capacity x 150% fetches outstanding, as the QM does). Same URLs, same
# number of files written. Results go to docs/benchmarks.md ("Fetching").
#
#   BUILD=build-botm-rel N=20000 RUNS=3 ROBOTS=2 SLOTS=32 bench/fetch_bench/fetch_bench.sh
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
PROVIDERS=64
FILES_PER_PROVIDER=16
BASE=$((20000 + RANDOM % 20000))
WEB=$BASE; SRC=$((BASE + 1)); ROB=$((BASE + 2)); HTTP=$((BASE + 3))
SCR=$(mktemp -d "${TMPDIR:-/tmp}/lcc-fetch-bench-XXXXXX")
chmod 755 "$SCR"
NGINX_PID=""; LCCD_PID=""
cleanup() {
  [ -n "$LCCD_PID" ] && kill "$LCCD_PID" 2>/dev/null || true
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$SCR"
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

# --- the URL list: N fetches cycling over providers first (like a politeness-limited QM) ---
: > "$SCR/urls.txt"
for f in $(seq 1 $FILES_PER_PROVIDER); do
  for p in $(seq -w 0 $((PROVIDERS - 1))); do echo "http://127.0.0.1:$WEB/p$p/f$f.html"; done
done >> "$SCR/urls.txt"
awk -v n="$N" '{u[NR]=$0} END {for (i = 0; i < n; i++) print u[i % NR + 1]}' "$SCR/urls.txt" > "$SCR/urls_n.txt"
awk -v out="$SCR/curl_out" '{d=int((NR-1)/256); printf "url = \"%s\"\noutput = \"%s/%02x/%02x/%x\"\n", $0, out, int(d/256)%256, d%256, NR-1}' \
  "$SCR/urls_n.txt" > "$SCR/curl.cfg"

now() { date +%s.%N; }
curl_rates=(); lcc_rates=()
for run in $(seq 1 "$RUNS"); do
  # --- curl --parallel, one file per URL ---
  rm -rf "$SCR/curl_out"; sync
  t0=$(now)
  curl -s --no-progress-meter --parallel --parallel-max 64 --create-dirs -K "$SCR/curl.cfg"
  t1=$(now)
  got=$(find "$SCR/curl_out" -type f | wc -l)
  rate=$(echo "$N / ($t1 - $t0)" | bc -l)
  curl_rates+=("$rate")
  printf 'run %d curl  files=%d seconds=%.3f rate=%.0f/s\n' "$run" "$got" "$(echo "$t1 - $t0" | bc -l)" "$rate"

  # --- lccd: BOT-M + robots + fetch-curl, driven by fetch_bench as the url source ---
  rm -rf "$SCR/lcc"; mkdir -p "$SCR/lcc"; sync
  cat > "$SCR/lcc.yaml" <<YAML
node: {data_dir: $SCR/lcc, machine_id: m1}
roles: [botm, bot]
threads: 2
listen: {botm: 127.0.0.1:$SRC, robots: 127.0.0.1:$ROB, http: 127.0.0.1:$HTTP}
log: {level: warn}
storage: {plugin_dir: $BUILD/plugins, queue: storage-memory, content: storage-memory, providers: storage-memory}
fetcher: {plugin: fetch-curl, options: {allow_private: true, max_connections: 256, io_threads: $IO_THREADS}}
bot: {robots: $ROBOTS, slots: $SLOTS}
botm: {reconnect_min: 10ms, reconnect_max: 100ms}
YAML
  "$BUILD/bin/fetch_bench" --listen "127.0.0.1:$SRC" --urls "$SCR/urls_n.txt" --count "$N" > "$SCR/lcc_result.txt" &
  BENCH_PID=$!
  sleep 0.2
  "$BUILD/bin/lccd" -c "$SCR/lcc.yaml" 2> "$SCR/lccd.log" &
  LCCD_PID=$!
  wait "$BENCH_PID" || { echo "fetch_bench failed:"; cat "$SCR/lcc_result.txt" "$SCR/lccd.log" | tail -20; exit 1; }
  kill -TERM "$LCCD_PID"; wait "$LCCD_PID" || true; LCCD_PID=""
  line=$(cat "$SCR/lcc_result.txt")
  files=$(find "$SCR/lcc/content" -type f | wc -l)
  rate=$(echo "$line" | sed -n 's/.*rate=\([0-9.]*\).*/\1/p')
  lcc_rates+=("$rate")
  echo "run $run $line files=$files"
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cm=$(median "${curl_rates[@]}"); lm=$(median "${lcc_rates[@]}")
printf 'median curl --parallel-max 64: %.0f files/s; lcc (robots=%d x slots=%d): %.0f files/s; ratio %.2f\n' \
  "$cm" "$ROBOTS" "$SLOTS" "$lm" "$(echo "$lm / $cm" | bc -l)"
