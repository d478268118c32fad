#!/usr/bin/env python3
"""ResourceSync out: the documents of a real lccd that fetched a small site.

lccd runs with resourcesync.page_size 2, so that a provider of 5 pages has a Resource
List Index of 3 pages. Every document is validated by xmllint (Debian libxml2-utils)
against docs/schemas/sitemap.xsd (the sitemaps.org protocol, with the ResourceSync
terms of docs/schemas/rs.xsd), and checked against what `lcc cu query` exports:
  - /.well-known/resourcesync lists the provider's Capability List;
  - the Capability List links up and lists the Resource List and the Change List;
  - the Resource List Index has 3 pages whose entries are the 5 stored URLs, each with
    the md5, length and type of the export;
  - the Change List since 0 has the 5 changes in pieces of 2, rel="next" leading on;
    after a page is deleted, the Change List after the last seq has it as deleted;
  - a bad since is 400, an unknown provider or page 404.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, Site, run_guarded, wait_for  # noqa: E402

SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS = "http://www.openarchives.org/rs/terms/"
SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schemas", "sitemap.xsd")


class Fetch:
    def __init__(self, node, work):
        self.base = f"http://127.0.0.1:{node.ports['http']}"
        self.work = work
        self.n = 0

    def status(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    def doc(self, path_or_url):
        url = path_or_url if path_or_url.startswith("http") else self.base + path_or_url
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.headers["Content-Type"].startswith("application/xml"), r.headers["Content-Type"]
            body = r.read()
        self.n += 1
        path = os.path.join(self.work, f"doc{self.n}.xml")
        with open(path, "wb") as f:
            f.write(body)
        v = subprocess.run(["xmllint", "--noout", "--schema", SCHEMA, path], capture_output=True, timeout=30)
        assert v.returncode == 0, f"{url} does not validate:\n{v.stderr.decode()}\n{body.decode()[:2000]}"
        return xml.dom.minidom.parseString(body).documentElement


def rs_md(el):
    """The rs:md that is a direct child of el."""
    found = [c for c in el.childNodes if c.nodeType == c.ELEMENT_NODE and c.namespaceURI == RS and c.localName == "md"]
    assert len(found) == 1, el.toxml()[:300]
    return found[0]


def links(root):
    return {c.getAttribute("rel"): c.getAttribute("href") for c in root.childNodes
            if c.nodeType == c.ELEMENT_NODE and c.namespaceURI == RS and c.localName == "ln"}


def entries(root, tag="url"):
    out = []
    for e in root.getElementsByTagNameNS(SM, tag):
        loc = e.getElementsByTagNameNS(SM, "loc")[0].firstChild.data
        out.append((loc, rs_md(e) if tag == "url" else None))
    return out


def exported(node):
    """url -> (md5, size, mime) of what `lcc cu query` exports."""
    out = {}
    for r in node.query_xml().getElementsByTagNameNS("*", "url"):
        if r.getAttribute("deleted") != "yes":
            out[r.getAttribute("c")] = (r.getAttribute("md5"), r.getAttribute("sz"), r.getAttribute("m"))
    return out


def run(node, site, work):
    for i in range(5):
        site.write(f"docs/p{i}.html", f"<html>page {i}</html>\n".encode())
    node.start()
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    pid, password = re.fullmatch(r"id=(\d+) password=(\S+)\n", out).groups()
    scan = node.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password,
             "--full", "-", stdin=scan)
    wait_for("5 pages stored", lambda: node.status()["qm"]["fetched"] == 5 and node.status()["qm"]["queued_urls"] == 0)
    want = exported(node)
    assert len(want) == 5, want
    get = Fetch(node, work)

    desc = get.doc("/.well-known/resourcesync")
    assert rs_md(desc).getAttribute("capability") == "description"
    caps = entries(desc)
    assert [loc for loc, _ in caps] == [f"{get.base}/resourcesync/{pid}/capabilitylist.xml"], caps

    cap = get.doc(caps[0][0])
    assert links(cap)["up"] == f"{get.base}/.well-known/resourcesync"
    offered = {md.getAttribute("capability"): loc for loc, md in entries(cap)}
    assert set(offered) == {"resourcelist", "changelist"}, offered

    index = get.doc(offered["resourcelist"])
    assert index.localName == "sitemapindex" and rs_md(index).getAttribute("capability") == "resourcelist"
    pages = [loc for loc, _ in entries(index, "sitemap")]
    assert len(pages) == 3, pages
    listed = {}
    for page in pages:
        doc = get.doc(page)
        assert links(doc)["up"] == caps[0][0]
        for loc, md in entries(doc):
            listed[loc] = (md.getAttribute("hash"), md.getAttribute("length"), md.getAttribute("type"))
    assert listed == {u: (f"md5:{m}", sz, mime) for u, (m, sz, mime) in want.items()}, (listed, want)
    assert get.status(f"/resourcesync/{pid}/resourcelist-4.xml") == 404

    seen, since, rounds = [], 0, 0
    while rounds < 10:
        rounds += 1
        cl = get.doc(f"{offered['changelist']}?since={since}")
        assert rs_md(cl).getAttribute("capability") == "changelist"
        got = entries(cl)
        seen += [(loc, md.getAttribute("change")) for loc, md in got]
        since = int(links(cl)["next"].rsplit("=", 1)[1])
        if not got:
            break
    assert sorted(seen) == sorted((u, "updated") for u in want), seen

    node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
             stdin=f'<url c="{site.base}docs/p0.html" m="text/html" op="delete"/>\n'.encode())
    gone = f"{site.base}docs/p0.html"
    wait_for("the deletion", lambda: gone not in exported(node))
    cl = get.doc(f"{offered['changelist']}?since={since}")
    assert [(loc, md.getAttribute("change")) for loc, md in entries(cl)] == [(gone, "deleted")], cl.toxml()

    assert get.status(f"/resourcesync/{pid}/changelist.xml?since=x") == 400
    assert get.status("/resourcesync/99/capabilitylist.xml") == 404
    assert get.status(f"/resourcesync/{pid}/nothing.xml") == 404


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="lcc-resourcesync-")
    site = Site(os.path.join(work, "site"))
    node = Node(args, work, extra="resourcesync:\n  page_size: 2\n")
    run_guarded(node, site, work, lambda: run(node, site, work))
    print("resourcesync: ok")


if __name__ == "__main__":
    sys.exit(main())
