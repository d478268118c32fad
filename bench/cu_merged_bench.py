#!/usr/bin/env python3
"""A merged CU answer with content (cu.peers) beside one LCC's answer, in the same run.

Two all-roles lccd on 127.0.0.1, A and B, each holding N files of SIZE bytes from its
own site; A has cu.peers = [B]. Baseline: A's own answer (`peers=no`, N records from
its files). Merged: A's answer for both (2N records; B's content read from B's
GET /cu/content/<store>/<seq>, one kept connection, cu.remote_pipeline requests ahead).
Both over GET /cu/query on A's HTTP port, read to the end; best of 3 per format;
records/s, the ratio merged / own, A's peak RSS (VmHWM) and the load average.

    python3 bench/cu_merged_bench.py build/bin build/plugins [N] [SIZE]

Uses the real processes and helpers of tests/e2e (pipeline_test.py).
Results go to docs/benchmarks.md ("cu_merged_bench").
"""
import os
import shutil
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "remote_read_bench"))
from pipeline_test import Node, Site  # noqa: E402
from remote_read_bench import command_line, fastest_of_3, fill, load  # noqa: E402


def best_of_3(node, params):
    url = f"http://127.0.0.1:{node.ports['http']}/cu/query?{params}"

    def read_all():
        with urllib.request.urlopen(url, timeout=600) as r:
            while r.read(1 << 20):
                pass
            assert r.headers["X-LCC-Peers-Unreachable"] in (None, "0"), r.headers
    return fastest_of_3(read_all)


def main():
    args, n, size = command_line(__doc__, 2000)
    load0 = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="lcc-merged-bench-")
    sites, nodes = [], []
    try:
        b = Node(args, work, "b", "mB")
        a = Node(args, work, "a", "mA", extra=f"cu:\n  peers: [http://127.0.0.1:{b.ports['http']}]\n")
        for node in (a, b):
            site = Site(os.path.join(work, node.name + "-site"))
            sites.append(site)
            nodes.append(node)
            fill(site, n, size)
            node.start()
            load(node, site, n)
        for fmt, extra in (("xml", ""), ("tar.gz", ""), ("xml", "&content=yes"), ("warc.gz", "")):
            own = best_of_3(a, f"format={fmt}{extra}&peers=no")
            merged = best_of_3(a, f"format={fmt}{extra}")
            print(f"{fmt + extra:19s} x {size} B: own {n / own:.0f} rec/s ({n} records), merged {2 * n / merged:.0f} rec/s "
                  f"({2 * n} records, half from B); merged/own {(2 * n / merged) / (n / own):.2f}")
        with open(f"/proc/{a.proc.pid}/status") as f:
            hwm = next(line.split(":")[1].strip() for line in f if line.startswith("VmHWM"))
        print(f"A's VmHWM {hwm}; load average {os.getloadavg()[0]:.2f} (at start {load0:.2f})")
        for node in nodes:
            node.stop()
    finally:
        for node in nodes:
            node.kill()
        for site in sites:
            site.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
