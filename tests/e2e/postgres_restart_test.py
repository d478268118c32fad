#!/usr/bin/env python3
"""lccd on PostgreSQL while the server goes down and comes back (issue 27 §3, store part).

A PostgreSQL of this test's own (tests/storage_postgres/pg_server.sh, so the fixture's
shared server is not disturbed) holds all three stores; the conninfo names a host that
is never there first (libpq's multi-host form). A provider sends a full set and it is
stored; the server is stopped for a few seconds (lccd keeps running: its store calls
are "busy, try later"), then started again, and `pg_ctl restart -m fast` cuts every
connection once more. Then: no cache-crash in the QM's status, a second full set is
accepted and stored, and the export equals the site (nothing acknowledged lost).
Exit 77 (skipped) without server binaries.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, e2e_args, run_guarded, site_files, tar_contents, wait_for  # noqa: E402
from pipeline_test import Site  # noqa: E402

PG_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "storage_postgres", "pg_server.sh")


def pg(cmd, directory):
    r = subprocess.run([PG_SERVER, cmd, directory], capture_output=True, timeout=120)
    assert r.returncode == 0, f"pg_server.sh {cmd}: {r.stderr.decode()}"
    return r.stdout.decode().strip()


def send_full_set(lcc, site, pid, password, count):
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    assert scan.count(b"<url") == count, scan[:500]
    sent = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                   "--full", "-", stdin=scan)
    assert b"accepted" in sent.stdout.lower(), sent.stdout
    wait_for(f"all {count} URLs stored", lambda: int(lcc.query_xml().getAttribute("count")) == count)


def run(lcc, site, pgdir):
    for i in range(6):
        site.write(f"docs/page{i:02d}.html", (f"<html><body>page {i}</body></html>\n" * (i + 1)).encode())
    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    send_full_set(lcc, site, pid, password, 6)

    pg("halt", pgdir)
    down_until = time.monotonic() + 5  # the QM's periodic work runs meanwhile
    while time.monotonic() < down_until:
        lcc.lcc("cu", "query", "--cu", f"127.0.0.1:{lcc.ports['cu']}", "--format", "xml", check=False)
        time.sleep(0.5)
    pg("restart", pgdir)  # up again
    pg("restart", pgdir)  # and every connection cut once more

    for i in range(6, 10):
        site.write(f"docs/page{i:02d}.html", f"<html><body>later page {i}</body></html>\n".encode())
    send_full_set(lcc, site, pid, password, 10)
    qm = lcc.status().get("qm", {})
    assert qm.get("cache_crash") is False, f"cache-crash after a server restart: {qm}\n{lcc.log_tail()}"
    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    got = tar_contents(lcc.query_tar("--provider", pid))
    assert got == expected, f"export differs: {sorted(set(got) ^ set(expected))}"
    lcc.stop()


def main():
    args = e2e_args()
    if os.environ.get("LCC_TEST_PG_MISSING"):
        print("skipped:", os.environ["LCC_TEST_PG_MISSING"])
        sys.exit(77)
    work = tempfile.mkdtemp(prefix="lcc-pgrestart-")
    pgdir = f"/tmp/lcc-pgrestart-{os.getpid()}"
    conninfo = pg("start", pgdir)
    assert conninfo.startswith(f"host={pgdir} "), conninfo
    conninfo = f"host={work}/absent,{pgdir} " + conninfo[len(f"host={pgdir} "):]
    try:
        site = Site(os.path.join(work, "site"))
        lcc = Node(args, work)
        store = f"{{plugin: storage-postgres, options: {{conninfo: '{conninfo}', schema: lcc_restart}}}}"
        with open(lcc.config) as f:
            text = f.read()
        text = text.replace(f"storage:\n  plugin_dir: {args.plugins}\n",
                            f"storage:\n  plugin_dir: {args.plugins}\n  queue: {store}\n  content: {store}\n"
                            f"  providers: {store}\n")
        with open(lcc.config, "w") as f:
            f.write(text)
        run_guarded(lcc, site, work, lambda: run(lcc, site, pgdir))
    finally:
        subprocess.run([PG_SERVER, "stop", pgdir], capture_output=True, timeout=120)
    print("e2e postgres restart: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
