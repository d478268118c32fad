#!/usr/bin/env python3
"""front_move_bench — what a slot move costs beside taking the same URLs in, in one run
(issue 31 §2; core/front/README.md, "Moving a slot").

A front end (front.slots 64: each provider of the bench has a slot of its own) and two
sub-LCCs (real lccd, roles uns, qm, botm, bot, cu; the front end's directory on the
PostgreSQL of LCC_TEST_PG_CONNINFO, e.g. tests/storage_postgres/pg_server.sh). Each
round adds a provider with N small pages on a local site and times, through the front
end, (1) the baseline: `lcc cp send` of its N URLs until the holding sub-LCC stored them
all, then (2) `lcc front move-slot` of its slot to the other sub-LCC (the call: freeze
… resume, with the export and the import of N URLs and, since the bytes are copied,
the wait until the target took every copy from the source) and (3) from the move's
start until the target stored all N again (before the copy: it fetched them again
from the site; now: its robots read them from the source's GET /cu/content/). Prints the lists, the
medians and the median of per-round ratios (move call / baseline, move until stored /
baseline). Not a ctest test (docs/benchmarks.md has the figures and the command):

  LCC_TEST_PG_CONNINFO="host=/tmp/pg port=5432 user=postgres dbname=postgres" \\
    python3 bench/front_move_bench.py --bin build/bin --plugins build/plugins --urls 1000 --rounds 5
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import front_test as ft  # noqa: E402
from front_move_test import live, write_pages  # noqa: E402
from pipeline_test import Node, run_nodes_guarded, wait_for  # noqa: E402


def one_round(args, site, front, subs, i):
    sub = f"m{i}"
    write_pages(site, sub, [f"p{k}" for k in range(args.urls)], size=200)
    pid, pw = ft.add(front, f"{site.base}{sub}/")
    row = {str(r["id"]): r for r in ft.admin(front, "GET", "/admin/providers")["providers"]}[pid]
    src, dst = (subs["a"], subs["b"]) if row["lcc"] == "a" else (subs["b"], subs["a"])
    prefix = f"{site.base}{sub}/"
    scan = front.lcc("cp", "scan", os.path.join(site.root, sub), "--base-url", prefix).stdout
    t0 = time.time()
    ft.send(front, pid, pw, scan)
    wait_for("stored at the source", lambda: len(live(src, prefix)) == args.urls, timeout=600)
    ingest = time.time() - t0
    t0 = time.time()
    out = front.lcc("front", "move-slot", str(row["slot"]), "--to", dst.name).stdout.decode()
    call = time.time() - t0
    assert "1 provider(s) moved" in out, out
    wait_for("stored at the target", lambda: len(live(dst, prefix)) == args.urls, timeout=600)
    stored = time.time() - t0
    return ingest, call, stored


def run(args, site, front, a, b):
    a.start()
    b.start()
    front.start()
    wait_for("both sub-LCCs live", lambda: all(x["live"] for x in front.status()["front"]["lccs"]))
    rows = [one_round(args, site, front, {"a": a, "b": b}, i) for i in range(args.rounds)]
    ingest, call, stored = ([r[k] for r in rows] for k in range(3))
    print(f"{args.urls} URLs per provider, {args.rounds} rounds")
    print("baseline, sent until stored (s):", [round(x, 2) for x in ingest])
    print("move-slot call (s):             ", [round(x, 2) for x in call])
    print("move until stored again (s):    ", [round(x, 2) for x in stored])
    print(f"medians: baseline {statistics.median(ingest):.2f} s, call {statistics.median(call):.2f} s, "
          f"until stored {statistics.median(stored):.2f} s; median of per-round ratios: call "
          f"{statistics.median(c / b for c, b in zip(call, ingest)):.2f}, until stored "
          f"{statistics.median(s / b for s, b in zip(stored, ingest)):.2f}")
    print(json.dumps({"ingest": ingest, "call": call, "stored": stored}))


def main():
    args, conninfo, work, site, a, b = ft.bench_setup("front-move-bench", 1000, 5)
    key = os.urandom(32).hex() + "\n"  # one auth.key: the providers' password hashes move
    for n in (a, b):
        os.makedirs(os.path.join(n.work, "var"), exist_ok=True)
        path = os.path.join(n.work, "var", "auth.key")
        with open(path, "w") as f:
            f.write(key)
        os.chmod(path, 0o600)
    config = ft.front_config(conninfo, f"lcc_front_mbench_{os.getpid()}", [("a", a), ("b", b)])
    config = config.replace("  lccs:\n", "  slots: 64\n  lccs:\n", 1)
    front = Node(args, work, "front", "mF", ["front"], config)
    run_nodes_guarded([front, a, b], [site], work, lambda: run(args, site, front, a, b))


if __name__ == "__main__":
    main()
