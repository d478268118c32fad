#!/usr/bin/env python3
"""Several LCCs as one (issue 31 §3, docs/protocol.md §3.4), with real lccd processes.

Three lccd on 127.0.0.1 (A, B, C), each with its own store, provider and site. A has
cu.peers = [B, C], so GET /cu/query on A answers for all three with one cursor token.
A mirror pages through merged answers with small limits while the sites change, and B
is stopped between pages (A answers without it, flags it, keeps B's part of the cursor)
and started again: the mirror ends equal to the three stores, and no (source, seq)
came twice. A mangled token is 400; `lcc cu query --cu URL --cu URL --cu URL` (the
merge in the client) gives what A gives.

Content in every format (docs/protocol.md §3.4): a merged tar.gz from A read by GNU tar
(every member the site's bytes, MANIFEST.xml with the token and sources), XML with
content, a warc.gz from the client-side merge read by warcio (npm, when Node.js is
there) with every digest checked; then an incremental tar.gz run from the token while C
is stopped, and again after C is back: the changes of the three came exactly once, each
with the site's bytes, and the next page is empty.
"""
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, Site, e2e_args, run_nodes_guarded, wait_for  # noqa: E402
from warc_test import check_records, gzip_members, warcio_read  # noqa: E402


class Lcc:
    """One node with its own site and provider."""

    def __init__(self, args, work, name, extra=""):
        self.site = Site(os.path.join(work, name + "-site"))
        self.node = Node(args, work, name, "m" + name, extra=extra)
        self.state = os.path.join(work, name + ".scan")
        self.name = name

    def url(self):
        return f"http://127.0.0.1:{self.node.ports['http']}"

    def add_provider(self):
        out = self.node.lcc("provider", "add", "--prefix", self.site.base).stdout.decode()
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, out
        self.pid, self.password = m.group(1), m.group(2)

    def send(self, full=False):
        scan = self.node.lcc("cp", "scan", self.site.root, "--base-url", self.site.base, "--state", self.state).stdout
        self.node.lcc("cp", "send", "--uns", f"127.0.0.1:{self.node.ports['uns']}", "--id", self.pid,
                      "--password", self.password, *(["--full"] if full else []), "-", stdin=scan)

    def own(self):
        """This node's own answer (peers=no): its store id and {url: (seq, deleted)}."""
        status, headers, root = get(self.url(), {"format": "xml", "deleted": "yes", "peers": "no"})
        assert status == 200, root
        recs = {u.getAttribute("c"): (int(u.getAttribute("seq")), u.getAttribute("deleted") == "yes")
                for u in root.getElementsByTagName("url")}
        return headers["X-LCC-Source"], recs


def get(base, params):
    q = urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(f"{base}/cu/query?{q}", timeout=30) as r:
            body = r.read()
            return r.status, dict(r.headers), xml.dom.minidom.parseString(body).documentElement
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class Mirror:
    """A content user paging through merged answers."""

    def __init__(self):
        self.token = None
        self.recs = {}     # (source, url) -> (seq, deleted)
        self.seen = set()  # (source, seq)

    def page(self, base, limit):
        params = {"format": "xml", "deleted": "yes", "limit": str(limit)}
        if self.token:
            params["since_seq"] = self.token
        status, headers, root = get(base, params)
        assert status == 200, root
        assert headers["X-LCC-Last-Seq"] == root.getAttribute("last_seq")
        urls = root.getElementsByTagName("url")
        assert len(urls) <= limit
        for u in urls:
            key = (u.getAttribute("source"), int(u.getAttribute("seq")))
            assert key not in self.seen, f"change {key} came twice"
            self.seen.add(key)
            self.recs[(key[0], u.getAttribute("c"))] = (key[1], u.getAttribute("deleted") == "yes")
        self.token = root.getAttribute("last_seq")
        return headers, root, len(urls)

    def catch_up(self, base, limit):
        for _ in range(500):
            headers, root, n = self.page(base, limit)
            if n == 0 and headers["X-LCC-Peers-Unreachable"] == "0":
                return
        raise AssertionError("the mirror did not catch up in 500 pages")


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-peers-")
    b = Lcc(args, work, "b")
    c = Lcc(args, work, "c")
    peers = f"[{b.url()}, {c.url()}]"
    a = Lcc(args, work, "a", f"cu:\n  peers: {peers}\n  peer_timeout: 2s\n")
    lccs = [a, b, c]
    run_nodes_guarded([x.node for x in lccs], [x.site for x in lccs], work, lambda: run(args, a, b, c, work))
    print("e2e cu peers: 1 passed, 0 failed")


