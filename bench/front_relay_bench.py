#!/usr/bin/env python3
"""front_relay_bench — a CP session through the front end against one straight to the
sub-LCC's UNS, in one run (issue 31 §3; core/front/README.md).

A front end and two sub-LCCs (real lccd, roles uns, qm, botm, bot, cu; the PMDB/FEDB on
the PostgreSQL of LCC_TEST_PG_CONNINFO, e.g. tests/storage_postgres/pg_server.sh) and
one provider placed by `lcc provider add`. Each round sends the same partial set of N
delete notices (nothing is fetched: the way in alone is measured) once straight to the
holding sub-LCC's listen.uns (its own id for the provider) and once through the front
end's (the front end's id), alternating, each timed around `lcc cp send`. Prints both
lists, the medians, their ratio and the median of the per-round ratios. Not a ctest
test (docs/benchmarks.md has the figures and the command):

  LCC_TEST_PG_CONNINFO="host=/tmp/pg port=5432 user=postgres dbname=postgres" \\
    python3 bench/front_relay_bench.py --bin build/bin --plugins build/plugins --urls 50000 --rounds 7
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import front_test as ft  # noqa: E402
from pipeline_test import Node, run_nodes_guarded, wait_for  # noqa: E402


def run(args, site, front, a, b):
    a.start()
    b.start()
    front.start()
    wait_for("both sub-LCCs live", lambda: all(l["live"] for l in front.status()["front"]["lccs"]))
    pid, pw = ft.add(front, f"{site.base}x/")
    row = ft.admin(front, "GET", "/admin/providers")["providers"][0]
    holder = a if row["lcc"] == "a" else b
    urls = "".join(f'<url c="gone/{i}.html" m="text/html" op="delete"/>\n' for i in range(args.urls))
    doc = (f'<lococa:set xmlns:lococa="http://www.lococa.org/1.0" urlprefix="{site.base}x/">\n{urls}'
           "</lococa:set>\n").encode()

    def timed(port, ident):
        t0 = time.time()
        r = front.lcc("cp", "send", "--uns", f"127.0.0.1:{port}", "--id", ident, "--password", pw, "-", stdin=doc)
        assert f"accepted {args.urls} of {args.urls}" in r.stdout.decode(), r.stdout
        return time.time() - t0

    direct, via = [], []
    for _ in range(args.rounds):
        direct.append(timed(holder.ports["uns"], str(row["local_id"])))
        via.append(timed(front.ports["uns"], pid))
    ratios = [v / d for v, d in zip(via, direct)]
    print(f"{args.urls} URLs per set, {args.rounds} rounds")
    print("straight to the sub-LCC (s):", [round(x, 3) for x in direct])
    print("through the front end (s):  ", [round(x, 3) for x in via])
    print(f"medians: straight {statistics.median(direct):.3f} s, through {statistics.median(via):.3f} s, "
          f"ratio {statistics.median(via) / statistics.median(direct):.2f}; "
          f"median of per-round ratios {statistics.median(ratios):.2f}")


def main():
    args, conninfo, work, site, a, b = ft.bench_setup("front-relay-bench", 50000, 7)
    # The front end as in e2e_front, with the default relay buffer and no failed-init limit.
    config = ft.front_config(conninfo, f"lcc_front_bench_{os.getpid()}", [("a", a), ("b", b)])
    config = config.replace("  relay_buffer: 16KiB\n", "").replace("auth_failures_per_minute: 4", "auth_failures_per_minute: 0")
    front = Node(args, work, "front", "mF", ["front"], config)
    run_nodes_guarded([front, a, b], [site], work, lambda: run(args, site, front, a, b))


if __name__ == "__main__":
    main()
