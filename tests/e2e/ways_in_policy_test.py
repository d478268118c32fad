#!/usr/bin/env python3
"""Every way in obeys the node's rules (issue 25), against a real lccd.

A site on 127.0.0.1 logs every request it gets (its access log). The node accepts
text, PDF and XML (accept_mime). Checked:
  - IndexNow: a POST naming good.html, img.png, tool.exe and page.html (which the site
    serves as application/x-msdownload) is answered 202 naming img.png and tool.exe
    with 203; the site never sees a request for those two; good.html is stored;
    page.html is fetched but refused (307 in the provider's errors) and not stored.
    A POST whose URLs are all refused is 422 and its key file is never asked for.
  - Sitemap polling: the same four pages listed in a provider's sitemap: img.png and
    tool.exe are never requested and are the provider's errors with 203, page.html
    with 307; only good.html is stored.
  - A sitemap of 5,000 pages (more than the QM holds before it journals a set in parts)
    is queued whole, and the QM goes on.
  - The forger: an IndexNow ping for URLs no provider covers, with keyLocation at a
    127.0.0.1 port the test listens on, is answered 403 without any connection to
    that port, and the answer is byte-identical to the one once the port is closed.
    For a covered site, a key file holding another key and a closed port get the
    same answer.
  - indexnow.register: auto: a new site's img.png and tool.exe are refused and never
    requested, good.html is stored under the provider made; a ping whose URLs are all
    refused makes no provider and fetches no key file.
"""
import functools
import json
import os
import re
import socket
import sys
import tempfile
import threading
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "indexnow"))
from pipeline_test import Node, QuietHandler, Site, e2e_args, run_guarded, wait_for  # noqa: E402
from indexnow_test import admin_get, curl, exported_urls, post  # noqa: E402

KEY = "7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5"
ACCESS = []
ACCESS_LOCK = threading.Lock()
PAGES = ("good.html", "img.png", "tool.exe", "page.html")


class LoggingHandler(QuietHandler):
    """The site: logs every path asked for; serves page.html as a Windows program."""

    def send_head(self):
        with ACCESS_LOCK:
            ACCESS.append(self.path)
        return super().send_head()

    def guess_type(self, path):
        return "application/x-msdownload" if path.endswith("page.html") else super().guess_type(path)


def asked(path):
    with ACCESS_LOCK:
        return ACCESS.count(path)


def write_pages(site, folder):
    site.write(f"{folder}/good.html", b"<html>good</html>\n")
    site.write(f"{folder}/img.png", b"\x89PNG\r\n\x1a\n")
    site.write(f"{folder}/tool.exe", b"MZ\x90\x00")
    site.write(f"{folder}/page.html", b"MZ\x90\x00 a program named like a page")


def add_provider(node, prefix):
    out = node.lcc("provider", "add", "--prefix", prefix).stdout.decode()
    return re.fullmatch(r"id=(\d+) password=\S+\n", out).group(1)


def error_codes(node, pid):
    return {e["url"]: e["code"] for e in admin_get(node, f"/admin/providers/{pid}")["errors"]}


def check_refused_and_stored(node, site, folder, pid, sitemap=False):
    """good.html stored; img.png and tool.exe never asked for; page.html asked for once
    and refused with 307. A sitemap's refusals are the provider's errors too (203);
    IndexNow's are in its answer."""
    base = site.base + folder + "/"
    wait_for(f"{folder}/good.html stored", lambda: base + "good.html" in exported_urls(node))
    want = {base + "page.html": 307}
    if sitemap:
        want.update({base + "img.png": 203, base + "tool.exe": 203})
    wait_for(f"{folder}'s refusals among the provider's errors", lambda: error_codes(node, pid) == want)
    assert asked(f"/{folder}/img.png") == 0 and asked(f"/{folder}/tool.exe") == 0, ACCESS
    assert asked(f"/{folder}/page.html") == 1, ACCESS
    stored = exported_urls(node)
    assert not {base + "img.png", base + "tool.exe", base + "page.html"} & stored, stored


def run_indexnow_and_sitemap(node, site):
    site.server.RequestHandlerClass = functools.partial(LoggingHandler, directory=site.root)
    write_pages(site, "in")
    write_pages(site, "sm")
    site.write(f"in/{KEY}.txt", KEY.encode())
    node.start()
    endpoint = f"http://127.0.0.1:{node.ports['http']}"

    # IndexNow.
    pid_in = add_provider(node, site.base + "in/")
    urls = [f"{site.base}in/{name}" for name in PAGES]
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "keyLocation": f"{site.base}in/{KEY}.txt",
                                 "urlList": urls})
    assert code == 202, (code, body)
    assert body.startswith("accepted 2 of 4 URLs; refused 2:\n"), body
    assert f"203 {site.base}in/img.png: mime type not accepted (image/png)" in body, body
    assert f"203 {site.base}in/tool.exe: mime type not accepted (application/octet-stream)" in body, body
    check_refused_and_stored(node, site, "in", pid_in)
    # Nothing left: 422, and the (other) key file is not asked for.
    code, body = post(endpoint, {"host": "127.0.0.1", "key": "another-key-5678",
                                 "keyLocation": f"{site.base}in/other-key.txt",
                                 "urlList": [f"{site.base}in/img.png", f"{site.base}in/tool.exe"]})
    assert code == 422 and body.startswith("no URL accepted; refused 2:\n"), (code, body)
    assert asked("/in/other-key.txt") == 0, ACCESS

    # Sitemap polling.
    pid_sm = add_provider(node, site.base + "sm/")
    listing = "".join(f"<url><loc>{site.base}sm/{name}</loc></url>" for name in PAGES)
    site.write("sm/sitemap.xml", f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{listing}</urlset>'
               .encode())
    node.lcc("provider", "set", pid_sm, "--sitemap", site.base + "sm/sitemap.xml", "--sitemap-interval", "1s")
    check_refused_and_stored(node, site, "sm", pid_sm, sitemap=True)
    run_large_sitemap(node, site)
    run_forger(node, site, endpoint)


