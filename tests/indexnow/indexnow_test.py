#!/usr/bin/env python3
"""IndexNow in: curl sends the requests of the IndexNow documentation to a real lccd.

A site on 127.0.0.1 is a provider of the LCC and publishes its key file. Checked:
  - the documented GET (url, key) is answered 202 and the page is fetched and exported;
  - the documented POST (host, key, keyLocation, urlList) likewise, for every URL;
  - a key file that holds another key, or none, is 403 with one answer for both; a wrong
    key is not fetched again at once (the site sees one request for it);
  - bad JSON and more than 10,000 URLs are 400; a URL of another host, or outside the
    key file's folder, is 422; a URL under no provider is 403 (indexnow.register off);
  - past indexnow.requests_per_minute the site gets 429 with Retry-After;
  - /metrics counts the accepted lists and URLs;
  - with indexnow.register: auto, a verified site under no provider gets one for the
    key file's folder, and a folder that overlaps another provider's prefix does not;
  - a pinged URL that was stored and now answers 404 or 410 is removed (a tombstone in
    the CU query, gone from the export, no entry in the provider's error list), while a
    CP's own op="update" that ends in 404 is still a fetch error.
"""
import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, QuietHandler, Site, run_guarded, wait_for  # noqa: E402

KEY = "7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5"


def curl(*args):
    """(status, body) of a curl request; curl is the independent client."""
    p = subprocess.run(["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30", *args],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    body, _, code = p.stdout.decode().rpartition("\n")
    return int(code), body


def post(endpoint, doc, path="/IndexNow"):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))
        f.flush()
        return curl("-X", "POST", "-H", "Content-Type: application/json; charset=utf-8",
                    "--data-binary", "@" + f.name, endpoint + path)


def exported_urls(node):
    return {u.getAttribute("c") for u in node.query_xml().getElementsByTagNameNS("*", "url")
            if u.getAttribute("deleted") != "yes"}


