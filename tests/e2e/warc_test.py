#!/usr/bin/env python3
"""End-to-end test of the WARC answer (issue 16 §3, plugins/cu-warc).

A site on 127.0.0.1 is fetched by a real lccd (fetch-curl), exported with
`lcc cu query --format warc.gz`, and read by an independent reader, warcio (npm, under
Node.js; scripts/deps.sh installs it in /usr/local/lib/lcc-npm): every record must be
read and every digest must match the SHA-1 recomputed over what warcio read. Python's
zlib checks that each record is its own gzip member. The structure is compared with
the WARC `wget --warc-file` writes for the same URLs: response records for the same
URLs, the same payload digests, the same HTTP status lines and header names in the
same order, WARC fields in wget's order. Then a record whose stored head is gone (the
content file's attribute, or its side file where the file system refused the
attribute; as for content fetched before heads were kept) becomes a `resource` record,
and a removal appears in the manifest only.
Skipped (exit 77) only when node is not installed.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import xml.dom.minidom
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import DEADLINE, run_with_site_and_node, site_files, wait_for  # noqa: E402
from response_heads import HEAD_ATTRIBUTE, stored_head, takes_attributes  # noqa: E402

NPM_PREFIX = os.environ.get("LCC_NPM_PREFIX", "/usr/local/lib/lcc-npm")
HERE = os.path.dirname(os.path.abspath(__file__))


def sha1_b32(data):
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def warcio_read(path):
    """Every record as warcio reads it (tests/e2e/warc_verify.mjs)."""
    r = subprocess.run(["node", os.path.join(HERE, "warc_verify.mjs"), NPM_PREFIX, path],
                       capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0, f"warcio could not read {path}: {r.stderr.decode()}"
    return json.loads(r.stdout)["records"]


def gzip_members(path):
    """Each gzip member inflated on its own (zlib), as a reader seeking to a record does."""
    with open(path, "rb") as f:
        data = f.read()
    members = []
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        members.append(d.decompress(data) + d.flush())
        assert d.eof, "a gzip member is truncated"
        data = d.unused_data
    return members


def wget_warc(work, urls):
    """What wget writes for the same URLs (no recursion, no robots.txt)."""
    listing = os.path.join(work, "urls.txt")
    with open(listing, "w") as f:
        f.write("\n".join(urls) + "\n")
    base = os.path.join(work, "wget")
    r = subprocess.run(["wget", "-q", "-e", "robots=off", "--no-warc-compression", "--warc-file", base, "-i", listing,
                        "-P", os.path.join(work, "wget-files")], capture_output=True, timeout=DEADLINE)
    assert r.returncode == 0, f"wget failed: {r.stderr.decode()}"
    return base + ".warc"


def is_subsequence(short, long):
    it = iter(long)
    return all(name in it for name in short)


def check_records(ours, expected):
    """Every record read with both digests right; warcinfo first, the manifest last."""
    for rec in ours:
        assert rec["block_ok"] is True, f"block digest of {rec['type']} {rec['target']}: {rec}"
        if rec["type"] in ("response", "resource"):
            assert rec["payload_ok"] is True, f"payload digest of {rec['target']}: {rec}"
    assert ours[0]["type"] == "warcinfo", ours[0]
    assert ours[-1]["type"] == "metadata" and ours[-1]["target"] == "metadata://lococa.org/lcc/MANIFEST.xml", ours[-1]
    content = {r["target"]: r for r in ours if r["type"] in ("response", "resource")}
    assert set(content) == set(expected), f"records differ: {sorted(set(content) ^ set(expected))}"
    for url, data in expected.items():
        assert content[url]["payload_sha1"] == sha1_b32(data), f"payload of {url} is not the site's bytes"
    return content


def compare_with_wget(info, ours, theirs):
    """Same URLs, payloads, HTTP heads (names, order) and WARC field order as wget."""
    responses = {r["target"]: r for r in theirs if r["type"] == "response"}
    wget_fields = next(r["fields"] for r in theirs if r["type"] == "response")
    for url, rec in ours.items():
        assert rec["type"] == "response", f"{url} is a {rec['type']} record"
        w = responses[url]
        assert rec["payload_digest"] == w["payload_digest"], f"{url}: {rec['payload_digest']} != {w['payload_digest']}"
        assert rec["status_line"] == w["status_line"], (rec["status_line"], w["status_line"])
        assert rec["http_fields"] == w["http_fields"], (rec["http_fields"], w["http_fields"])
        assert rec["content_type"].replace(" ", "") == w["content_type"].replace(" ", "")
        assert is_subsequence(rec["fields"], wget_fields), (rec["fields"], wget_fields)
    wget_info = next(r for r in theirs if r["type"] == "warcinfo")
    assert theirs[0] is wget_info
    assert is_subsequence(info["fields"], wget_info["fields"]), (info["fields"], wget_info["fields"])


def one_record_each(members):
    """Each gzip member holds exactly one record: its WARC header, Content-Length bytes, CRLF CRLF."""
    for mb in members:
        assert mb.startswith(b"WARC/1.1\r\n"), mb[:40]
        head, _, rest = mb.partition(b"\r\n\r\n")
        length = int(re.search(rb"\r\nContent-Length: (\d+)\r\n", head + b"\r\n").group(1))
        assert len(rest) == length + 4 and rest.endswith(b"\r\n\r\n"), "a member is not one record"


def stored_heads(content_dir):
    """(content file, "attribute" or "side file", stored bytes) of every head the robot kept."""
    out = []
    for d, _, names in os.walk(content_dir):
        for n in sorted(names):
            head = None if n.endswith(".http") else stored_head(os.path.join(d, n))
            if head:
                out.append((os.path.join(d, n),) + head)
    return out


def run(lcc, site, work):
    for i in range(8):
        site.write(f"docs/page{i}.html", (f"<html><body>page {i}</body></html>\n" * (i + 1)).encode())
    site.write("docs/notes.txt", b"plain text notes\n")
    site.write("docs/data.pdf", os.urandom(200_000))
    site.write("docs/sub/deep.html", b"<html>deep</html>\n")

    lcc.start()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode())
    assert m
    pid, password = m.group(1), m.group(2)
    state = os.path.join(work, "scan.state")
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
    send = ["cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password]
    lcc.lcc(*send, "--full", "-", stdin=scan)
    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    wait_for("all URLs stored", lambda: int(lcc.query_xml().getAttribute("count")) == len(expected))

    out = os.path.join(work, "answer.warc.gz")
    lcc.lcc("cu", "query", "--cu", f"127.0.0.1:{lcc.ports['cu']}", "--format", "warc.gz", "-o", out)
    members = gzip_members(out)
    one_record_each(members)
    ours = warcio_read(out)
    assert len(members) == len(ours) == len(expected) + 2, (len(members), len(ours))
    content = check_records(ours, expected)
    compare_with_wget(ours[0], content, warcio_read(wget_warc(work, sorted(expected))))

    # The same answer over HTTP (GET /cu/query?format=warc.gz).
    with urllib.request.urlopen(f"http://127.0.0.1:{lcc.ports['http']}/cu/query?format=warc.gz",
                                timeout=DEADLINE) as r:
        assert r.headers["Content-Type"] == "application/gzip", r.headers["Content-Type"]
        over_http = os.path.join(work, "http.warc.gz")
        with open(over_http, "wb") as f:
            f.write(r.read())
    check_records(warcio_read(over_http), expected)

    # Content without its head (as fetched before heads were kept): a resource record.
    heads = stored_heads(os.path.join(lcc.work, "var", "content"))
    assert len(heads) == len(expected), heads
    if takes_attributes(os.path.join(lcc.work, "var")):  # these heads are a few hundred bytes: they fit
        assert all(where == "attribute" for _, where, _ in heads), [(p, w) for p, w, _ in heads]
    path, where, stored = heads[0]
    head_url_md5 = stored.split(b"\n", 1)[0].split()[-1].decode()
    if where == "attribute":
        os.removexattr(path, HEAD_ATTRIBUTE)
    else:
        os.remove(path + ".http")
    lcc.lcc("cu", "query", "--cu", f"127.0.0.1:{lcc.ports['cu']}", "--format", "warc.gz", "-o", out)
    again = check_records(warcio_read(out), expected)
    resources = [u for u, r in again.items() if r["type"] == "resource"]
    assert len(resources) == 1, resources
    assert hashlib.md5(expected[resources[0]]).hexdigest() == head_url_md5
    last_seq = int(lcc.query_xml().getAttribute("last_seq"))

    # A removal: in the manifest only.
    os.remove(os.path.join(site.root, "docs/page2.html"))
    lcc.lcc(*send, "-", stdin=lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout)
    gone = site.base + "docs/page2.html"
    wait_for("the removal stored", lambda: gone in [u.getAttribute("c") for u in lcc.query_xml(
        "--since-seq", str(last_seq), "--deleted").getElementsByTagName("url")])
    lcc.lcc("cu", "query", "--cu", f"127.0.0.1:{lcc.ports['cu']}", "--format", "warc.gz", "--deleted",
            "--since-seq", str(last_seq), "-o", out)
    delta = warcio_read(out)
    assert [r["type"] for r in delta] == ["warcinfo", "metadata"], [r["type"] for r in delta]
    assert all(r["block_ok"] for r in delta)
    manifest = gzip_members(out)[-1].split(b"\r\n\r\n", 1)[1].rstrip(b"\r\n")
    urls = xml.dom.minidom.parseString(manifest).getElementsByTagName("url")
    assert [(u.getAttribute("c"), u.getAttribute("deleted")) for u in urls] == [(gone, "yes")], manifest
    lcc.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    if shutil.which("node") is None:
        print("SKIP: node (Node.js) is not installed; scripts/deps.sh installs it and warcio")
        sys.exit(77)
    if not os.path.isfile(os.path.join(NPM_PREFIX, "node_modules", "warcio", "package.json")):
        sys.exit(f"warcio is not installed in {NPM_PREFIX}: run scripts/deps.sh")
    if shutil.which("wget") is None:
        sys.exit("wget is not installed: run scripts/deps.sh")
    run_with_site_and_node(args, "warc", run)


if __name__ == "__main__":
    main()
