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
  - the Change List since 0 has the 5 changes (all `created`) in pieces of 2, rel="next"
    leading on; after a page is deleted, one changed and one added, the Change List
    after the last seq has them as deleted, updated and created;
  - the Resource Dump lists 3 ZIP packages; each passes `unzip -t` (Debian's unzip),
    `zipinfo` and Python's zipfile, has manifest.xml first, which validates and lists
    the files that follow at their paths with their md5 and length; together they
    hold the stored URLs with the md5 of the export;
  - a bad since is 400, an unknown provider, page or package 404.
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import xml.dom.minidom
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, Site, run_guarded, wait_for  # noqa: E402

SM = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS = "http://www.openarchives.org/rs/terms/"
ZIP_TOOLS = ("unzip", "zipinfo")
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
        return self.validated(url, body)

    def validated(self, url, body):
        """body, validated by xmllint against the schema, as a DOM element."""
        self.n += 1
        path = os.path.join(self.work, f"doc{self.n}.xml")
        with open(path, "wb") as f:
            f.write(body)
        v = subprocess.run(["xmllint", "--noout", "--schema", SCHEMA, path], capture_output=True, timeout=30)
        assert v.returncode == 0, f"{url} does not validate:\n{v.stderr.decode()}\n{body.decode()[:2000]}"
        return xml.dom.minidom.parseString(body).documentElement

    def file(self, url, name):
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.headers["Content-Type"] == "application/zip", r.headers["Content-Type"]
            body = r.read()
        path = os.path.join(self.work, name)
        with open(path, "wb") as f:
            f.write(body)
        return path


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
    assert set(offered) == {"resourcelist", "resourcedump", "changelist"}, offered

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

    seen, since = follow(get, offered["changelist"], 0)
    assert sorted(seen) == sorted((u, "created") for u in want), seen

    # p0 removed, p1 changed, p5 new: the scan's other lines declare what is stored.
    site.write("docs/p1.html", b"<html>page 1, changed and longer</html>\n")
    site.write("docs/p5.html", b"<html>page 5</html>\n")
    scan = node.lcc("cp", "scan", site.root, "--base-url", site.base).stdout.decode()
    gone, changed, added = (f"{site.base}docs/p{i}.html" for i in (0, 1, 5))
    notices = [line for line in scan.splitlines() if f'c="{gone}"' not in line]
    notices.append(f'<url c="{gone}" m="text/html" op="delete"/>')
    node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
             stdin=("\n".join(notices) + "\n").encode())
    wait_for("the changes", lambda: (lambda e: gone not in e and added in e and e[changed][0] != want[changed][0])(
        exported(node)))
    got, _ = follow(get, offered["changelist"], since)
    assert sorted(got) == [(gone, "deleted"), (changed, "updated"), (added, "created")], got

    check_dump(get, offered["resourcedump"], caps[0][0], exported(node))

    assert get.status(f"/resourcesync/{pid}/changelist.xml?since=x") == 400
    assert get.status("/resourcesync/99/capabilitylist.xml") == 404
    assert get.status(f"/resourcesync/{pid}/nothing.xml") == 404
    for bad in ("resourcedump-0.zip", "resourcedump-4.zip", "resourcedump-x.zip", "resourcedump-1.xml"):
        assert get.status(f"/resourcesync/{pid}/{bad}") == 404, bad


def follow(get, changelist, since):
    """(url, change) of the Change Lists from `since`, pages of 2 followed by rel="next"
    until one is empty; and the since to go on from."""
    seen = []
    for _ in range(10):
        cl = get.doc(f"{changelist}?since={since}")
        assert rs_md(cl).getAttribute("capability") == "changelist"
        got = entries(cl)
        seen += [(loc, md.getAttribute("change")) for loc, md in got]
        since = int(links(cl)["next"].rsplit("=", 1)[1])
        if not got:
            return seen, since
    raise AssertionError(f"the Change List did not end: {seen}")


def check_dump(get, dump_url, capability_url, want):
    """The Resource Dump: packages that unzip, zipinfo and zipfile read, each with
    manifest.xml first, valid, listing the files after it with their md5 and length."""
    dump = get.doc(dump_url)
    assert rs_md(dump).getAttribute("capability") == "resourcedump"
    assert links(dump)["up"] == capability_url
    packages = entries(dump)
    assert len(packages) == 3, packages
    dumped = {}
    for n, (loc, md) in enumerate(packages, 1):
        assert md.getAttribute("type") == "application/zip"
        path = get.file(loc, f"dump{n}.zip")
        for tool in ZIP_TOOLS:
            args = [tool, "-t", path] if tool == "unzip" else [tool, "-1", path]
            r = subprocess.run(args, capture_output=True, timeout=30)
            assert r.returncode == 0, f"{tool} on {loc}: {r.stdout.decode()}{r.stderr.decode()}"
            if tool == "zipinfo":
                names = r.stdout.decode().split()
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None, loc
            assert z.namelist() == names and names[0] == "manifest.xml", names
            manifest = get.validated(loc + "#manifest.xml", z.read("manifest.xml"))
            assert rs_md(manifest).getAttribute("capability") == "resourcedump-manifest"
            assert links(manifest)["up"] == capability_url
            paths = []
            for url, md in entries(manifest):
                body = z.read(md.getAttribute("path").lstrip("/"))
                assert md.getAttribute("path").startswith("/resources/"), md.toxml()
                assert md.getAttribute("hash") == "md5:" + hashlib.md5(body).hexdigest(), (url, md.toxml())
                assert md.getAttribute("length") == str(len(body)), (url, md.toxml())
                paths.append(md.getAttribute("path").lstrip("/"))
                dumped[url] = (hashlib.md5(body).hexdigest(), str(len(body)), md.getAttribute("type"))
            assert names[1:] == paths, (names, paths)
    assert dumped == want, (dumped, want)


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
