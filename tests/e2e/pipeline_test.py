#!/usr/bin/env python3
"""End-to-end test of the LCC as a provider and a content user use it.

A provider is added with `lcc provider add`, a full set is made by `lcc cp scan`
and sent by `lcc cp send`, every URL is fetched by fetch-curl from a real HTTP
server on 127.0.0.1, and `lcc cu query --format tar.gz` must equal the site.
Then a partial set with changes and deletions is mirrored through `since seq`,
a 404 is reported back to the provider at its next connection, SIGTERM stops
lccd with exit 0, and a restart loses nothing.
"""
import argparse
import functools
import hashlib
import http.server
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
import xml.dom.minidom

NS = "http://www.lococa.org/1.0"
DEADLINE = 60.0  # seconds for any one condition


_handed_out = set()


def free_port():
    """A port free on 127.0.0.1 now, and never one this process handed out before (the
    kernel may give the same free port to two binds in a row, and two listeners of
    one lccd on one port stop it)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise AssertionError("no new free port on 127.0.0.1")


def wait_for(what, fn, timeout=DEADLINE):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - report the last failure
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class Site:
    """A provider's web site: a folder served by Python's HTTP server."""

    def __init__(self, root):
        self.root = root
        self.port = free_port()
        handler = functools.partial(QuietHandler, directory=root)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def write(self, rel, data):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def stop(self):
        self.server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


ALL_ROLES = ["uns", "qm", "botm", "bot", "cu", "rs"]


class Node:
    """One real lccd: its own folder <work>/<name>, ports, config and log."""

    def __init__(self, args, work, name="lccd", machine="m1", roles=ALL_ROLES, extra=""):
        self.bin = args.bin
        self.name = name
        self.work = os.path.join(work, name)
        os.makedirs(self.work)
        self.ports = {k: free_port() for k in ("uns", "qm", "botm", "robots", "cu", "http")}
        self.config = os.path.join(self.work, "lcc.yaml")
        self.log = os.path.join(self.work, "lccd.log")
        # --in-process-links false: the roles of one lccd link over loopback TCP.
        self.in_process = getattr(args, "in_process_links", "true")
        # link_frames (a build that has node.link_frames): XML or compact frames over TCP.
        frames = getattr(args, "link_frames", None)
        with open(self.config, "w") as f:
            f.write(
                f"""node:
  data_dir: {os.path.join(self.work, "var")}
  machine_id: {machine}
  in_process_links: {self.in_process}
"""
                + (f"  link_frames: {frames}\n" if frames else "")
                + f"""roles: [{", ".join(roles)}]
listen:
"""
                + "".join(f"  {k}: 127.0.0.1:{p}\n" for k, p in self.ports.items())
                + f"""storage:
  plugin_dir: {args.plugins}
fetcher:
  plugin: fetch-curl
  options:
    allow_private: true
    timeout: 10s
log:
  level: info
  file: {self.log}
