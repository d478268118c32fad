#!/usr/bin/env python3
"""`lcc cp sitemap` against sitemaps served by a real HTTP server on 127.0.0.1.

The site has a sitemap index listing a gzip sitemap and a plain one. Checked:
  - every page comes out once as <url c m mt/>, index followed, .xml.gz read,
    URLs in normal form, MIME from the extension (text/html without one);
  - --since keeps pages whose lastmod is at or after it (and pages without lastmod);
  - --state: the second run prints nothing; after a change, only the changed page,
    a new page, and a removed page as op="delete";
  - a listed sitemap that cannot be fetched ends with exit 2, no output, and the state
    file as it was;
  - an index that lists a local path is refused (what an index lists is fetched,
    never opened as a file);
  - a local .xml file works as the source.
"""
import argparse
import gzip
import http.server
import os
import subprocess
import sys
import tempfile
import threading

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(pages):
    body = "".join(f"<url><loc>{loc}</loc>{f'<lastmod>{lm}</lastmod>' if lm else ''}</url>\n"
                   for loc, lm in pages)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{body}</urlset>\n'


def index(locs):
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = lambda *a, **kw: Quiet(*a, directory=root, **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def write(root, name, text, gz=False):
    data = text.encode()
    with open(os.path.join(root, name), "wb") as f:
        f.write(gzip.compress(data) if gz else data)


def lcc(binary, *args, want=0):
    p = subprocess.run([binary, "cp", "sitemap", *args], capture_output=True, timeout=60)
    assert p.returncode == want, f"exit {p.returncode}, wanted {want}: {p.stderr.decode()}"
    return p.stdout.decode(), p.stderr.decode()


def lines(out):
    return sorted(ln for ln in out.splitlines() if ln)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    binary = os.path.join(ap.parse_args().bin, "lcc")
    with tempfile.TemporaryDirectory(prefix="lcc-sitemap-") as work:
        root = os.path.join(work, "site")
        os.makedirs(root)
        server = serve(root)
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        write(root, "index.xml", index([base + "s1.xml.gz", base + "s2.xml"]))
        write(root, "s1.xml.gz", urlset([(base + "docs/a.html", "2024-05-01"),
                                         (base + "docs/../docs/b.pdf", "2024-06-01T10:00:00Z")]), gz=True)
        write(root, "s2.xml", urlset([("HTTP" + base[4:] + "about", None)]))
        state = os.path.join(work, "sitemap.state")

        out, _ = lcc(binary, base + "index.xml")
        assert lines(out) == sorted([
            f'<url c="{base}docs/a.html" m="text/html" mt="2024-05-01T00:00:00Z"/>',
            f'<url c="{base}docs/b.pdf" m="application/pdf" mt="2024-06-01T10:00:00Z"/>',
            f'<url c="{base}about" m="text/html"/>',
        ]), out

        out, _ = lcc(binary, base + "index.xml", "--since", "2024-05-15")
        assert lines(out) == sorted([
            f'<url c="{base}docs/b.pdf" m="application/pdf" mt="2024-06-01T10:00:00Z"/>',
            f'<url c="{base}about" m="text/html"/>',
        ]), out

        first, _ = lcc(binary, base + "index.xml", "--state", state)
        assert len(lines(first)) == 3, first
        again, _ = lcc(binary, base + "index.xml", "--state", state)
        assert again == "", again
        write(root, "s1.xml.gz", urlset([(base + "docs/a.html", "2024-07-01"),
                                         (base + "docs/c.txt", "2024-07-02")]), gz=True)
        changed, _ = lcc(binary, base + "index.xml", "--state", state)
        assert lines(changed) == sorted([
            f'<url c="{base}docs/a.html" m="text/html" mt="2024-07-01T00:00:00Z"/>',
            f'<url c="{base}docs/c.txt" m="text/plain" mt="2024-07-02T00:00:00Z"/>',
            f'<url c="{base}docs/b.pdf" m="application/pdf" op="delete"/>',
        ]), changed

        with open(state) as f:
            kept = f.read()
        write(root, "index.xml", index([base + "s1.xml.gz", base + "gone.xml"]))
        out, err = lcc(binary, base + "index.xml", "--state", state, want=2)
        assert out == "" and "gone.xml: HTTP status 404" in err, (out, err)
        with open(state) as f:
            assert f.read() == kept, "a failed run changed the state file"

        write(root, "index.xml", index([os.path.join(root, "s2.xml")]))
        out, err = lcc(binary, base + "index.xml", want=2)
        assert out == "" and "not an http(s) URL" in err, (out, err)

        local = os.path.join(work, "local.xml")
        write(work, "local.xml", urlset([(base + "x.html", None)]))
        out, _ = lcc(binary, local)
        assert lines(out) == [f'<url c="{base}x.html" m="text/html"/>'], out
        server.shutdown()
    print("sitemap cli: ok")


if __name__ == "__main__":
    sys.exit(main())
