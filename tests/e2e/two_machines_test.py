#!/usr/bin/env python3
"""End-to-end test of content that lives on another machine (issues 6 and 7).

Three real lccd processes on 127.0.0.1 with two machine ids:
  A  (machine mA): qm, uns, cu (and rs) - the central node a content user talks to;
  P  (machine mA): the central BOT-M (botm.parent) connected to A's QM. It runs in
     its own lccd because a QM and a parent BOT-M both listen on listen.botm;
  B  (machine mB): a leaf BOT-M with its robot (bot) and its HTTP port, connected to P.
A site is fetched by B's robot into B's content folder; `lcc cu query --format tar.gz`
on A (and the C API, lcc-cu-example) must return every file with the site's bytes
although none of them is on A:
the CU reads them from B's GET /content/<file>, whose URL B advertised to P and P
passed to A's QM. Then: A restarts and learns the URL again; B stops and its
records become missing="unreadable"; a bad cu.content_urls is refused by --check.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import DEADLINE, Node, Site, run_nodes_guarded, site_files, tar_contents, wait_for  # noqa: E402
from response_heads import stored_head  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e2-")
    site = Site(os.path.join(work, "site"))
    a = Node(args, work, "a", "mA", ["uns", "qm", "cu", "rs"])
    p = Node(args, work, "p", "mA", ["botm"],
             f"botm:\n  parent: true\n  source: 127.0.0.1:{a.ports['botm']}\n"
             "  reconnect_min: 50ms\n  reconnect_max: 500ms\n")
    b = Node(args, work, "b", "mB", ["botm", "bot"],
             f"botm:\n  source: 127.0.0.1:{p.ports['botm']}\n  reconnect_min: 50ms\n  reconnect_max: 500ms\n")
    run_nodes_guarded([a, p, b], site, work, lambda: run(args, work, site, a, p, b), "e2e two machines")


def run(args, work, site, a, p, b):
    for i in range(12):
        site.write(f"docs/page{i:02d}.html", (f"<html><body>page {i} of machine B</body></html>\n" * (i + 3)).encode())
    site.write("docs/data.pdf", os.urandom(300_000))
    site.write("docs/sub/deep.txt", b"deep text\n")

    a.start()
    p.start()
    b.start()
    b_url = f"http://127.0.0.1:{b.ports['http']}"
    wait_for("A's CU knows where mB's content is",
             lambda: a.status().get("cu", {}).get("content_urls", {}).get("mB") == b_url)

    out = a.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    scan = a.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    assert scan.count(b"<url") == 14, scan[:300]
    sent = a.lcc("cp", "send", "--uns", f"127.0.0.1:{a.ports['uns']}", "--id", pid, "--password", password,
                 "--full", "-", stdin=scan)
    assert b"accepted 14 of 14" in sent.stdout.lower(), sent.stdout
    wait_for("all 14 URLs stored", lambda: b'count="14"' in a.query_xml_bytes(), timeout=15)

    # Every record names machine mB: no file is on A.
    a_content = os.path.join(a.work, "var", "content")
    assert not os.path.isdir(a_content) or not any(files for _, _, files in os.walk(a_content)), "content on A"
    b_all = [os.path.join(d, f) for d, _, files in os.walk(os.path.join(b.work, "var", "content")) for f in files]
    b_files = [f for f in b_all if not f.endswith(".http")]
    assert len(b_files) == 14, b_all
    # With each: the robot's response head (its attribute, else a side file beside it).
    assert all(stored_head(f) for f in b_files), [(f, stored_head(f)) for f in b_files]
    assert all(f[:-len(".http")] in b_files for f in b_all if f.endswith(".http")), b_all

    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    got = tar_contents(a.query_tar("--provider", pid))
    assert got == expected, f"export differs: {sorted(set(got) ^ set(expected))}"
    xml = a.query_xml_bytes("--content").decode()
    assert "missing=" not in xml, xml[:2000]
    # warc.gz: content read from B comes with the head B's robot kept (X-LCC-Response-Head),
    # so every URL is a response record (plugins/cu-warc/README.md).
    warc = os.path.join(a.work, "answer.warc.gz")
    a.lcc("cu", "query", "--cu", f"127.0.0.1:{a.ports['cu']}", "--format", "warc.gz", "-o", warc)
    with open(warc, "rb") as f:
        data = f.read()
    types = []
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        types.append(re.search(rb"\r\nWARC-Type: (\w+)\r\n", d.decompress(data)).group(1).decode())
        data = d.unused_data
    assert types == ["warcinfo"] + ["response"] * 14 + ["metadata"], types
    b_served = b.status()["counters"].get("lcc_botm_content_reads_total", 0)
    assert b_served >= 28, f"B served {b_served} content reads"
    # The C API reads content through the CU port: it gets B's bytes the same way.
    r = subprocess.run([os.path.join(args.bin, "lcc-cu-example"), f"127.0.0.1:{a.ports['cu']}"],
                       capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 14, lines
    for line in lines:
        m = re.fullmatch(r"stored   (\S+) \(\S+\) seq \d+, (\d+) bytes", line)
        assert m, line
        assert int(m.group(2)) == len(expected[m.group(1)]), line

    # A restarts: P reconnects and announces mB's URL again; nothing was stored on A.
    a.stop()
    a.start()
    wait_for("the URL learnt again",
             lambda: a.status().get("cu", {}).get("content_urls", {}).get("mB") == b_url)
    assert tar_contents(a.query_tar("--provider", pid)) == expected, "after A's restart"

    # B stops: its content is unreadable (not a crash, not other-machine), and counted.
    b.stop()
    xml = a.query_xml_bytes("--content").decode()
    assert xml.count('missing="unreadable"') == 14, xml[:2000]
    assert a.status()["counters"].get("lcc_cu_content_missing_total", 0) >= 14

    # A static map is checked when the config is loaded.
    bad = os.path.join(work, "bad.yaml")
    with open(a.config) as f, open(bad, "w") as g:
        g.write(f.read() + "cu:\n  content_urls: [mB=ftp://x, nope]\n")
    r = subprocess.run([os.path.join(args.bin, "lccd"), "-c", bad, "--check"], capture_output=True, timeout=DEADLINE)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.decode().count("cu.content_urls") == 2, r.stderr.decode()

    a.stop()
    p.stop()


if __name__ == "__main__":
    main()
