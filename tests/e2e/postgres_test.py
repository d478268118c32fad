#!/usr/bin/env python3
"""lccd with all three stores on PostgreSQL (storage-postgres).

The private server of the ctest fixture lcc_pg_server (LCC_TEST_PG_CONNINFO) holds the
queue, the LCC DB and the PIDB in a schema of this test. A provider is added, a full
set sent with `lcc cp send`, every URL fetched from a local site, and the export of
`lcc cu query --format tar.gz` must equal the site. SIGTERM leaves the three stores
clean_shutdown=1 in lcc_store; a restart keeps the content; the rows are in the
server's tables (read with psql). Exit 77 (skipped) when there is no server.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, e2e_args, run_guarded, site_files, tar_contents, wait_for  # noqa: E402
from pipeline_test import Site, fixture_pg_conninfo  # noqa: E402
import tempfile  # noqa: E402


def psql(conninfo, sql):
    r = subprocess.run(["psql", "-X", "-A", "-t", "-q", conninfo, "-c", sql], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().strip()


def run(lcc, site, work, conninfo, schema):
    for i in range(12):
        site.write(f"docs/page{i:02d}.html", (f"<html><body>page {i}</body></html>\n" * (i + 1)).encode())
    site.write("docs/notes.txt", b"plain text notes\n")
    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    assert psql(conninfo, f"SELECT count(*) FROM {schema}.providers") == "1", "the PIDB is not on the server"

    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    assert scan.count(b"<url") == 13, scan[:500]
    sent = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                   "--full", "-", stdin=scan)
    assert b"accepted" in sent.stdout.lower(), sent.stdout

    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    wait_for("all 13 URLs stored", lambda: int(lcc.query_xml().getAttribute("count")) == 13)
    got = tar_contents(lcc.query_tar("--provider", pid))
    assert got == expected, f"export differs: {sorted(set(got) ^ set(expected))}"
    assert psql(conninfo, f"SELECT count(*) FROM {schema}.lcc WHERE deleted = 0") == "13"
    wait_for("the queue drained", lambda: psql(conninfo, f"SELECT count(*) FROM {schema}.qdb") == "0")

    lcc.stop()
    flags = psql(conninfo, f"SELECT store || '=' || value FROM {schema}.lcc_store WHERE name = 'clean_shutdown' "
                           "ORDER BY store").split()
    assert flags == ["content=1", "providers=1", "queue=1"], flags
    lcc.start()
    assert tar_contents(lcc.query_tar("--provider", pid)) == expected, "restart lost content"
    lcc.stop()


def main():
    args = e2e_args()
    conninfo = fixture_pg_conninfo()
    schema = f"lcc_e2e_{os.getpid()}"
    work = tempfile.mkdtemp(prefix="lcc-postgres-")
    site = Site(os.path.join(work, "site"))
    lcc = Node(args, work)
    store = f"{{plugin: storage-postgres, options: {{conninfo: '{conninfo}', schema: {schema}}}}}"
    with open(lcc.config) as f:
        text = f.read()
    text = text.replace(f"storage:\n  plugin_dir: {args.plugins}\n",
                        f"storage:\n  plugin_dir: {args.plugins}\n  queue: {store}\n  content: {store}\n"
                        f"  providers: {store}\n")
    with open(lcc.config, "w") as f:
        f.write(text)
    run_guarded(lcc, site, work, lambda: run(lcc, site, work, conninfo, schema))
    print("e2e postgres: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