def wait_stored(x, urls):
    wait_for(f"{x.name} holds {sorted(urls)}", lambda: all(x.site.base + u in x.own()[1] for u in urls))


def expect_equal(mirror, lccs):
    want = {}
    for x in lccs:
        src, recs = x.own()
        for url, v in recs.items():
            want[(src, url)] = v
    assert mirror.recs == want, f"mirror differs: {sorted(set(mirror.recs.items()) ^ set(want.items()))[:10]}"


def run(args, a, b, c, work):
    for x in (a, b, c):
        for i in range(7):
            x.site.write(f"{x.name}/p{i}.html", f"<html>{x.name} {i}</html>\n".encode())
        x.node.start()
        x.add_provider()
        x.send(full=True)
    for x in (a, b, c):
        wait_stored(x, [f"{x.name}/p{i}.html" for i in range(7)])
    ids = {x.name: x.own()[0] for x in (a, b, c)}
    assert len(set(ids.values())) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", v) for v in ids.values()), ids

    m = Mirror()
    headers, root, n = m.page(a.url(), 4)
    assert n == 4 and headers["X-LCC-Peers-Unreachable"] == "0", headers
    assert f"{ids['b']}={b.url()}" in headers["X-LCC-Sources"], headers  # where B's content is read
    assert root.getAttribute("last_seq").startswith("c1."), root.getAttribute("last_seq")
    m.catch_up(a.url(), 4)
    expect_equal(m, [a, b, c])

    # Changes on each; B's are pending in the cursor when B is killed.
    for x in (a, b, c):
        x.site.write(f"{x.name}/p1.html", b"<html>changed</html>\n")
        os.remove(os.path.join(x.site.root, f"{x.name}/p2.html"))
        for i in range(7, 12):
            x.site.write(f"{x.name}/p{i}.html", f"<html>{x.name} new {i}</html>\n".encode())
        x.send()
    for x in (a, b, c):
        wait_stored(x, [f"{x.name}/p{i}.html" for i in range(7, 12)])
        wait_for(f"{x.name} removed p2", lambda x=x: x.own()[1][x.site.base + f"{x.name}/p2.html"][1])
    m.page(a.url(), 3)
    before = m.token
    b.node.stop()  # SIGTERM (kill -9 loses what B had not synced, as it does for one LCC)
    headers, root, n = m.page(a.url(), 3)
    assert headers["X-LCC-Peers-Unreachable"] == "1" and ids["b"] not in headers["X-LCC-Sources"], headers
    assert b.url() in root.getAttribute("unreachable"), root.getAttribute("unreachable")
    assert all(u.getAttribute("source") != ids["b"] for u in root.getElementsByTagName("url"))
    # B's part of the cursor is what it was (the token is opaque to clients; lcc reads it).
    assert part_of(m.token, ids["b"]) == part_of(before, ids["b"]) > 0
    m.page(a.url(), 3)
    b.node.start()
    assert b.own()[0] == ids["b"], "B's store id changed across its restart"
    m.catch_up(a.url(), 3)
    expect_equal(m, [a, b, c])

    # A mangled token is refused, and so is an unknown format.
    bad = m.token[:-3] + ("AAA" if not m.token.endswith("AAA") else "BBB")
    status, _, body = get(a.url(), {"format": "xml", "since_seq": bad})
    assert status == 400 and "mangled" in body, (status, body)
    status, _, body = get(a.url(), {"format": "zip"})
    assert status == 400 and "tar.gz" in body, (status, body)

    # The client-side merge gives what cu.peers gives.
    status, _, root = get(a.url(), {"format": "xml", "deleted": "yes"})
    assert status == 200
    out = a.node.lcc("cu", "query", "--cu", a.url(), "--cu", b.url(), "--cu", c.url(), "--deleted").stdout
    cli = xml.dom.minidom.parseString(out).documentElement
    assert records(cli) == records(root) and len(records(root)) == 3 * 12
    assert cli.getAttribute("last_seq") == root.getAttribute("last_seq")
    again = a.node.lcc("cu", "query", "--cu", a.url(), "--cu", b.url(), "--cu", c.url(), "--deleted",
                       "--since-seq", cli.getAttribute("last_seq")).stdout
    assert xml.dom.minidom.parseString(again).documentElement.getAttribute("count") == "0"
    content_formats(a, b, c, ids, work, cli.getAttribute("last_seq"))