def run(node, site, work):
    for name in ("product.html", "url1.html", "folder/url2.html", "url3.html", "docs/a.html", "other/b.html"):
        site.write(name, f"<html>{name}</html>\n".encode())
    site.write(f"{KEY}.txt", (KEY + "\n").encode())
    site.write("docs/docs-key.txt", b"docskey-1234\n")
    node.start()
    node.lcc("provider", "add", "--prefix", site.base)
    endpoint = f"http://127.0.0.1:{node.ports['http']}"
    host = "127.0.0.1"

    code, body = curl(f"{endpoint}/indexnow?url={site.base}product.html&key={KEY}")
    assert code == 202, (code, body)
    wait_for("the GET's page", lambda: f"{site.base}product.html" in exported_urls(node))

    doc = {"host": host, "key": KEY, "keyLocation": f"{site.base}{KEY}.txt",
           "urlList": [f"{site.base}url1.html", f"{site.base}folder/url2.html", f"{site.base}url3.html"]}
    code, body = post(endpoint, doc)
    assert code == 202 and "accepted 3 URLs" in body, (code, body)
    wait_for("the POST's pages", lambda: {f"{site.base}url1.html", f"{site.base}folder/url2.html",
                                          f"{site.base}url3.html"} <= exported_urls(node))

    # A key the site does not publish: its key file is missing (404), then remembered.
    wrong = "0000aaaa1111bbbb"
    for _ in range(2):
        code, body = curl(f"{endpoint}/indexnow?url={site.base}url1&key={wrong}")
        assert code == 403 and body == f"the key could not be verified at {site.base}{wrong}.txt\n", (code, body)
    # A key file that holds another key.
    site.write("docs/docs-key.txt", b"another-key-5678\n")
    code, body = post(endpoint, {"host": host, "key": "docskey-1234", "keyLocation": f"{site.base}docs/docs-key.txt",
                                 "urlList": [f"{site.base}docs/a.html"]})
    assert code == 403 and body == f"the key could not be verified at {site.base}docs/docs-key.txt\n", (code, body)

    assert post(endpoint, "{not json")[0] == 400
    assert post(endpoint, {"host": host, "key": KEY, "urlList": [f"{site.base}url1"] * 10001})[0] == 400
    code, body = post(endpoint, {"host": host, "key": KEY, "urlList": ["http://other.example/x"]})
    assert code == 422, (code, body)
    code, body = post(endpoint, {"host": host, "key": KEY, "keyLocation": f"{site.base}docs/{KEY}.txt",
                                 "urlList": [f"{site.base}other/b.html"]})
    assert code == 422 and "outside the folder" in body, (code, body)

    with urllib.request.urlopen(f"{endpoint}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert re.search(r"^lcc_indexnow_submissions_total 2$", metrics, re.M), metrics
    assert re.search(r"^lcc_indexnow_urls_total 4$", metrics, re.M), metrics
    assert re.search(r"^lcc_indexnow_key_fetches_total 3$", metrics, re.M), metrics  # the wrong key once

    # Past the per-site rate (requests_per_minute: 12 in this test).
    codes = [curl(f"{endpoint}/indexnow?url={site.base}url1&key={KEY}")[0] for _ in range(12)]
    assert codes[-1] == 429 and 202 in codes, codes
    p = subprocess.run(["curl", "-s", "-D", "-", "-o", "/dev/null", "--max-time", "30",
                        f"{endpoint}/indexnow?url={site.base}url1&key={KEY}"], capture_output=True, timeout=60)
    assert re.search(rb"(?i)^retry-after: \d+", p.stdout, re.M), p.stdout


class GoneHandler(QuietHandler):
    """Answers 410 Gone for a file next to which '<name>.gone' exists."""

    def send_head(self):
        if os.path.exists(self.translate_path(self.path) + ".gone"):
            self.send_error(410)
            return None
        return super().send_head()


def admin_get(node, path):
    with open(os.path.join(node.work, "var", "admin.token")) as f:
        token = f.read().strip()
    request = urllib.request.Request(f"http://127.0.0.1:{node.ports['http']}{path}",
                                     headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.load(r)


def run_gone(node, site, work):
    """IndexNow's "deleted" is settled by the fetch: 404 and 410 remove the URL."""
    site.server.RequestHandlerClass = functools.partial(GoneHandler, directory=site.root)
    for name in ("a.html", "b.html", "c.html"):
        site.write(name, f"<html>{name}</html>\n".encode())
    site.write(f"{KEY}.txt", KEY.encode())
    node.start()
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    pid, password = m.group(1), m.group(2)
    endpoint = f"http://127.0.0.1:{node.ports['http']}"
    urls = [f"{site.base}a.html", f"{site.base}b.html", f"{site.base}c.html"]
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "urlList": urls})
    assert code == 202, (code, body)
    wait_for("the three pages", lambda: set(urls) <= exported_urls(node))

    os.remove(os.path.join(site.root, "a.html"))         # 404
    site.write("b.html.gone", b"")                       # 410
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "urlList": urls[:2]})
    assert code == 202, (code, body)

    def removed():
        deleted = {u.getAttribute("c") for u in node.query_xml("--deleted").getElementsByTagNameNS("*", "url")
                   if u.getAttribute("deleted") == "yes"}
        return set(urls[:2]) <= deleted

    wait_for("the 404 and the 410 as removals", removed)
    assert exported_urls(node) == {urls[2]}, exported_urls(node)
    # A CP's own update that ends in 404 is still an error of the provider.
    sent = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password,
                    "-", stdin=f'<url c="{site.base}cp-missing.html" m="text/html"/>\n'.encode())
    assert b"accepted 1 of 1" in sent.stdout, sent.stdout
    wait_for("the CP's 404 as an error", lambda: admin_get(node, f"/admin/providers/{pid}")["errors"])
    errors = admin_get(node, f"/admin/providers/{pid}")["errors"]
    assert [(e["url"], e["code"]) for e in errors] == [(f"{site.base}cp-missing.html", 301)], errors
    with urllib.request.urlopen(f"{endpoint}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert re.search(r"^lcc_qm_gone_at_site_total 2$", metrics, re.M), metrics


def run_unowned(node, site, work):
    """A site whose pages lie under no provider: 403 while indexnow.register is off."""
    site.write(f"{KEY}.txt", KEY.encode())
    site.write("x.html", b"x")
    node.start()
    node.lcc("provider", "add", "--prefix", site.base + "docs/")
    code, body = curl(f"http://127.0.0.1:{node.ports['http']}/indexnow?url={site.base}x.html&key={KEY}")
    assert code == 403 and "belongs to no provider" in body, (code, body)


def run_auto(node, site, work):
    """indexnow.register: auto: a verified site under no provider gets one, scoped to the
    key file's folder; a folder another provider's prefix overlaps does not."""
    site.write("blog/key-file.txt", KEY.encode())
    site.write("blog/post.html", b"<html>post</html>")
    site.write(f"{KEY}.txt", KEY.encode())
    node.start()
    node.lcc("provider", "add", "--prefix", site.base + "docs/")
    endpoint = f"http://127.0.0.1:{node.ports['http']}"
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "keyLocation": f"{site.base}blog/key-file.txt",
                                 "urlList": [f"{site.base}blog/post.html"]})
    assert code == 202, (code, body)
    with open(os.path.join(node.work, "var", "admin.token")) as f:
        token = f.read().strip()
    request = urllib.request.Request(f"{endpoint}/admin/providers", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=10) as r:
        providers = json.load(r)["providers"]
    made = [p for p in providers if p["prefixes"] == [f"{site.base}blog/"]]
    assert len(made) == 1 and made[0]["state"] == "active", providers
    wait_for("the post fetched", lambda: f"{site.base}blog/post.html" in exported_urls(node))
    # The whole host overlaps provider 1's /docs/: no provider is made.
    code, body = curl(f"{endpoint}/indexnow?url={site.base}other.html&key={KEY}")
    assert code == 403 and "overlapping prefix" in body, (code, body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    for body, extra in ((run, "indexnow:\n  requests_per_minute: 12\n"), (run_gone, ""), (run_unowned, ""),
                        (run_auto, "indexnow:\n  register: auto\n")):
        work = tempfile.mkdtemp(prefix="lcc-indexnow-")
        site = Site(os.path.join(work, "site"))
        node = Node(args, work, extra=extra)
        run_guarded(node, site, work, lambda: body(node, site, work))
    print("indexnow: ok")


if __name__ == "__main__":
    sys.exit(main())
