#!/usr/bin/env python3
"""Content in an S3-compatible object store (issue 31 §1), end to end.

One real lccd with s3.endpoint pointing at the Ceph RADOS Gateway the ctest fixture
lcc_rgw_server started. A provider's full set goes in with `lcc cp send`; every body
must then be an object of the bucket under <machine>/<file> (read back with curl's own
SigV4), with no content file on the node's disk; the tar.gz, XML and WARC answers carry
the site's bytes (and, in the WARC, the response heads kept as object metadata) read
from the bucket; a removal deletes its object; `lcc botm sweep`
deletes a stray object nobody references and keeps the others. A second lccd starts
with its bucket missing: every PUT is refused, the fetches fail retryably and no record
is stored; once the bucket exists the QM's retries store every URL. Skips (one line)
without the gateway.
"""
import base64
import gzip
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pipeline_test as p  # noqa: E402

ENDPOINT = os.environ.get("LCC_TEST_S3_ENDPOINT")
ACCESS = "lcctest-access"  # the fixture's user (tests/CMakeLists.txt)
SECRET = "lcctest-secret-0123456789"
BUCKET = "lcc-e2e-pipeline"


def s3(method, key="", query="", body=None, md5=True):
    """One S3 request through curl's SigV4 (not our client): (HTTP status, body)."""
    url = f"{ENDPOINT}/{BUCKET}" + (f"/{key}" if key else "") + (f"?{query}" if query else "")
    cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30", "-X", method,
           "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS}:{SECRET}",
           "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", url]
    if body is not None:
        cmd[1:1] = ["--data-binary", "@-"]
        if md5:
            cmd[1:1] = ["-H", "Content-MD5: " + base64.b64encode(hashlib.md5(body).digest()).decode()]
    r = subprocess.run(cmd, input=body, capture_output=True, timeout=60, check=True)
    out, _, code = r.stdout.rpartition(b"\n")
    return int(code), out


def objects(prefix):
    """Every key under prefix with its bytes (ListObjectsV2, pages of 1000)."""
    code, xml_text = s3("GET", query=f"list-type=2&prefix={prefix.replace('/', '%2F')}")
    assert code == 200, xml_text[:300]
    doc = xml.dom.minidom.parseString(xml_text)
    assert doc.getElementsByTagName("IsTruncated")[0].firstChild.data == "false"
    keys = [k.firstChild.data for k in doc.getElementsByTagName("Key")]
    out = {}
    for k in keys:
        code, data = s3("GET", k)
        assert code == 200, (k, code)
        out[k] = data
    return out


def content_files(node):
    root = os.path.join(node.work, "var", "content")
    return [os.path.join(d, n) for d, _, names in os.walk(root) for n in names]