"""
                + extra
            )
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([os.path.join(self.bin, "lccd"), "-c", self.config],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for(f"{self.name} /status", lambda: self.status() is not None)

    def status(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"lccd {self.name} exited with {self.proc.returncode}: "
                                 f"{self.proc.stderr.read().decode()}\n{self.log_tail()}")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['http']}/status", timeout=2) as r:
            return json.load(r)

    def log_tail(self):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-40:])
        except OSError:
            return ""

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=DEADLINE)
        assert rc == 0, f"lccd {self.name} exited {rc} on SIGTERM\n{self.log_tail()}"

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def lcc(self, *argv, stdin=None, check=True):
        cmd = [os.path.join(self.bin, "lcc"), "--config", self.config, *argv]
        r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=DEADLINE)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} -> {r.returncode}\n{r.stdout.decode()}\n{r.stderr.decode()}"
                                 f"\n{self.log_tail()}")
        return r

    def query_xml_bytes(self, *extra):
        return self.lcc("cu", "query", "--cu", f"127.0.0.1:{self.ports['cu']}", "--format", "xml", *extra).stdout

    def query_xml(self, *extra):
        out = self.query_xml_bytes(*extra)
        doc = xml.dom.minidom.parseString(out)
        root = doc.documentElement
        assert root.namespaceURI == NS and root.localName == "result", out[:200]
        return root

    def query_tar(self, *extra):
        out = os.path.join(self.work, "export.tar.gz")
        self.lcc("cu", "query", "--cu", f"127.0.0.1:{self.ports['cu']}", "--format", "tar.gz", "-o", out, *extra)
        return out


def site_files(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                files[os.path.relpath(p, root)] = f.read()
    return files


def tar_contents(path):
    """Member contents keyed by the URL path, via Python's tarfile and the manifest."""
    with tarfile.open(path, "r:gz") as t:
        manifest = t.extractfile("MANIFEST.xml").read()
        doc = xml.dom.minidom.parseString(manifest)
        by_url = {}
        for u in doc.getElementsByTagName("url"):
            if u.getAttribute("deleted") == "yes":
                continue
            member = u.getAttribute("path")
            assert not member.startswith("/") and ".." not in member.split("/"), member
            by_url[u.getAttribute("c")] = t.extractfile(member).read()
        return by_url


def gnu_tar_lists(path):
    r = subprocess.run(["tar", "tzf", path], capture_output=True, check=True)
    return r.stdout.decode().split("\n")


def e2e_args():
    """--bin (lccd, lcc, ...) and --plugins, as CMake passes them to every e2e test."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--in-process-links", default="true", choices=("true", "false"),
                    help="node.in_process_links of every lccd (false: the UNS, QM and BOT-M link over TCP)")
    return ap.parse_args()


def main():
    run_with_site_and_node(e2e_args(), "pipeline", run)


def run_with_site_and_node(args, name, body):
    """body(lcc, site, work) with one Node and one Site in a temporary folder; the
    node's log tail is printed when it fails, and everything is cleaned up."""
    work = tempfile.mkdtemp(prefix=f"lcc-{name}-")
    site = Site(os.path.join(work, "site"))
    lcc = Node(args, work)
    run_guarded(lcc, site, work, lambda: body(lcc, site, work))
    print(f"e2e {name}: 1 passed, 0 failed")


