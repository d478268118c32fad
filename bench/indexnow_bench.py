#!/usr/bin/env python3
"""indexnow_bench — the IndexNow receiver's rate against the CP protocol's, one run.

A real lccd with the roles uns, qm, cu and rs (no BOT-M: nothing is fetched, so what is
measured is the way in: parse, key check, owner lookup, and the set made durable) and
a provider whose site serves its key file on 127.0.0.1. Then, alternating so that both
see the same machine:
  - IndexNow: POST /indexnow with 10,000 URLs (curl-like client: Python's http.client
    on one keep-alive connection), timed from the first byte sent to the 202;
  - baseline: the same 10,000 URLs as one partial set through `lcc cp send` (a fresh
    CP session each: connect, init, set, set_accepted), timed around the command.
Prints lists/s and URLs/s of each, the p50/p99 latency to 202, the ratio, and lccd's
VmHWM. Not a ctest test (docs/benchmarks.md has the figures and the command):

  python3 bench/indexnow_bench.py --bin build/bin --plugins build/plugins --rounds 20
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from pipeline_test import Node, Site, run_guarded  # noqa: E402

KEY = "bench-key-0123456789"
URLS = 10_000


def vm_hwm_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def run(node, site, args):
    site.write(f"{KEY}.txt", KEY.encode())
    node.start()
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    pid, password = out.strip().split()[0][3:], out.strip().split()[1][9:]
    conn = http.client.HTTPConnection("127.0.0.1", node.ports["http"], timeout=120)
    index_times, cp_times = [], []
    for r in range(args.rounds):
        urls = [f"{site.base}r{r}/page{i:05d}.html" for i in range(URLS)]
        body = json.dumps({"host": "127.0.0.1", "key": KEY, "urlList": urls}).encode()
        t0 = time.perf_counter()
        conn.request("POST", "/indexnow", body, {"Content-Type": "application/json; charset=utf-8"})
        resp = conn.getresponse()
        resp.read()
        index_times.append(time.perf_counter() - t0)
        assert resp.status == 202, resp.status
        lines = "".join(f'<url c="{site.base}c{r}/page{i:05d}.html" m="text/html"/>\n' for i in range(URLS))
        t0 = time.perf_counter()
        p = subprocess.run([os.path.join(args.bin, "lcc"), "cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}",
                            "--id", pid, "--password", password, "-"], input=lines.encode(), capture_output=True,
                           timeout=120)
        cp_times.append(time.perf_counter() - t0)
        assert p.returncode == 0, p.stdout.decode() + p.stderr.decode()
    hwm = vm_hwm_kib(node.proc.pid)
    i_rate, c_rate = len(index_times) / sum(index_times), len(cp_times) / sum(cp_times)
    print(f"indexnow: {args.rounds} POSTs of {URLS} URLs: {i_rate:.1f} lists/s, {i_rate * URLS:,.0f} URLs/s, "
          f"latency to 202 p50 {statistics.median(index_times) * 1000:.1f} ms, p99 {pct(index_times, 99) * 1000:.1f} ms")
    print(f"baseline: {args.rounds} lcc cp send sets of {URLS} URLs: {c_rate:.1f} sets/s, {c_rate * URLS:,.0f} URLs/s, "
          f"p50 {statistics.median(cp_times) * 1000:.1f} ms")
    print(f"ratio indexnow/cp: {i_rate / c_rate:.2f}; lccd VmHWM {hwm / 1024:.1f} MiB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-indexnow-bench-")
    site = Site(os.path.join(work, "site"))
    node = Node(args, work, roles=["uns", "qm", "cu", "rs"], extra="indexnow:\n  requests_per_minute: 0\n")
    run_guarded(node, site, work, lambda: run(node, site, args))


if __name__ == "__main__":
    sys.exit(main())
