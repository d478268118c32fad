#!/usr/bin/env python3
"""The LCC polls a provider's sitemap (lcc provider set --sitemap, docs/protocol.md §11).

A real lccd and a site on 127.0.0.1 serving a gzipped sitemap. Checked:
  - `lcc provider set ID --sitemap URL --sitemap-interval 1s` is shown by `provider show`;
    a sitemap outside the provider's prefixes is refused (exit 2);
  - the listed pages are fetched and appear in `lcc cu query`; a page outside the
    provider's prefix is skipped (never fetched, counted);
  - polls of an unchanged sitemap send nothing; after a change only the change is sent
    (a new lastmod, a new page, a page no longer listed becomes a tombstone), and an
    unchanged page is fetched once in all;
  - after a restart nothing is sent again (the poll state is kept under the data dir).
"""
import argparse
import functools
import gzip
import os
import re
import sys
import tempfile
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, QuietHandler, Site, run_guarded, wait_for  # noqa: E402

REQUESTS = []
REQUESTS_LOCK = threading.Lock()


class LoggingHandler(QuietHandler):
    def send_head(self):
        with REQUESTS_LOCK:
            REQUESTS.append(self.path)
        return super().send_head()


def requests_of(path):
    with REQUESTS_LOCK:
        return REQUESTS.count(path)


def sitemap(site, pages):
    body = '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    for loc, lastmod in pages:
        body += f"  <url><loc>{site.base}{loc}</loc>" + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "") + "</url>\n"
    site.write("docs/sitemap.xml.gz", gzip.compress((body + "</urlset>\n").encode()))


def metric(node, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{node.ports['http']}/metrics", timeout=10) as r:
        m = re.search(rf"^{name} (\d+)$", r.read().decode(), re.M)
    return int(m.group(1)) if m else 0


def urls(node, deleted=False):
    out = {}
    for u in node.query_xml(*(["--deleted"] if deleted else [])).getElementsByTagNameNS("*", "url"):
        out[u.getAttribute("c")] = u.getAttribute("deleted") == "yes"
    return out


def run(node, site, work):
    site.server.RequestHandlerClass = functools.partial(LoggingHandler, directory=site.root)
    for name in ("a.html", "b.html", "e.html"):
        site.write("docs/" + name, f"<html>{name} v1</html>\n".encode())
    site.write("private/c.html", b"<html>private</html>\n")
    sitemap(site, [("docs/a.html", "2024-05-01"), ("docs/b.html", "2024-05-01"), ("docs/e.html", ""),
                   ("private/c.html", "")])
    node.start()
    out = node.lcc("provider", "add", "--prefix", site.base + "docs/").stdout.decode()
    pid = re.fullmatch(r"id=(\d+) password=\S+\n", out).group(1)
    refused = node.lcc("provider", "set", pid, "--sitemap", site.base + "sitemap.xml", check=False)
    assert refused.returncode == 2 and b"not under" in refused.stderr, refused
    shown = node.lcc("provider", "set", pid, "--sitemap", site.base + "docs/sitemap.xml.gz",
                     "--sitemap-interval", "1s").stdout.decode()
    assert f'"sitemap": "{site.base}docs/sitemap.xml.gz"' in shown and '"sitemap_interval_ms": 1000' in shown, shown

    base = site.base
    wait_for("the listed pages", lambda: {base + "docs/a.html", base + "docs/b.html", base + "docs/e.html"}
             <= set(urls(node)))
    assert base + "private/c.html" not in urls(node)
    assert requests_of("/private/c.html") == 0
    assert metric(node, "lcc_sitemap_urls_skipped_total") >= 1
    assert metric(node, "lcc_sitemap_urls_sent_total") == 3
    # More polls of the same sitemap send nothing.
    polls = metric(node, "lcc_sitemap_polls_total")
    wait_for("two more polls", lambda: metric(node, "lcc_sitemap_polls_total") >= polls + 2)
    assert metric(node, "lcc_sitemap_urls_sent_total") == 3

    # The change: b has a new lastmod, d is new, a is no longer listed.
    site.write("docs/b.html", b"<html>b v2</html>\n")
    site.write("docs/d.html", b"<html>d</html>\n")
    sitemap(site, [("docs/b.html", "2024-06-01"), ("docs/d.html", ""), ("docs/e.html", ""), ("private/c.html", "")])
    wait_for("only the change sent", lambda: metric(node, "lcc_sitemap_urls_sent_total") == 6)

    def mirrored():
        now = urls(node, deleted=True)
        return now.get(base + "docs/a.html") is True and now.get(base + "docs/d.html") is False and \
            requests_of("/docs/b.html") == 2

    wait_for("the change mirrored", mirrored)
    assert requests_of("/docs/e.html") == 1, REQUESTS
    assert metric(node, "lcc_sitemap_poll_failures_total") == 0

    # A restart: the poll state is on disk, nothing is sent again.
    node.stop()
    node.start()
    wait_for("polls after the restart", lambda: metric(node, "lcc_sitemap_polls_total") >= 2)
    assert metric(node, "lcc_sitemap_urls_sent_total") == 0
    assert requests_of("/docs/e.html") == 1, REQUESTS
    node.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-sitemap-poll-")
    site = Site(os.path.join(work, "site"))
    node = Node(args, work, extra="sitemap:\n  min_interval: 1s\n  check_interval: 300ms\n")
    run_guarded(node, site, work, lambda: run(node, site, work))
    print("sitemap poll: ok")


if __name__ == "__main__":
    sys.exit(main())
