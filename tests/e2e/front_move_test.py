#!/usr/bin/env python3
"""Providers sharded over sub-LCCs by hash slot, and a slot moved (issue 31 §2), with
real lccd processes on 127.0.0.1; the front end's directory on the private PostgreSQL
of the ctest fixture lcc_pg_server (LCC_TEST_PG_CONNINFO). Exit 77 when there is none.

- front.slots 4: a provider goes to its slot's holder; `lcc front slots` lists them;
- provider P (on a) has 5 URLs stored and more still queued (its bandwidth is low), and
  the content file of one stored URL is deleted at a; `lcc front move-slot` moves its
  slot to b, reading a's export 2 URLs a page (front.move_page): every URL stored on a
  is stored on b with the same MD5, its bytes taken from a (the site's request log has
  no request for them), but the one a cannot give, which b fetches from the site; the
  queued ones are fetched at b from the site; a holds nothing of P (tombstones),
  the CP's next set through the front end lands on b, and a mirror that took a merged
  cursor (cu.peers) before the move and continues after ends with exactly the union of
  both stores, each change once;
- provider Q's slot is moved back to a and the front end is killed (-9) mid-move; a
  new front end resumes the move to the same end state;
- provider R's slot is moved to b while b is down: the move stops with R frozen (its CP
  gets 130, `provider set` 409); moving the slot back to a undoes it once b answers;
- another front.slots against the existing directory stops lccd with the reason.
"""
import base64
import functools
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import (Node, QuietHandler, Site, e2e_args, fixture_pg_conninfo, free_port,  # noqa: E402
                           run_nodes_guarded, wait_for)
from cu_peers_test import Mirror, get  # noqa: E402
from front_test import SUB_ROLES, admin, add, front_config, send  # noqa: E402

SUB_EXTRA = "uns:\n  auth_failures_per_minute: 0\nqm:\n  provider_refresh: 500ms\n"


class LoggedSite(Site):
    """Site, keeping the path of every GET it is asked (the site's request log)."""

    def __init__(self, root):  # noqa: super().__init__ would start a server without the log
        self.root = root
        self.port = free_port()
        self.requests = []
        log, lock = self.requests, threading.Lock()

        class Handler(QuietHandler):
            def do_GET(self):
                with lock:
                    log.append(self.path)
                super().do_GET()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port),
                                                      functools.partial(Handler, directory=root))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def asked_since(self, n, prefix):
        """The URLs under prefix asked after the first n requests of the log."""
        return [self.base.rstrip("/") + p for p in self.requests[n:] if (self.base.rstrip("/") + p).startswith(prefix)]


def move_front_config(conninfo, schema, subs):
    """front_test's front end with 4 slots, a drain waited for at most 20 s, and export
    pages of 2 URLs (a move of P reads several)."""
    text = front_config(conninfo, schema, subs)
    return text.replace("  lccs:\n", "  slots: 4\n  move_wait: 20s\n  move_page: 2\n  lccs:\n", 1)


def kept_head(node, url):
    """The response head node keeps for url (GET /cu/content/, X-LCC-Response-Head)."""
    status, headers, root = get(f"http://127.0.0.1:{node.ports['http']}", {"format": "xml", "peers": "no"})
    assert status == 200, root
    seq = [u.getAttribute("seq") for u in root.getElementsByTagName("url") if u.getAttribute("c") == url][0]
    with urllib.request.urlopen(f"http://127.0.0.1:{node.ports['http']}/cu/content/{headers['X-LCC-Source']}/{seq}",
                                timeout=30) as r:
        carried = r.headers.get("X-LCC-Response-Head", "")
    return base64.b64decode(carried).decode("latin-1")


def drop_content(node, marker):
    """Deletes the content file at node whose body holds marker; its path."""
    for root, _, files in os.walk(node.work):
        for name in files:
            path = os.path.join(root, name)
            if os.path.getsize(path) > 64 * 1024:
                continue
            with open(path, "rb") as f:
                if marker in f.read():
                    os.remove(path)
                    return path
    raise AssertionError(f"no content file with {marker!r} at {node.name}")


def own(node, prefix):
    """{url: (md5, deleted)} of node's own store under prefix."""
    status, _, root = get(f"http://127.0.0.1:{node.ports['http']}",
                          {"format": "xml", "deleted": "yes", "peers": "no"})
    assert status == 200, root
    return {u.getAttribute("c"): (u.getAttribute("md5"), u.getAttribute("deleted") == "yes")
            for u in root.getElementsByTagName("url") if u.getAttribute("c").startswith(prefix)}


