#!/usr/bin/env python3
"""CU export of content that lives on another machine, beside the same export from local files.

Baseline, in the same run: one all-roles lccd holding N files of SIZE bytes answers
`lcc cu query` (tar.gz, and xml with content) from its own files. Then the same site is
fetched by a three-node LCC on 127.0.0.1 (qm+uns+cu+rs on machine mA, a parent BOT-M, a
leaf BOT-M with robots on machine mB), so every record's content is read by the CU on mA
from mB's `GET /content/<file>`. Best of 3 per format; the ratio is remote / local.

    [HEAD=16KiB] python3 bench/remote_read_bench/remote_read_bench.py build/bin build/plugins [N] [SIZE]

Formats: tar.gz, xml with content, warc.gz. HEAD sets bot.max_response_head of the
robots (0: no response-head side files, so warc.gz has resource records and
GET /content/ sends no X-LCC-Response-Head).

Uses the real processes and helpers of tests/e2e (pipeline_test.py).
Results go to docs/benchmarks.md ("remote_read_bench").
"""
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "e2e"))
from pipeline_test import Node, Site, wait_for  # noqa: E402


class Args:
    def __init__(self, bin_dir, plugin_dir):
        self.bin = os.path.abspath(bin_dir)
        self.plugins = os.path.abspath(plugin_dir)


def fill(site, n, size):
    for i in range(n):
        site.write(f"d{i % 50:02d}/f{i:05d}.txt", (f"line {i} " * (size // 8 + 1))[:size].encode())


def load(node, site, n):
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    pid, password = re.fullmatch(r"id=(\d+) password=(\S+)\n", out).groups()
    scan = node.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password,
             "--full", "-", stdin=scan)
    wait_for("every file stored", lambda: f'count="{n}"'.encode() in node.query_xml_bytes(), timeout=600)


def fastest_of_3(run):
    """The shortest of three timed calls of run(), in seconds."""
    best = float("inf")
    for _ in range(3):
        t0 = time.monotonic()
        run()
        best = min(best, time.monotonic() - t0)
    return best


def best_of_3(node, fmt, extra):
    out = os.path.join(node.work, "answer.out")
    return fastest_of_3(lambda: node.lcc("cu", "query", "--cu", f"127.0.0.1:{node.ports['cu']}", "--format", fmt,
                                         *extra, "-o", out))


def command_line(usage, default_n):
    """(Args, N, SIZE) from `BIN PLUGINS [N] [SIZE]`; exits with `usage` without them."""
    if len(sys.argv) < 3:
        sys.exit(usage)
    n = int(sys.argv[3]) if len(sys.argv) > 3 else default_n
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
    return Args(sys.argv[1], sys.argv[2]), n, size


def main():
    args, n, size = command_line(__doc__, 3000)
    formats = (("tar.gz", ()), ("xml", ("--content",)), ("warc.gz", ()))
    bot = f"bot:\n  max_response_head: {os.environ.get('HEAD', '16KiB')}\n"
    work = tempfile.mkdtemp(prefix="lcc-remote-bench-")
    site = Site(os.path.join(work, "site"))
    nodes = []
    try:
        fill(site, n, size)
        one = Node(args, work, "one", "m1", ["uns", "qm", "botm", "bot", "cu", "rs"], bot)
        nodes.append(one)
        one.start()
        load(one, site, n)
        local = {fmt: best_of_3(one, fmt, extra) for fmt, extra in formats}
        one.stop()
        a = Node(args, work, "a", "mA", ["uns", "qm", "cu", "rs"])
        p = Node(args, work, "p", "mA", ["botm"], f"botm:\n  parent: true\n  source: 127.0.0.1:{a.ports['botm']}\n")
        b = Node(args, work, "b", "mB", ["botm", "bot"], f"botm:\n  source: 127.0.0.1:{p.ports['botm']}\n" + bot)
        nodes += [a, p, b]
        for node in (a, p, b):
            node.start()
        wait_for("mB's content URL", lambda: "mB" in a.status().get("cu", {}).get("content_urls", {}))
        load(a, site, n)
        for fmt, extra in formats:
            remote = best_of_3(a, fmt, extra)
            print(f"{fmt:7s} {n} records x {size} B: local {n / local[fmt]:.0f} rec/s "
                  f"({n * size / local[fmt] / 1e6:.1f} MB/s), remote {n / remote:.0f} rec/s "
                  f"({n * size / remote / 1e6:.1f} MB/s); remote/local {local[fmt] / remote:.2f}")
        for node in (a, p, b):
            node.stop()
    finally:
        for node in nodes:
            node.kill()
        site.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