def run(lcc, site, work):
    for i in range(12):
        site.write(f"docs/page{i:02d}.html", (f"<html><body>page {i}</body></html>\n" * (i + 1)).encode())
    site.write("docs/big.html", os.urandom(3 << 20))  # more than one read and write buffer
    site.write("docs/notes.txt", b"plain text notes\n")
    code, _ = s3("PUT")
    assert code in (200, 409), code

    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    pid, password = m.group(1), m.group(2)
    state = os.path.join(work, "scan.state")
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
    lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
            "--full", "-", stdin=scan)
    expected = {site.base + k: v for k, v in p.site_files(site.root).items()}
    p.wait_for("all 14 URLs stored", lambda: int(lcc.query_xml().getAttribute("count")) == 14)

    # Every body is an object of machine m1 with exactly the site's bytes; none is on disk.
    stored = objects("m1/")
    assert sorted(stored.values()) == sorted(expected.values()), \
        f"{len(stored)} objects, {len(expected)} site files"
    assert all(re.fullmatch(r"m1/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]+", k) for k in stored), sorted(stored)
    assert content_files(lcc) == [], content_files(lcc)
    bot = lcc.status()["bot"]
    assert bot["s3_puts"] == 14 and bot["s3_put_failures"] == 0, bot

    # The answers read the bucket: tar.gz (URL order) and XML with content.
    assert p.tar_contents(lcc.query_tar("--provider", pid)) == expected
    root = lcc.query_xml("--content")
    got = {}
    for u in root.getElementsByTagName("url"):
        c = u.getElementsByTagName("content")[0]
        got[u.getAttribute("c")] = base64.b64decode("".join(t.data for t in c.childNodes if t.nodeType == t.TEXT_NODE))
    assert got == expected, sorted(set(got) ^ set(expected))

    # The WARC answer: each body with the response head the robot kept as the object's
    # metadata (a `response` record, its HTTP head first), read from the bucket.
    warc_path = os.path.join(work, "answer.warc.gz")
    lcc.lcc("cu", "query", "--cu", f"127.0.0.1:{lcc.ports['cu']}", "--format", "warc.gz", "-o", warc_path)
    with gzip.open(warc_path, "rb") as f:
        warc = f.read()
    responses = warc.count(b"WARC-Type: response\r\n")
    assert responses == 14, f"{responses} response records of 14 (heads from the objects' metadata)"
    assert warc.count(b"\r\n\r\nHTTP/1.0 200 OK\r\n") == 14, "a response record without its HTTP head"
    assert expected[site.base + "docs/page07.html"] in warc

    # A removal deletes its object.
    last_seq = int(lcc.query_xml().getAttribute("last_seq"))
    os.remove(os.path.join(site.root, "docs/page04.html"))
    scan2 = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
    lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password, "-",
            stdin=scan2)
    p.wait_for("the removal stored", lambda: any(
        u.getAttribute("deleted") == "yes"
        for u in lcc.query_xml("--since-seq", str(last_seq), "--deleted").getElementsByTagName("url")))
    del expected[site.base + "docs/page04.html"]
    p.wait_for("the removed page's object deleted", lambda: len(objects("m1/")) == 13)
    assert sorted(objects("m1/").values()) == sorted(expected.values())

    # The orphan sweep lists the bucket: a stray object under a name nobody references goes.
    code, _ = s3("PUT", "m1/00/ff/fff0", body=b"stray bytes")
    assert code == 200, code
    swept = lcc.lcc("botm", "sweep", "--wait", "60").stdout.decode()
    assert "1 orphan" in swept, swept
    assert s3("GET", "m1/00/ff/fff0")[0] == 404, "the stray object is still there"
    assert sorted(objects("m1/").values()) == sorted(expected.values()), "the sweep removed referenced objects"
    lcc.stop()


def run_retry(lcc, site, work):
    """PUTs that fail (the bucket is not there yet: 404) answer the fetch 140, which the
    QM retries; no record is stored meanwhile. Once the bucket exists every URL is."""
    for i in range(3):
        site.write(f"r/page{i}.html", f"<html>retry {i}</html>\n".encode())
    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    pid, password = m.group(1), m.group(2)
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", os.path.join(work, "r.state")).stdout
    lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
            "--full", "-", stdin=scan)
    p.wait_for("PUTs refused", lambda: lcc.status()["bot"]["s3_put_failures"] >= 3)
    assert int(lcc.query_xml().getAttribute("count")) == 0, "a record names an object that is not there"
    code, _ = s3("PUT")
    assert code == 200, code
    p.wait_for("the retries stored", lambda: int(lcc.query_xml().getAttribute("count")) == 3, timeout=90)
    expected = {site.base + k: v for k, v in p.site_files(site.root).items()}
    assert sorted(objects("m1/").values()) == sorted(expected.values())
    assert p.tar_contents(lcc.query_tar("--provider", pid)) == expected
    lcc.stop()


def with_node(args, name, bucket, extra, body):
    """body(lcc, site, work) with one lccd whose content goes to `bucket` (the bucket
    s3() and objects() use)."""
    global BUCKET
    BUCKET = bucket
    work = tempfile.mkdtemp(prefix=f"lcc-{name}-")
    secret = os.path.join(work, "s3.secret")
    with open(secret, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(secret, 0o600)
    extra = f"""s3:
  endpoint: {ENDPOINT}
  bucket: {BUCKET}
  access_key: {ACCESS}
  secret_key_file: {secret}
""" + extra
    site = p.Site(os.path.join(work, "site"))
    lcc = p.Node(args, work, extra=extra)
    p.run_guarded(lcc, site, work, lambda: body(lcc, site, work))


def main():
    if not ENDPOINT:
        print("SKIP: " + os.environ.get("LCC_TEST_S3_MISSING", "no object store (fixture lcc_rgw_server)"))
        return 77
    args = p.e2e_args()
    with_node(args, "s3", "lcc-e2e-pipeline", "", run)
    # A bucket nobody made yet; retries come fast here (qm.retry_delay).
    with_node(args, "s3-retry", "lcc-e2e-retry", "qm:\n  retry_delay: 1s\n  max_retries: 100\n", run_retry)
    print("e2e s3_pipeline: 2 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