def live(node, prefix):
    return {u: md5 for u, (md5, deleted) in own(node, prefix).items() if not deleted}


def write_pages(site, sub, names, size=1500):
    for n in names:
        body = f"<html><body>{sub} {n} ".encode() + b"x" * size + b"</body></html>\n"
        site.write(f"{sub}/{n}.html", body)


def send_dir(front, pid, pw, site, sub, state):
    scan = front.lcc("cp", "scan", os.path.join(site.root, sub), "--base-url", f"{site.base}{sub}/",
                     "--state", state).stdout
    out = send(front, pid, pw, scan).stdout.decode()
    assert "accepted" in out.lower(), out


def slots(front):
    return json.loads(front.lcc("front", "slots", "--json").stdout)


def run(site, front, a, b, work):
    a.start()
    b.start()
    front.start()
    wait_for("both sub-LCCs live", lambda: all(x["live"] for x in front.status()["front"]["lccs"]))
    # ids 1..4 fill slots 1, 2, 3, 0 (least loaded: a, b, a, b); P = id 1 (slot 1, on a), Q = id 2 (slot 2, on b).
    provs = [add(front, f"{site.base}{sub}/") for sub in ("p", "q", "r", "s")]
    (pid, ppw), (qid, qpw) = provs[0], provs[1]
    held = {s["slot"]: s["lcc"] for s in slots(front)["held"]}
    assert held == {1: "a", 2: "b", 3: "a", 0: "b"}, held
    r5 = add(front, f"{site.base}t/")  # id 5: slot 1, held by a
    rows = {str(r["id"]): r for r in admin(front, "GET", "/admin/providers")["providers"]}
    assert rows[r5[0]]["lcc"] == "a" and rows[r5[0]]["slot"] == 1, rows[r5[0]]

    p_prefix, q_prefix = f"{site.base}p/", f"{site.base}q/"
    write_pages(site, "p", [f"old{i}" for i in range(5)])
    write_pages(site, "q", [f"old{i}" for i in range(3)])
    send_dir(front, pid, ppw, site, "p", os.path.join(work, "p.scan"))
    send_dir(front, qid, qpw, site, "q", os.path.join(work, "q.scan"))
    wait_for("P's 5 URLs stored on a", lambda: len(live(a, p_prefix)) == 5, timeout=30)
    wait_for("Q's 3 URLs stored on b", lambda: len(live(b, q_prefix)) == 3, timeout=30)
    before_p = live(a, p_prefix)

    mirror = Mirror()
    a_url = f"http://127.0.0.1:{a.ports['http']}"
    mirror.catch_up(a_url, 5)  # a merged cursor (a with cu.peers = [b]) taken before the move

    # More URLs for P, fetched slowly (1000 B/s): most are still queued on a when the move starts.
    front.lcc("provider", "set", pid, "--bandwidth", "1000")
    time.sleep(1.0)  # a's QM takes it at its next provider refresh (qm.provider_refresh: 500ms)
    write_pages(site, "p", [f"new{i}" for i in range(6)])
    send_dir(front, pid, ppw, site, "p", os.path.join(work, "p.scan"))
    wait_for("P's new URLs queued on a", lambda: admin(a, "GET", "/status")["qm"]["queued_urls"] > 0, timeout=10)
    queued_at_move = admin(a, "GET", "/status")["qm"]["queued_urls"]
    gone = f"{p_prefix}old4.html"
    drop_content(a, b"<html><body>p old4 ")  # a cannot give it: b fetches it from the site
    log_at_move = len(site.requests)
    stored_at_move = set(live(a, p_prefix))

    out = front.lcc("front", "move-slot", "1", "--to", "b").stdout.decode()
    assert "2 provider(s) moved" in out, out  # P and id 5
    held = {s["slot"]: (s["lcc"], s["epoch"], s["elsewhere"]) for s in slots(front)["held"]}
    assert held[1] == ("b", 2, 0), held
    rows = {str(r["id"]): r for r in admin(front, "GET", "/admin/providers")["providers"]}
    assert rows[pid]["lcc"] == "b" and rows[pid]["state"] == "placed", rows[pid]

    want = {f"{p_prefix}old{i}.html" for i in range(5)} | {f"{p_prefix}new{i}.html" for i in range(6)}
    wait_for("every URL of P stored on b", lambda: set(live(b, p_prefix)) == want, timeout=60)
    after_p = live(b, p_prefix)
    for url, md5 in before_p.items():
        assert after_p[url] == md5, (url, md5, after_p[url])
    # The bytes came from a: the site was asked for no URL stored at a, but the one a
    # could not give; the queued ones were fetched from the site (by a before its
    # suspension, or by b), each once.
    asked = site.asked_since(log_at_move, p_prefix)
    assert gone in stored_at_move, stored_at_move
    assert [u for u in asked if u in stored_at_move] == [gone], (asked, sorted(stored_at_move))
    assert sorted(set(asked)) == sorted(asked), asked
    assert set(asked) <= (want - stored_at_move) | {gone}, asked
    assert "SimpleHTTP" in kept_head(b, f"{p_prefix}old0.html"), "a copied URL keeps its site's head, not a's answer's"
    pages = re.findall(rf"provider {pid}: (\d+) URL\(s\) \((\d+) with their bytes\) copied from a to b in (\d+) page",
                       open(front.log).read())
    assert pages and int(pages[-1][0]) == 11 and int(pages[-1][1]) >= 5 and int(pages[-1][2]) >= 6, pages
    wait_for("a holds nothing of P", lambda: live(a, p_prefix) == {}, timeout=30)
    # (the removal of id 5, moved right after P, ends at a's next provider refresh)
    wait_for("a keeps only id 3", lambda: len(admin(a, "GET", "/admin/providers")["providers"]) == 1, timeout=10)
    shown = json.loads(front.lcc("provider", "show", pid).stdout)
    assert shown["state"] == "active" and shown["bandwidth"] == 1000, shown

    # The CP's next set goes through the front end to b, with the same password.
    write_pages(site, "p", ["later"], size=10)
    front.lcc("provider", "set", pid, "--bandwidth", "0")
    send_dir(front, pid, ppw, site, "p", os.path.join(work, "p.scan"))
    wait_for("P's later URL stored on b", lambda: f"{p_prefix}later.html" in live(b, p_prefix), timeout=30)
    assert f"{p_prefix}later.html" not in own(a, p_prefix)

    # The mirror continues its cursor: the union, each change once (Mirror asserts it).
    mirror.catch_up(a_url, 5)
    want_union = {}
    for node in (a, b):
        status, headers, root = get(f"http://127.0.0.1:{node.ports['http']}",
                                    {"format": "xml", "deleted": "yes", "peers": "no"})
        for u in root.getElementsByTagName("url"):
            want_union[(headers["X-LCC-Source"], u.getAttribute("c"))] = (int(u.getAttribute("seq")),
                                                                         u.getAttribute("deleted") == "yes")
    assert mirror.recs == want_union, sorted(set(mirror.recs.items()) ^ set(want_union.items()))[:10]
    print(f"moved P with {queued_at_move} URL(s) queued at the move")
    killed_mid_move(site, front, a, b, qid, qpw, q_prefix)
    undone(site, front, a, b, provs[2], work)
    slots_fixed(front)


