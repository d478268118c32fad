#!/usr/bin/env python3
"""Many LCCs as one (issue 31 §3, design §12): a front end and two sub-LCCs, real lccd
processes on 127.0.0.1; the PMDB/FEDB on the private PostgreSQL of the ctest fixture
lcc_pg_server (LCC_TEST_PG_CONNINFO). Exit 77 (skipped) when there is no server.

- `lcc provider add` x4 on the front end spreads the providers 2 and 2 (least loaded);
- `lcc cp send` through the front end's CP port lands each set in the sub-LCC holding
  the provider (its CU exports the URLs) and never in the other;
- the same over the TLS CP port; a set of 50,000 URLs through a 16 KiB relay buffer;
- an unknown provider gets 110; a sub-LCC down gives 130 (try later), and once it is
  back the resend is accepted;
- an add placed on a sub-LCC that is down leaves a pending row, which is cleaned;
- a hostile first message (huge, slow, garbage) is refused within bounds;
- failed inits from one address turn it away (120) for the cool-down.
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, Site, e2e_args, fixture_pg_conninfo, free_port, run_nodes_guarded, wait_for  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tls"))
from tls_test import Pki  # noqa: E402

SUB_ROLES = ["uns", "qm", "botm", "bot", "cu"]
# Behind a front end a sub-LCC's UNS sees one address, the front end's: it does not
# count failed inits per address (the front end does, per CP address).
SUB_EXTRA = "uns:\n  auth_failures_per_minute: 0\n"


def bench_setup(name, urls, rounds):
    """A front-end bench's start (bench/front_*_bench.py): its arguments, the PostgreSQL
    of LCC_TEST_PG_CONNINFO, a work folder, a site and two sub-LCCs a and b."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--urls", type=int, default=urls)
    ap.add_argument("--rounds", type=int, default=rounds)
    args = ap.parse_args()
    args.in_process_links = "true"
    conninfo = os.environ.get("LCC_TEST_PG_CONNINFO")
    if not conninfo:
        sys.exit(f"{name}: set LCC_TEST_PG_CONNINFO (a PostgreSQL to hold the front end's PMDB/FEDB)")
    work = tempfile.mkdtemp(prefix=f"lcc-{name}-")
    site = Site(os.path.join(work, "site"))
    a = Node(args, work, "a", "mA", SUB_ROLES, SUB_EXTRA)
    b = Node(args, work, "b", "mB", SUB_ROLES, SUB_EXTRA)
    return args, conninfo, work, site, a, b


def front_config(conninfo, schema, subs):
    # Failed inits are counted per CP address by the front end (the sub-LCCs see only its address).
    lines = ["uns:\n  auth_failures_per_minute: 4\n  auth_cooldown: 2s\n",
             f"front:\n  conninfo: '{conninfo}'\n  schema: {schema}\n  refresh_interval: 300ms\n",
             "  stale_after: 3s\n  pending_grace: 1s\n  connect_timeout: 1s\n  init_timeout: 2s\n",
             "  init_max_bytes: 4KiB\n  cache_ttl: 1s\n",
             "  relay_buffer: 16KiB\n  lccs:\n"]  # small: a large set makes both sides wait
    for name, n in subs:
        token = os.path.join(n.work, "var", "admin.token")
        lines.append(f"    - '{name} uns=127.0.0.1:{n.ports['uns']} admin=127.0.0.1:{n.ports['http']} "
                     f"cu=127.0.0.1:{n.ports['cu']} token_file={token}'\n")
    return "".join(lines)


def admin(node, method, path):
    with open(os.path.join(node.work, "var", "admin.token")) as f:
        token = f.read().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{node.ports['http']}{path}", method=method,
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def add(front, prefix):
    out = front.lcc("provider", "add", "--prefix", prefix).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    return m.group(1), m.group(2)


def send(front, pid, password, scan, check=True):
    return front.lcc("cp", "send", "--uns", f"127.0.0.1:{front.ports['uns']}", "--id", pid, "--password", password,
                     "-", stdin=scan, check=check)


def stored(node, prefix):
    xml = node.query_xml_bytes().decode()
    return sorted(set(re.findall(r'c="(' + re.escape(prefix) + r'[^"]*)"', xml)))