def run_nodes_guarded(nodes, sites, work, body):
    """body() with several nodes: on failure each node's log tail is printed; always
    kills the nodes (the list may grow while body runs), stops the sites and removes
    `work` (kept when LCC_E2E_KEEP is set)."""
    try:
        body()
    except BaseException:
        for n in nodes:
            print(f"--- {n.name} log ---\n{n.log_tail()}", file=sys.stderr)
        raise
    finally:
        for n in nodes:
            n.kill()
        for s in sites:
            s.stop()
        if not os.environ.get("LCC_E2E_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


def fixture_pg_conninfo():
    """The conninfo of the ctest fixture lcc_pg_server's PostgreSQL; exits 77 (skipped)
    when there is none."""
    if os.environ.get("LCC_TEST_PG_MISSING"):
        print("skipped:", os.environ["LCC_TEST_PG_MISSING"])
        sys.exit(77)
    conninfo = os.environ.get("LCC_TEST_PG_CONNINFO")
    if not conninfo:
        print("skipped: run through ctest (the fixture lcc_pg_server sets LCC_TEST_PG_CONNINFO)")
        sys.exit(77)
    return conninfo


def run_guarded(node, site, work, body):
    """Runs body(); on failure prints the lccd log's tail; always stops lccd and the site."""
    try:
        body()
    except BaseException:
        print(node.log_tail(), file=sys.stderr)
        raise
    finally:
        node.kill()
        site.stop()
        shutil.rmtree(work, ignore_errors=True)


def run(lcc, site, work):
    for i in range(20):
        site.write(f"docs/page{i:02d}.html", (f"<html><body>page {i}</body></html>\n" * (i + 1)).encode())
    site.write("docs/notes.txt", b"plain text notes\n")
    site.write("docs/sub/deep.html", b"<html>deep</html>\n")

    lcc.start()
    out = lcc.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)

    state = os.path.join(work, "scan.state")
    scan = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
    assert scan.count(b"<url") == 22, scan[:500]
    sent = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                   "--full", "-", stdin=scan)
    assert b"accepted" in sent.stdout.lower(), sent.stdout

    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    wait_for("all 22 URLs stored", lambda: int(lcc.query_xml().getAttribute("count")) == 22)
    # The QM, the BOT-M and the robots of this lccd link in the form asked for (issue 28).
    status = lcc.status()
    want = "in process" if lcc.in_process == "true" else "tcp"
    assert status["botm"]["source_link"] == want, status["botm"]
    assert status["qm"]["botm_local_links"] == (1 if want == "in process" else 0), status["qm"]
    # The UNS hands the QM its parsed notices in process, or over TCP as compact frames
    # (node.link_frames is on by default).
    assert status["uns"]["forwarder"]["qm_link"] == want, status["uns"]["forwarder"]
    assert status["uns"]["forwarder"]["qm_link_frames"] == (want == "tcp"), status["uns"]["forwarder"]
    assert status["qm"]["uns_local_links"] == (1 if want == "in process" else 0), status["qm"]
    robots = status["bot"]["robots"]
    assert status["bot"]["in_process"] == (robots if want == "in process" else 0), status["bot"]
    got = tar_contents(lcc.query_tar("--provider", pid))
    assert got == expected, f"export differs: {sorted(set(got) ^ set(expected))}"
    assert any(name.endswith("page07.html") for name in gnu_tar_lists(lcc.query_tar()))
    last_seq = int(lcc.query_xml().getAttribute("last_seq"))

    # A partial set: one change, one removal, one new file, one URL that will 404.
    site.write("docs/page03.html", b"<html>changed</html>\n")
    os.remove(os.path.join(site.root, "docs/page04.html"))
    site.write("docs/new.html", b"<html>new</html>\n")
    scan2 = lcc.lcc("cp", "scan", site.root, "--base-url", site.base, "--state", state).stdout
    scan2 += f'<url c="{site.base}docs/missing.html" m="text/html"/>\n'.encode()
    lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password, "-",
            stdin=scan2)

    def changes():
        root = lcc.query_xml("--since-seq", str(last_seq), "--deleted")
        urls = {u.getAttribute("c"): u for u in root.getElementsByTagName("url")}
        changes.seen = sorted(urls)
        return urls if (site.base + "docs/page04.html" in urls and site.base + "docs/new.html" in urls and
                        site.base + "docs/page03.html" in urls) else None

    changes.seen = []
    try:
        urls = wait_for("the partial set mirrored", changes)
    except AssertionError:
        print("changes seen:", changes.seen, file=sys.stderr)
        print(lcc.query_xml().toxml()[:3000], file=sys.stderr)
        raise
    assert urls[site.base + "docs/page04.html"].getAttribute("deleted") == "yes"
    assert site.base + "docs/page05.html" not in urls, "unchanged URL reported as changed"
    mirror = tar_contents(lcc.query_tar("--provider", pid))
    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    assert mirror == expected, f"mirror differs: {sorted(set(mirror) ^ set(expected))}"

    # The 404 is reported to the provider at its next connection.
    def reported():
        r = lcc.lcc("cp", "send", "--uns", f"127.0.0.1:{lcc.ports['uns']}", "--id", pid, "--password", password,
                    "-", stdin=b"")
        text = (r.stdout + r.stderr).decode()
        return text if ("301" in text and "missing.html" in text) else None

    wait_for("the 404 reported back", reported)

    lcc.stop()
    lcc.start()
    after = tar_contents(lcc.query_tar("--provider", pid))
    assert after == expected, "restart lost content"
    lcc.stop()


if __name__ == "__main__":
    main()