def killed_mid_move(site, front, a, b, qid, qpw, q_prefix):
    """Q's slot (2) to a; the front end is killed -9 while the move runs; a new one resumes it."""
    before_q = live(b, q_prefix)
    front.lcc("provider", "set", qid, "--bandwidth", "300")
    time.sleep(1.0)
    write_pages(site, "q", [f"new{i}" for i in range(3)])
    scan = front.lcc("cp", "scan", os.path.join(site.root, "q"), "--base-url", q_prefix).stdout
    send(front, qid, qpw, scan)
    mover = subprocess.Popen([os.path.join(front.bin, "lcc"), "--config", front.config, "front", "move-slot", "2",
                              "--to", "a"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = None
    deadline = time.time() + 20
    while time.time() < deadline:
        moves = slots(front)["moves"]
        if moves and moves[0]["phase"] in ("suspended", "drained", "created"):
            seen = moves[0]["phase"]
            break
        time.sleep(0.05)
    assert seen, "the move was never seen under way"
    front.kill()  # -9
    mover.wait(timeout=30)
    front.start()
    wait_for("the move resumed and ended", lambda: slots(front)["moves"] == [], timeout=60)
    held = {s["slot"]: s["lcc"] for s in slots(front)["held"]}
    assert held[2] == "a", held
    want = set(before_q) | {f"{q_prefix}new{i}.html" for i in range(3)}
    wait_for("every URL of Q stored on a", lambda: set(live(a, q_prefix)) == want, timeout=60)
    for url, md5 in before_q.items():
        assert live(a, q_prefix)[url] == md5
    wait_for("b holds nothing of Q", lambda: live(b, q_prefix) == {}, timeout=30)
    rows = {str(r["id"]): r for r in admin(front, "GET", "/admin/providers")["providers"]}
    assert rows[qid]["lcc"] == "a" and rows[qid]["state"] == "placed", rows[qid]
    assert sum(1 for p in admin(a, "GET", "/admin/providers")["providers"]
               if p["contact"].endswith(f":{qid}")) == 1, "one provider made at a, not two"
    print(f"killed the front end in phase {seen}; the move resumed")


def undone(site, front, a, b, r, work):
    """R's slot (3) to b while b is down: the move stops; R is frozen (CP 130, writes 409).
    Moving the slot back to a undoes it once b answers: R placed and active on a again,
    nothing of it left on b."""
    rid, rpw = r
    write_pages(site, "r", ["x"], size=10)
    b.stop()
    res = front.lcc("front", "move-slot", "3", "--to", "b", check=False)
    assert res.returncode == 1 and "resumes" in res.stderr.decode(), (res.stdout, res.stderr)
    assert slots(front)["moves"][0]["phase"] == "drained", slots(front)
    scan = front.lcc("cp", "scan", os.path.join(site.root, "r"), "--base-url", f"{site.base}r/").stdout
    out = send(front, rid, rpw, scan, check=False).stdout.decode()
    assert "init rejected 130" in out, out
    res = front.lcc("provider", "set", rid, "--priority", "5", check=False)
    assert res.returncode == 1 and "being moved" in res.stderr.decode(), (res.stdout, res.stderr)
    res = front.lcc("front", "move-slot", "3", "--to", "a", check=False)  # b still down: the undo waits
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert slots(front)["moves"][0]["phase"] == "undo", slots(front)
    b.start()
    wait_for("the move undone", lambda: slots(front)["moves"] == [], timeout=60)
    held = {s["slot"]: (s["lcc"], s["epoch"]) for s in slots(front)["held"]}
    assert held[3] == ("a", 3), held
    rows = {str(x["id"]): x for x in admin(front, "GET", "/admin/providers")["providers"]}
    assert rows[rid]["lcc"] == "a" and rows[rid]["state"] == "placed", rows[rid]
    shown = json.loads(front.lcc("provider", "show", rid).stdout)
    assert shown["state"] == "active", shown
    assert not [p for p in admin(b, "GET", "/admin/providers")["providers"]
                if p["contact"].endswith(f":{rid}") and p["state"] not in ("removing", "purging")]
    out = send(front, rid, rpw, scan).stdout.decode()
    assert "accepted 1 of 1" in out.lower(), out
    wait_for("R's URL stored on a", lambda: f"{site.base}r/x.html" in live(a, f"{site.base}r/"), timeout=30)
    print("an unfinished move undone")


def slots_fixed(front):
    """Another front.slots against the existing directory stops lccd and says why."""
    front.stop()
    with open(front.config) as f:
        text = f.read()
    with open(front.config, "w") as f:
        f.write(text.replace("  slots: 4\n", "  slots: 8\n", 1))
    r = subprocess.run([os.path.join(front.bin, "lccd"), "-c", front.config], capture_output=True, timeout=60)
    said = r.stderr.decode() + front.log_tail()
    assert r.returncode != 0 and f"{front.config}: front.slots: the slot directory" in said and "has 4 slots" in said, \
        (r.returncode, said[-2000:])


def main():
    args = e2e_args()
    conninfo = fixture_pg_conninfo()
    work = tempfile.mkdtemp(prefix="lcc-front-move-")
    site = LoggedSite(os.path.join(work, "site"))
    b = Node(args, work, "b", "mB", SUB_ROLES, SUB_EXTRA)
    a = Node(args, work, "a", "mA", SUB_ROLES,
             SUB_EXTRA + f"cu:\n  peers: [http://127.0.0.1:{b.ports['http']}]\n  peer_timeout: 2s\n")
    # One server key for both (auth.key): a provider's password hash moves with it.
    for n in (a, b):
        os.makedirs(os.path.join(n.work, "var"), exist_ok=True)
    key = os.urandom(32).hex() + "\n"
    for n in (a, b):
        path = os.path.join(n.work, "var", "auth.key")
        with open(path, "w") as f:
            f.write(key)
        os.chmod(path, 0o600)
    front = Node(args, work, "front", "mF", ["front"], move_front_config(conninfo, f"lcc_fmove_{os.getpid()}",
                                                                    [("a", a), ("b", b)]))
    run_nodes_guarded([front, a, b], [site], work, lambda: run(site, front, a, b, work))
    print("e2e front move: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