def raw_session(port, payload, wait_s):
    """Sends payload to the CP port and reads until the front end closes; (answer, seconds)."""
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", port), timeout=wait_s)
    try:
        if payload:
            try:
                s.sendall(payload)
            except OSError:
                pass
        got = b""
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            got += chunk
        return got, time.time() - t0
    finally:
        s.close()


def run(conninfo, site, front, a, b):
    for sub in ("p1", "p2", "p3", "p4", "p5"):
        for i in range(3):
            site.write(f"{sub}/page{i}.html", f"<html><body>{sub} page {i}</body></html>\n".encode())
    a.start()
    b.start()
    front.start()
    wait_for("both sub-LCCs live", lambda: all(l["live"] for l in front.status()["front"]["lccs"]))

    # Placement: least loaded, ties by name: a, b, a, b.
    providers = {}
    for sub in ("p1", "p2", "p3", "p4"):
        providers[sub] = add(front, f"{site.base}{sub}/")
    rows = {str(r["id"]): r for r in admin(front, "GET", "/admin/providers")["providers"]}
    placed = {sub: rows[pid]["lcc"] for sub, (pid, _) in providers.items()}
    assert placed == {"p1": "a", "p2": "b", "p3": "a", "p4": "b"}, placed
    assert all(r["state"] == "placed" for r in rows.values()), rows
    assert len(admin(a, "GET", "/admin/providers")["providers"]) == 2
    assert len(admin(b, "GET", "/admin/providers")["providers"]) == 2
    # Other provider commands are forwarded: `show` on the front end answers with its id.
    shown = json.loads(front.lcc("provider", "show", providers["p2"][0]).stdout)
    assert str(shown["id"]) == providers["p2"][0] and shown["lcc"] == "b", shown

    # Sets through the front end land where the provider is, and only there.
    for sub in ("p1", "p2"):
        pid, pw = providers[sub]
        scan = front.lcc("cp", "scan", os.path.join(site.root, sub), "--base-url", f"{site.base}{sub}/").stdout
        out = send(front, pid, pw, scan).stdout.decode()
        assert "accepted 3 of 3" in out.lower(), out
    for sub, holder, other in (("p1", a, b), ("p2", b, a)):
        prefix = f"{site.base}{sub}/"
        wait_for(f"{sub}'s 3 URLs stored on {holder.name}", lambda: len(stored(holder, prefix)) == 3, timeout=30)
        assert stored(other, prefix) == [], f"{sub} reached {other.name}"

    # Unknown provider: the protocol's own answer.
    r = send(front, "999", "x", b"", check=False)
    assert r.returncode == 1 and "init rejected 110" in r.stdout.decode(), r.stdout

    over_tls(front, providers, site)
    large_set(front, a, providers, site)
    unreachable_sub_lcc(front, b, providers, site)
    pending_row_cleaned(front, a, b, site)
    hostile(front)
    throttled(front, providers, site)
    front.status()  # still up


def throttled(front, providers, site):
    """Failed inits from one address: 110 until the 4th in a minute (the unknown provider
    above was the 1st), then 120 for every init of the address, even a right one, for
    the cool-down; the sub-LCC's 110s count although it answers them."""
    pid, pw = providers["p1"]
    for _ in range(3):
        r = send(front, pid, pw + "x", b"", check=False)
        assert "init rejected 110" in r.stdout.decode(), r.stdout
    r = send(front, pid, pw, b"", check=False)
    assert "init rejected 120" in r.stdout.decode() and "failed authentications" in r.stdout.decode(), r.stdout
    time.sleep(2.2)
    scan = front.lcc("cp", "scan", os.path.join(site.root, "p1"), "--base-url", f"{site.base}p1/").stdout
    out = send(front, pid, pw, scan).stdout.decode()
    assert "accepted 3 of 3" in out.lower(), out


def over_tls(front, providers, site):
    """The front end's TLS CP port (listen.uns_tls) relays as its plain one does."""
    pid, pw = providers["p3"]
    scan = front.lcc("cp", "scan", os.path.join(site.root, "p3"), "--base-url", f"{site.base}p3/").stdout
    r = front.lcc("cp", "send", "--uns", f"localhost:{front.ports['uns_tls']}", "--tls", "--ca", front.pki.ca,
                  "--id", pid, "--password", pw, "-", stdin=scan)
    assert "accepted 3 of 3" in r.stdout.decode().lower(), r.stdout


