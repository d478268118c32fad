#!/usr/bin/env python3
"""End-to-end test of issue 14's findings: a provider cannot leave its prefix.

A provider is added for http://127.0.0.1:PORT/docs (stored as .../docs/). It sends
URLs that climb out of the prefix with "..", "%2e%2e" and friends, that carry
userinfo, and that redirect out of the prefix. Each is refused with its code (201,
202 at once; 310 from the fetch, reported at the next connection), and the site never
sees a request for anything outside /docs/.
"""
import argparse
import http.server
import os
import re
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, free_port, run_guarded, wait_for  # noqa: E402


class Site:
    """Serves /docs/*.html and /secret.txt, and records every request path."""

    def __init__(self):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.seen = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.seen.append(self.path)
                redirects = {"/docs/go-out": "/secret.txt", "/docs/go-in": "/docs/page.html",
                             "/docs/go-dots": "/docs/../secret.txt"}
                if self.path in redirects:
                    self.send_response(302)
                    self.send_header("Location", redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                pages = {"/docs/page.html": b"<html>inside</html>\n", "/secret.txt": b"SECRET\n"}
                body = pages.get(self.path)
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html" if self.path.endswith(".html") else "text/plain")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def run(lcc, site):
    lcc.start()
    bad = lcc.lcc("provider", "add", "--prefix", f"http://user@127.0.0.1:{site.port}/docs/", check=False)
    assert bad.returncode != 0 and b"userinfo" in bad.stdout + bad.stderr, bad
    out = lcc.lcc("provider", "add", "--prefix", f"{site.base}/docs").stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    listed = lcc.lcc("provider", "list").stdout.decode()
    assert f"{site.base}/docs/" in listed, listed

    b = site.base
    refused = {
        f"{b}/docs/../secret.txt": 202,
        f"{b}/docs/%2e%2e/secret.txt": 202,
        f"{b}/docs/%2E%2E/secret.txt": 202,
        f"{b}/docs/.%2e/secret.txt": 202,
        f"{b}/docsecret.txt": 202,
        f"http://127.0.0.1:{site.port}@127.0.0.1:{site.port}/docs/page.html": 201,
        f"{b}/docs/..;/secret.txt": 201,
        f"{b}/docs/..%2Fsecret.txt": 201,
        f"{b}/docs/%252e%252e/secret.txt": 201,
    }
    urls = "".join(f'<url c="{u}" m="text/plain"/>\n' for u in refused)
    urls += "".join(f'<url c="{b}/docs/{p}" m="text/html"/>\n' for p in ("page.html", "go-in", "go-out", "go-dots"))
    sent = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                   "-", stdin=urls.encode(), check=False).stdout.decode()
    for u, code in refused.items():
        assert f"error {code} {u}" in sent, f"{u}: expected {code}\n{sent}"
    assert "accepted 4 of 13" in sent, sent

    # The two URLs that end inside the prefix are stored; the two that redirect out are not.
    wait_for("page.html and go-in stored", lambda: int(lcc.query_xml().getAttribute("count")) == 2)

    # Errors are reported once (cleared when the init_accepted carrying them is written),
    # and the two fetches may fail on either side of a session: gather over sessions.
    seen_310 = set()

    def reported():
        r = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                    "-", stdin=b"")
        for line in r.stdout.decode().splitlines():
            if line.startswith("fetch error 310 "):
                seen_310.update(name for name in ("go-out", "go-dots") if name in line)
        return seen_310 == {"go-out", "go-dots"}

    wait_for("the refused redirects reported back with 310", reported)
    outside = [p for p in site.seen if not p.startswith("/docs/")]
    assert not outside, f"fetched outside the prefix: {outside}"
    lcc.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-conf-")
    site = Site()
    lcc = Node(args, work)
    run_guarded(lcc, site, work, lambda: run(lcc, site))
    print("e2e confinement: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