def run_large_sitemap(node, site):
    """A sitemap of more URLs than the QM holds in memory (4096) goes to the QM as one
    set that is journaled and applied in parts (its notices' op is "check"): all of it
    is queued and the QM goes on. The provider's bandwidth (1 byte/s) keeps its fetches
    to a few, so the test waits for the queue, not for 5,000 polite fetches."""
    n = 5000
    for i in range(n):
        site.write(f"big/p{i}.html", b"<html>%d</html>\n" % i)
    pid = add_provider(node, site.base + "big/")
    node.lcc("provider", "set", pid, "--bandwidth", "1")
    before = node.status()["qm"]["urls_absorbed"]
    listing = "".join(f"<url><loc>{site.base}big/p{i}.html</loc></url>" for i in range(n))
    site.write("big/sitemap.xml", f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{listing}</urlset>'
               .encode())
    node.lcc("provider", "set", pid, "--sitemap", site.base + "big/sitemap.xml", "--sitemap-interval", "1s")
    wait_for(f"the {n} URLs of a large sitemap queued",
             lambda: node.status()["qm"]["urls_absorbed"] >= before + n or node.status()["qm"]["failed"])
    qm = node.status()["qm"]
    assert not qm["failed"] and not qm["cache_crash"], qm


def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    s.setblocking(False)
    return s


def connections(s):
    """Connections the kernel completed on `s` (accepted now, without waiting)."""
    n = 0
    while True:
        try:
            c, _ = s.accept()
        except BlockingIOError:
            return n
        c.close()
        n += 1


def run_forger(node, site, endpoint):
    # Uncovered: no provider has 127.0.0.1:<port>/. The answer comes after any key
    # fetch would have been made, so the backlog tells whether the LCC connected.
    trap = listener()
    port = trap.getsockname()[1]
    ping = {"host": f"127.0.0.1:{port}", "key": KEY, "keyLocation": f"http://127.0.0.1:{port}/admin/probe.txt",
            "urlList": [f"http://127.0.0.1:{port}/admin/x.html"]}
    open_answer = post(endpoint, ping)
    assert connections(trap) == 0, "the LCC connected to a port no provider covers"
    trap.close()
    closed_answer = post(endpoint, ping)
    assert open_answer[0] == 403 and open_answer == closed_answer, (open_answer, closed_answer)

    # Covered (provider for the port's site): another key in the file, then a closed port.
    other = Site(os.path.join(site.root, "..", "other-site"))
    other.write("k.txt", b"someone-elses-key\n")
    other.write("a.html", b"<html>a</html>")
    add_provider(node, other.base)
    def ping(key):  # another key each time: a key found wrong is remembered per key
        return post(endpoint, {"host": f"127.0.0.1:{other.port}", "key": key, "keyLocation": f"{other.base}k.txt",
                               "urlList": [f"{other.base}a.html"]})

    wrong_key = ping("first-key-1234")
    other.stop()
    other.server.server_close()
    closed_port = ping("second-key-5678")
    assert wrong_key == closed_port == (403, f"the key could not be verified at {other.base}k.txt\n"), \
        (wrong_key, closed_port)


def run_auto(node, site):
    site.server.RequestHandlerClass = functools.partial(LoggingHandler, directory=site.root)
    write_pages(site, "auto")
    site.write("auto/key.txt", KEY.encode())
    site.write("auto2/key.txt", KEY.encode())
    node.start()
    endpoint = f"http://127.0.0.1:{node.ports['http']}"
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "keyLocation": f"{site.base}auto2/key.txt",
                                 "urlList": [f"{site.base}auto2/img.png", f"{site.base}auto2/tool.exe"]})
    assert code == 422, (code, body)
    assert asked("/auto2/key.txt") == 0, ACCESS
    code, body = post(endpoint, {"host": "127.0.0.1", "key": KEY, "keyLocation": f"{site.base}auto/key.txt",
                                 "urlList": [f"{site.base}auto/{name}" for name in PAGES]})
    assert code == 202 and "refused 2:" in body, (code, body)
    providers = admin_get(node, "/admin/providers")["providers"]
    assert [p["prefixes"] for p in providers] == [[f"{site.base}auto/"]], providers
    check_refused_and_stored(node, site, "auto", str(providers[0]["id"]))


def main():
    args = e2e_args()
    config = "accept_mime: [text/*, application/pdf, application/xml]\n" \
             "sitemap:\n  min_interval: 1s\n  check_interval: 300ms\n"
    for body, extra in ((run_indexnow_and_sitemap, ""), (run_auto, "indexnow:\n  register: auto\n")):
        with ACCESS_LOCK:
            ACCESS.clear()
        work = tempfile.mkdtemp(prefix="lcc-ways-in-")
        site = Site(os.path.join(work, "site"))
        node = Node(args, work, extra=config + extra)
        run_guarded(node, site, work, lambda: body(node, site))
    print("ways in policy: ok")


if __name__ == "__main__":
    sys.exit(main())