def site_now(lccs):
    """{url: bytes} of every page the sites serve now: what the caught-up stores hold."""
    out = {}
    for x in lccs:
        for d, _, names in os.walk(x.site.root):
            for n in names:
                with open(os.path.join(d, n), "rb") as f:
                    out[x.site.base + os.path.relpath(os.path.join(d, n), x.site.root)] = f.read()
    return out


def fetch(base, params, path):
    """A merged answer of A saved to `path`; its headers."""
    with urllib.request.urlopen(f"{base}/cu/query?{urllib.parse.urlencode(params)}", timeout=60) as r:
        with open(path, "wb") as f:
            shutil.copyfileobj(r, f)
        return dict(r.headers)


def read_tar(path, work):
    """A tar.gz answer extracted by GNU tar: (MANIFEST's root, {url: member bytes})."""
    out = tempfile.mkdtemp(dir=work, prefix="tar-")
    r = subprocess.run(["tar", "-xzf", path, "-C", out], capture_output=True, timeout=60)
    assert r.returncode == 0, f"GNU tar: {r.stderr.decode()}"
    with open(os.path.join(out, "MANIFEST.xml"), "rb") as f:
        root = xml.dom.minidom.parseString(f.read()).documentElement
    got = {}
    for u in root.getElementsByTagName("url"):
        assert u.getAttribute("source"), u.toxml()
        if u.getAttribute("deleted") == "yes":
            continue
        assert u.getAttribute("path") and not u.getAttribute("missing"), f"no content: {u.toxml()}"
        # cu-tar's member name, as one LCC's (plugins/cu-tar/README.md): <pid>/<host>+<port>/<path>
        host_port, rel = u.getAttribute("c")[len("http://"):].split("/", 1)
        assert u.getAttribute("path") == f"{u.getAttribute('pid')}/{host_port.replace(':', '+')}/{rel}", u.toxml()
        with open(os.path.join(out, u.getAttribute("path")), "rb") as f:
            got[u.getAttribute("c")] = f.read()
    files = [os.path.join(d, n) for d, _, ns in os.walk(out) for n in ns if n != "MANIFEST.xml"]
    assert len(files) == len(got) and int(root.getAttribute("count")) == len(root.getElementsByTagName("url"))
    return root, got


