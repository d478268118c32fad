#!/usr/bin/env python3
"""End-to-end test of issue 29 §5, fetching less, with a real lccd and fetch-curl.

One web server on 127.0.0.1 (Python's http.server, subclassed) serves two providers,
/a/ and /b/, with ETags and no Last-Modified; it answers 304 only to a request whose
If-None-Match is the page's ETag, and keeps an access log with each request's start
and end and a counter of the requests being served at once.
  - Hosts: both providers' sets (12 URLs each) are fetched with qm.provider_inflight 2
    and qm.host_inflight at its default, 1: the server never serves more than one
    request at once, and no two logged requests overlap.
  - ETags: the same URLs sent again (no mt, size or md5, so the LCC asks the server)
    are fetched with If-None-Match, answered 304, counted as unchanged by the QM, and
    the export is unchanged; a page changed at the site (a new ETag) is fetched again.
"""
import hashlib
import http.server
import os
import re
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, e2e_args, free_port, run_guarded, tar_contents, wait_for  # noqa: E402

PAGES = 12


class EtagSite:
    """Pages in memory, served with `ETag: "<md5>"`; an access log of (path, status,
    If-None-Match, start, end) and the most requests ever served at once."""

    def __init__(self):
        self.pages = {}
        self.log = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        self.port = free_port()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                start = time.monotonic()
                with site.lock:
                    site.active += 1
                    site.max_active = max(site.max_active, site.active)
                try:
                    # Hold the request a little, so that a second fetch on this host
                    # would overlap it if one were let out.
                    time.sleep(0.02)
                    status = self.answer()
                finally:
                    with site.lock:
                        site.active -= 1
                        site.log.append((self.path, status, self.headers.get("If-None-Match"), start, time.monotonic()))

            def answer(self):
                with site.lock:
                    body = site.pages.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return 404
                etag = '"' + hashlib.md5(body).hexdigest() + '"'
                if self.headers.get("If-None-Match") == etag:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                    return 304
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return 200

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def put(self, path, body):
        with self.lock:
            self.pages[path] = body

    def entries(self):
        with self.lock:
            return list(self.log)

    def stop(self):
        self.server.shutdown()


def add_provider(node, prefix):
    out = node.lcc("provider", "add", "--prefix", prefix).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    return m.group(1), m.group(2)


def send(node, pid, password, urls):
    doc = "".join(f'<url c="{u}" m="text/html"/>\n' for u in urls).encode()
    r = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
                 stdin=doc)
    assert f"accepted {len(urls)} of {len(urls)}" in r.stdout.decode(), r.stdout


def settled(node):
    qm = node.status()["qm"]
    return qm["queued_urls"] == 0 and qm["in_flight"] == 0


def overlapping(log):
    spans = sorted((start, end) for _, _, _, start, end in log)
    return [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]


def run(node, site, work):
    urls = {}
    for p in ("a", "b"):
        urls[p] = [f"{site.base}{p}/page{i:02d}.html" for i in range(PAGES)]
        for i in range(PAGES):
            site.put(f"/{p}/page{i:02d}.html", f"<html>{p} page {i}</html>\n".encode())
    node.start()
    creds = {p: add_provider(node, f"{site.base}{p}/") for p in ("a", "b")}
    for p in ("a", "b"):
        send(node, *creds[p], urls[p])
    wait_for("both providers' pages stored",
             lambda: settled(node) and len(tar_contents(node.query_tar())) == 2 * PAGES)
    log = site.entries()
    assert len(log) == 2 * PAGES and all(s == 200 for _, s, _, _, _ in log), log
    assert site.max_active == 1, f"the server served {site.max_active} requests at once"
    assert not overlapping(log), overlapping(log)[:3]
    unchanged_before = node.status()["qm"]["unchanged"]

    # The same URLs again: every fetch names the page's ETag and is answered 304.
    exported = tar_contents(node.query_tar())
    for p in ("a", "b"):
        send(node, *creds[p], urls[p])
    wait_for("the second round settled", lambda: settled(node) and len(site.entries()) == 4 * PAGES)
    second = site.entries()[2 * PAGES:]
    assert all(s == 304 and inm for _, s, inm, _, _ in second), second
    assert node.status()["qm"]["unchanged"] - unchanged_before == 2 * PAGES, node.status()["qm"]
    assert tar_contents(node.query_tar()) == exported
    assert site.max_active == 1 and not overlapping(site.entries())

    # A page changed at the site has a new ETag: fetched again, stored.
    site.put("/a/page03.html", b"<html>a page 3, changed</html>\n")
    send(node, *creds["a"], [urls["a"][3]])
    wait_for("the changed page stored",
             lambda: settled(node) and tar_contents(node.query_tar()).get(urls["a"][3]) ==
             b"<html>a page 3, changed</html>\n")
    path, status, inm, _, _ = site.entries()[-1]
    assert (path, status) == ("/a/page03.html", 200) and inm, site.entries()[-1]
    node.stop()


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-fetch-less-")
    site = EtagSite()
    node = Node(args, work, extra="qm:\n  provider_inflight: 2\n")
    run_guarded(node, site, work, lambda: run(node, site, work))
    print("e2e fetch_less: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