def large_set(front, a, providers, site):
    """50,000 deletes (about 4 MB) through a 16 KiB relay buffer: every one taken."""
    pid, pw = providers["p1"]
    urls = "".join(f'<url c="gone/{i}.html" m="text/html" op="delete"/>\n' for i in range(50_000))
    doc = (f'<lococa:set xmlns:lococa="http://www.lococa.org/1.0" urlprefix="{site.base}p1/">\n{urls}'
           "</lococa:set>\n").encode()
    out = send(front, pid, pw, doc).stdout.decode()
    assert "accepted 50000 of 50000" in out.lower(), out


def unreachable_sub_lcc(front, b, providers, site):
    pid, pw = providers["p4"]
    scan = front.lcc("cp", "scan", os.path.join(site.root, "p4"), "--base-url", f"{site.base}p4/").stdout
    b.stop()
    t0 = time.time()
    r = send(front, pid, pw, scan, check=False)
    assert r.returncode == 1 and "init rejected 130" in r.stdout.decode(), r.stdout
    assert time.time() - t0 < 10, "try-later took too long"
    b.start()
    out = send(front, pid, pw, scan).stdout.decode()
    assert "accepted 3 of 3" in out.lower(), out
    wait_for("p4 stored on b", lambda: len(stored(b, f"{site.base}p4/")) == 3, timeout=30)


def pending_row_cleaned(front, a, b, site):
    # a holds 2, b 2: one more on a makes b the least loaded; b is then stopped.
    add(front, f"{site.base}p5/")
    wait_for("loads read again", lambda: {l["name"]: l["providers"] for l in front.status()["front"]["lccs"]}
             == {"a": 3, "b": 2})
    b.stop()
    r = front.lcc("provider", "add", "--prefix", f"{site.base}p5/", check=False)
    assert r.returncode != 0 and "pending" in r.stderr.decode(), (r.stdout, r.stderr)
    pending = [p for p in admin(front, "GET", "/admin/providers")["providers"] if p["state"] == "pending"]
    assert len(pending) == 1 and pending[0]["lcc"] == "b", pending
    time.sleep(1.5)  # past front.pending_grace: still kept, b cannot be asked
    assert any(p["state"] == "pending" for p in admin(front, "GET", "/admin/providers")["providers"])
    b.start()
    wait_for("the pending row cleaned", lambda: all(p["state"] == "placed" for p in
                                                    admin(front, "GET", "/admin/providers")["providers"]))
    assert len(admin(b, "GET", "/admin/providers")["providers"]) == 2  # nothing half-made left on b


def hostile(front):
    port = front.ports["uns"]
    head = b'<lococa:init xmlns:lococa="http://www.lococa.org/1.0"><provider id="1" passwd="'
    got, secs = raw_session(port, head + b"a" * 200_000, 10)
    assert b'code="101"' in got and secs < 5, (got[:300], secs)
    got, secs = raw_session(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 10)
    assert b'code="100"' in got and secs < 5, (got[:300], secs)
    got, secs = raw_session(port, head[:30], 10)  # slow: never finishes its init
    assert b'code="133"' in got and 1.5 < secs < 6, (got[:300], secs)


def main():
    args = e2e_args()
    conninfo = fixture_pg_conninfo()
    work = tempfile.mkdtemp(prefix="lcc-front-")
    site = Site(os.path.join(work, "site"))
    a = Node(args, work, "a", "mA", SUB_ROLES, SUB_EXTRA)
    b = Node(args, work, "b", "mB", SUB_ROLES, SUB_EXTRA)
    pki = Pki(os.path.join(work, "pki"))
    cert, key = pki.issue("front", "DNS:localhost")
    front = Node(args, work, "front", "mF", ["front"],
                 front_config(conninfo, f"lcc_front_{os.getpid()}", [("a", a), ("b", b)]) +
                 f"tls:\n  cert_file: {cert}\n  key_file: {key}\n")
    front.pki = pki
    front.ports["uns_tls"] = free_port()
    with open(front.config) as f:
        text = f.read()
    with open(front.config, "w") as f:
        f.write(text.replace("listen:\n", f"listen:\n  uns_tls: 127.0.0.1:{front.ports['uns_tls']}\n", 1))
    run_nodes_guarded([front, a, b], [site], work, lambda: run(conninfo, site, front, a, b))
    print("e2e front: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