def content_formats(a, b, c, ids, work, token):
    want = site_now([a, b, c])
    path = os.path.join(work, "merged.tar.gz")
    headers = fetch(a.url(), {"format": "tar.gz"}, path)
    assert headers["Content-Type"] == "application/gzip" and headers["X-LCC-Last-Seq"] == token, headers
    root, got = read_tar(path, work)
    assert root.getAttribute("last_seq") == token and got == want, sorted(set(got) ^ set(want))
    assert {u.getAttribute("source") for u in root.getElementsByTagName("url")} == set(ids.values())

    status, _, root = get(a.url(), {"format": "xml", "content": "yes"})
    assert status == 200 and root.getAttribute("last_seq") == token
    body = {u.getAttribute("c"): base64.b64decode(u.getElementsByTagName("content")[0].firstChild.data)
            for u in root.getElementsByTagName("url")}
    assert body == want, sorted(k for k in set(body) | set(want) if body.get(k) != want.get(k))

    warc = os.path.join(work, "merged.warc.gz")
    a.node.lcc("cu", "query", "--cu", a.url(), "--cu", b.url(), "--cu", c.url(), "--format", "warc.gz", "-o", warc)
    manifest = gzip_members(warc)[-1].split(b"\r\n\r\n", 1)[1].rstrip(b"\r\n")
    assert xml.dom.minidom.parseString(manifest).documentElement.getAttribute("last_seq") == token
    if shutil.which("node"):
        check_records(warcio_read(warc), want)
    else:
        print("warcio part skipped: node (Node.js) is not installed")
    incremental(a, b, c, ids, work, token)


def incremental(a, b, c, ids, work, token):
    """Changes on all three; tar.gz pages from `token` while C is stopped and after."""
    for x in (a, b, c):
        x.site.write(f"{x.name}/p3.html", f"<html>{x.name} again</html>\n".encode())
        x.site.write(f"{x.name}/p12.html", os.urandom(100_000))  # streamed, not one write
        os.remove(os.path.join(x.site.root, f"{x.name}/p4.html"))
        x.send()
    for x in (a, b, c):
        wait_stored(x, [f"{x.name}/p12.html"])
        wait_for(f"{x.name} removed p4", lambda x=x: x.own()[1][x.site.base + f"{x.name}/p4.html"][1])
    changes = set()
    for x in (a, b, c):
        src, recs = x.own()
        changes |= {(src, str(seq), url, "yes" if gone else "") for url, (seq, gone) in recs.items()
                    if seq > part_of(token, src)}
    c.node.stop()
    first = os.path.join(work, "inc1.tar.gz")
    r = a.node.lcc("cu", "query", "--cu", a.url(), "--cu", b.url(), "--cu", c.url(), "--format", "tar.gz",
                   "--deleted", "--since-seq", token, "-o", first)
    assert c.url() in r.stderr.decode(), r.stderr.decode()  # left out, said so
    root1, got1 = read_tar(first, work)
    c.node.start()
    second = os.path.join(work, "inc2.tar.gz")
    headers = fetch(a.url(), {"format": "tar.gz", "deleted": "yes", "since_seq": root1.getAttribute("last_seq")},
                    second)
    assert headers["X-LCC-Peers-Unreachable"] == "0", headers
    root2, got2 = read_tar(second, work)
    both = records(root1) + records(root2)
    assert len(both) == len(set(both)) and set(both) == changes, sorted(set(both) ^ changes)
    want = site_now([a, b, c])
    for url, data in list(got1.items()) + list(got2.items()):
        assert data == want[url], f"{url}: not the site's bytes"
    status, headers, root = get(a.url(), {"format": "xml", "deleted": "yes",
                                          "since_seq": root2.getAttribute("last_seq")})
    assert status == 200 and root.getAttribute("count") == "0" and headers["X-LCC-Peers-Unreachable"] == "0"


def records(root):
    return sorted((u.getAttribute("source"), u.getAttribute("seq"), u.getAttribute("c"), u.getAttribute("deleted"))
                  for u in root.getElementsByTagName("url"))


def part_of(token, source):
    """The seq of `source` in `token`, decoded as docs/protocol.md §3.4 describes it."""
    raw = base64.urlsafe_b64decode(token[3:] + "=" * (-len(token[3:]) % 4))[:-4]
    at = 0

    def varint():
        nonlocal at
        v = shift = 0
        while True:
            byte = raw[at]
            at += 1
            v |= (byte & 0x7f) << shift
            shift += 7
            if byte < 0x80:
                return v
    parts = {}
    for _ in range(varint()):
        n = varint()
        s = raw[at:at + n].decode()
        at += n
        parts[s] = varint()
    return parts.get(source, 0)


if __name__ == "__main__":
    main()
