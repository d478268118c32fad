#!/usr/bin/env python3
"""End-to-end test of a provider's life after `lcc provider add` (issue 11 §4).

One real lccd (every role) and a real HTTP site on 127.0.0.1. The site holds chosen
URLs ("gates") until the test releases them, so a fetch can be kept in flight while
the administrator acts, and it records every request it answers. Fetching is serial
per provider (qm.provider_inflight 1), so the URLs queued behind a gate wait for it.

  suspend: the session is refused with 111 and the reason; the queued URLs are not
           dispatched (the QM's own count) and not requested (the site's log);
  resume:  they are fetched;
  set:     every change shows in `provider show`; a new password ends the old one;
           bad values are refused; the PATCH twin works;
  remove:  the queued URLs are never requested; the content stays in `cu query`;
  remove --purge: tombstones in `cu query --deleted`, files gone from the content folder.
"""
import argparse
import functools
import http.server
import json
import os
import re
import sys
import tempfile
import threading
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, free_port, run_guarded, wait_for  # noqa: E402


class GatedSite:
    """A folder served over HTTP; GETs of gated paths wait until released."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.requests = []
        self.gates = {}
        self.port = free_port()
        handler = functools.partial(GatedHandler, self, directory=root)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def write(self, rel, data=None):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data if data is not None else f"<html>{rel}</html>\n".encode())

    def gate(self, rel):
        self.gates["/" + rel] = threading.Event()

    def release(self, rel):
        self.gates["/" + rel].set()

    def requested(self, rel):
        with self.lock:
            return ("/" + rel) in self.requests

    def stop(self):
        for g in self.gates.values():
            g.set()
        self.server.shutdown()


class GatedHandler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, site, *args, **kwargs):
        self.site = site
        super().__init__(*args, **kwargs)

    def do_GET(self):
        with self.site.lock:
            self.site.requests.append(self.path)
        gate = self.site.gates.get(self.path)
        if gate is not None:
            gate.wait(30)
        super().do_GET()

    def log_message(self, *args):
        pass


class Lifecycle:
    def __init__(self, node, site):
        self.node = node
        self.site = site

    def lcc(self, *argv, check=True):
        r = self.node.lcc(*argv, check=check)
        return r.returncode, r.stdout.decode(), r.stderr.decode()

    def add(self, folder):
        _, out, _ = self.lcc("provider", "add", "--prefix", self.site.base + folder + "/")
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, out
        return m.group(1), m.group(2)

    def send(self, pid, password, rels, check=True):
        body = "".join(f'<url c="{self.site.base}{r}" m="text/html"/>\n' for r in rels).encode()
        r = self.node.lcc("cp", "send", "--uns", f"127.0.0.1:{self.node.ports['uns']}", "--id", pid,
                          "--password", password, "-", stdin=body, check=check)
        return r.returncode, (r.stdout + r.stderr).decode()

    def qm(self):
        return self.node.status()["qm"]

    def urls(self, pid, *extra):
        root = self.node.query_xml("--provider", pid, *extra)
        return {u.getAttribute("c")[len(self.site.base):]: u.getAttribute("deleted") == "yes"
                for u in root.getElementsByTagName("url")}

    def show(self, pid):
        return json.loads(self.lcc("provider", "show", pid)[1])

    def admin(self, method, path, form=""):
        with open(os.path.join(self.node.work, "var", "admin.token")) as f:
            token = f.read().strip()
        req = urllib.request.Request(f"http://127.0.0.1:{self.node.ports['http']}{path}", method=method,
                                     data=form.encode() if form else None,
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)


def suspend_and_resume(t):
    site = t.site
    pid, password = t.add("a")
    pages = [f"a/p{i}.html" for i in range(5)]
    for rel in ["a/gate.html", *pages]:
        site.write(rel)
    site.gate("a/gate.html")
    t.send(pid, password, ["a/gate.html", *pages])
    wait_for("the gate fetched", lambda: site.requested("a/gate.html"))

    rc, out, _ = t.lcc("provider", "suspend", pid)
    assert out == f"provider {pid}: suspended\n", out
    wait_for("the QM holds the provider", lambda: t.qm()["providers_held"] == 1)
    rc, text = t.send(pid, password, [], check=False)
    assert rc == 1 and "init rejected 111: provider not active (suspended)" in text, text

    site.release("a/gate.html")
    qm = wait_for("the gate's result", lambda: (lambda q: q if q["in_flight"] == 0 and q["fetched"] >= 1 else None)(t.qm()))
    assert qm["fetches_dispatched"] == 1 and qm["queued_urls"] == 5, qm
    assert not any(site.requested(p) for p in pages), site.requests
    assert t.urls(pid) == {"a/gate.html": False}
    assert t.show(pid)["state"] == "suspended"

    t.lcc("provider", "resume", pid)
    wait_for("every queued URL fetched after resume", lambda: len(t.urls(pid)) == 6)
    assert all(site.requested(p) for p in pages)
    assert t.send(pid, password, [])[0] == 0
    return pid, password


def change(t, pid, password):
    base = t.site.base
    _, out, _ = t.lcc("provider", "set", pid, "--priority", "7", "--bandwidth", "5000", "--quota-files", "100",
                      "--quota-bytes", "1000000", "--add-prefix", base + "b/", "--remove-prefix", base + "a/")
    assert json.loads(out)["priority"] == 7, out
    p = t.show(pid)
    assert (p["priority"], p["bandwidth"], p["quota_files"], p["quota_bytes"]) == (7, 5000, 100, 1000000), p
    assert p["prefixes"] == [base + "b/"], p
    for bad in (["--priority", "5000"], ["--add-prefix", "ftp://x/"], ["--remove-prefix", base + "zzz/"], []):
        rc, _, err = t.lcc("provider", "set", pid, *bad, check=False)
        assert rc != 0, (bad, err)
    assert t.show(pid)["priority"] == 7

    t.lcc("provider", "set", pid, "--password", "a new password")
    rc, text = t.send(pid, password, [], check=False)
    assert rc == 1 and "init rejected 110" in text, text
    assert t.send(pid, "a new password", [])[0] == 0

    # The HTTP twins.
    status, body = t.admin("PATCH", f"/admin/providers/{pid}", "priority=-3&add_prefix=" + base + "e/")
    assert status == 200 and body["priority"] == -3 and base + "e/" in body["prefixes"], (status, body)
    assert t.admin("POST", f"/admin/providers/{pid}", "bandwidth=x")[0] == 400
    assert t.admin("POST", "/admin/providers/99/suspend")[0] == 404
    assert t.admin("DELETE", f"/admin/providers/{pid}?purge=2")[0] == 400
    assert t.admin("POST", f"/admin/providers/{pid}/suspend") == (200, {"id": int(pid), "state": "suspended"})
    assert t.admin("POST", f"/admin/providers/{pid}/resume") == (200, {"id": int(pid), "state": "active"})


def remove_keeps_content(t):
    site = t.site
    pid, password = t.add("c")
    queued = ["c/q1.html", "c/q2.html", "c/q3.html"]
    for rel in ["c/kept.html", "c/gate.html", *queued]:
        site.write(rel)
    t.send(pid, password, ["c/kept.html"])
    wait_for("c/kept.html stored", lambda: t.urls(pid) == {"c/kept.html": False})
    site.gate("c/gate.html")
    t.send(pid, password, ["c/gate.html", *queued])
    wait_for("the gate fetched", lambda: site.requested("c/gate.html"))

    wait_for("no provider held", lambda: t.qm()["providers_held"] == 0)
    _, out, _ = t.lcc("provider", "remove", pid)
    assert "content stays and is still exported" in out, out
    assert t.show(pid)["state"] == "removing"
    wait_for("the QM holds the provider", lambda: t.qm()["providers_held"] == 1)
    site.release("c/gate.html")
    wait_for("the record deleted by the QM", lambda: t.lcc("provider", "show", pid, check=False)[0] != 0)
    qm = wait_for("the queue empty", lambda: (lambda q: q if q["queued_urls"] == 0 and q["in_flight"] == 0 else None)(t.qm()))
    assert not any(site.requested(q) for q in queued), site.requests
    assert t.urls(pid) == {"c/kept.html": False, "c/gate.html": False}, t.urls(pid)
    rc, text = t.send(pid, password, [], check=False)
    assert rc == 1 and "init rejected" in text, text
    return qm


def content_files(node, heads=False):
    """The content files (or, with heads=True, the robot's response-head side files <file>.http,
    kept where the file system refused the attribute: core/common/response_head.h)."""
    root = os.path.join(node.work, "var", "content")
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names
                  if n.endswith(".http") == heads)


def remove_purges_content(t):
    pid, password = t.add("d")
    rels = ["d/x1.html", "d/x2.html", "d/x3.html"]
    for rel in rels:
        t.site.write(rel)
    before = content_files(t.node)
    heads_before = content_files(t.node, heads=True)
    t.send(pid, password, rels)
    wait_for("d/ stored", lambda: len(t.urls(pid)) == 3)
    with_d = wait_for("the three files written", lambda: (lambda f: f if len(f) == len(before) + 3 else None)(content_files(t.node)))

    _, out, _ = t.lcc("provider", "remove", pid, "--purge")
    assert "its content is being removed" in out, out
    wait_for("tombstones for content users",
             lambda: t.urls(pid, "--deleted") == {r: True for r in rels})
    assert t.urls(pid) == {}
    wait_for("the files deleted", lambda: content_files(t.node) == before)
    assert content_files(t.node, heads=True) == heads_before, "side files left behind"
    assert len(with_d) == len(before) + 3
    wait_for("the record deleted by the QM", lambda: t.lcc("provider", "show", pid, check=False)[0] != 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-life-")
    site = GatedSite(os.path.join(work, "site"))
    node = Node(args, work, extra="qm:\n  provider_refresh: 50ms\n")

    def body():
        node.start()
        t = Lifecycle(node, site)
        pid, password = suspend_and_resume(t)
        change(t, pid, password)
        remove_keeps_content(t)
        remove_purges_content(t)
        node.stop()

    run_guarded(node, site, work, body)
    print("e2e provider lifecycle: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
