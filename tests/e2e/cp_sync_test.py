#!/usr/bin/env python3
"""End-to-end test of issue 29 §4: `lcc cp sync`, and `lcc cp send`'s exit codes.

A real lccd (accept_mime [text/*]: no PDFs) and a site served by Python's http.server
on 127.0.0.1:
  - a provider's first sync sends everything (the LCC wants a full set at a first
    connection), the second sends nothing, a changed and a deleted file go as an
    update and a delete, and `provider want-full-set` gets a full set; the same
    from a sitemap (`--sitemap`); on a terminal, the scan and send progress lines;
  - a .pdf is held back before sending (the MIME list init answered) and counted:
    exit 4 with the summary; the files quota init answered holds back the files past
    it (206) the same way;
  - a URL outside the provider's prefix is refused by the UNS (202): exit 4, summary;
  - `lcc cp send` with a refused URL exits 4 with the summary, and says so when the
    LCC wants a full set and the set is partial;
  - two runs on one state: the second exits 3 with the lock message;
  - a second lccd with uns.max_connections_per_provider 1 answers 120 while the test
    holds a session: sync retries, gives up with exit 5, or goes through once the
    session is closed.
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import DEADLINE, Node, Site, e2e_args, run_guarded, tar_contents, wait_for  # noqa: E402
from progress_test import painted_states, run_on_tty  # noqa: E402


def add_provider(node, prefix, *settings):
    out = node.lcc("provider", "add", "--prefix", prefix).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    if settings:
        node.lcc("provider", "set", m.group(1), *settings)
    return m.group(1), m.group(2)


class Provider:
    def __init__(self, node, site, name, prefix=None, settings=()):
        self.node, self.site, self.name = node, site, name
        self.dir = os.path.join(site.root, name)
        self.base = f"{site.base}{name}/"
        self.pid, self.password = add_provider(node, prefix or self.base, *settings)
        self.state = os.path.join(os.path.dirname(site.root), f"{name}.state")

    def argv(self, uns=None, source=None):
        return ["cp", "sync", *(source or [self.dir, "--base-url", self.base]), "--state", self.state,
                "--uns", uns or f"127.0.0.1:{self.node.ports['uns']}", "--id", self.pid, "--password", self.password]

    def sync(self, *extra, expect=0, source=None):
        r = self.node.lcc(*self.argv(source=source), *extra, check=False)
        out, err = r.stdout.decode(), r.stderr.decode()
        assert r.returncode == expect, f"exit {r.returncode}, expected {expect}\n{out}\n{err}"
        assert "\r" not in err, err  # no progress line when stderr is not a terminal
        return out

    def stored(self):
        return {c: body for c, body in tar_contents(self.node.query_tar()).items() if c.startswith(self.base)}


def settled(node):
    qm = node.status()["qm"]
    return qm["queued_urls"] == 0 and qm["in_flight"] == 0


def summary(out):
    lines = [line for line in out.splitlines() if line.startswith(("full set", "partial set"))]
    assert len(lines) == 1, out
    return lines[0]


def changes_and_full_sets(node, site):
    p = Provider(node, site, "a")
    for name in ("index.html", "x.txt", "sub/y.html"):
        site.write(f"a/{name}", f"<p>{name} one</p>\n".encode())
    out = p.sync()
    assert summary(out) == "full set (wanted: first-connect): sent 3 urls (3 updates, 0 deletes), accepted 3", out
    wait_for("the first sync stored", lambda: settled(node) and len(p.stored()) == 3)

    assert summary(p.sync()) == "partial set: sent 0 urls (0 updates, 0 deletes)"

    site.write("a/x.txt", b"<p>x two, longer</p>\n")
    later = time.time() + 60  # past the Last-Modified of the first fetch, which is to the second
    os.utime(os.path.join(p.dir, "x.txt"), (later, later))
    os.remove(os.path.join(p.dir, "sub/y.html"))
    out = p.sync()
    assert summary(out) == "partial set: sent 2 urls (1 updates, 1 deletes), accepted 2", out
    wait_for("the change and the delete applied", lambda: settled(node) and p.stored() == {
        p.base + "index.html": b"<p>index.html one</p>\n", p.base + "x.txt": b"<p>x two, longer</p>\n"})
    assert summary(p.sync()) == "partial set: sent 0 urls (0 updates, 0 deletes)"

    node.lcc("provider", "want-full-set", p.pid)
    out = p.sync()
    assert summary(out) == "full set (wanted: admin): sent 2 urls (2 updates, 0 deletes), accepted 2", out
    assert "full" not in provider_line(node, p.pid).split(), provider_line(node, p.pid)  # the request is cleared
    assert summary(p.sync()) == "partial set: sent 0 urls (0 updates, 0 deletes)"


def sitemap_source(node, site):
    # The same, read from a sitemap: pages by lastmod.
    p = Provider(node, site, "m")
    def write_sitemap(pages):
        site.write("m/sitemap.xml", ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(
            f"<url><loc>{p.base}{name}</loc><lastmod>{day}</lastmod></url>" for name, day in pages) + "</urlset>").encode())
    for name in ("p1.html", "p2.html", "p3.html"):
        site.write(f"m/{name}", f"<p>{name}</p>\n".encode())
    write_sitemap([("p1.html", "2024-05-01"), ("p2.html", "2024-05-01"), ("p3.html", "2024-05-01")])
    source = ["--sitemap", f"{p.base}sitemap.xml"]
    out = p.sync(source=source)
    assert summary(out) == "full set (wanted: first-connect): sent 3 urls (3 updates, 0 deletes), accepted 3", out
    assert summary(p.sync(source=source)) == "partial set: sent 0 urls (0 updates, 0 deletes)"
    site.write("m/p1.html", b"<p>p1 again</p>\n")
    later = time.time() + 60  # past the Last-Modified of the first fetch
    os.utime(os.path.join(p.dir, "p1.html"), (later, later))
    write_sitemap([("p1.html", "2024-06-01"), ("p2.html", "2024-05-01")])
    out = p.sync(source=source)
    assert summary(out) == "partial set: sent 2 urls (1 updates, 1 deletes), accepted 2", out
    wait_for("the sitemap's change and delete applied", lambda: settled(node) and p.stored() == {
        p.base + "p1.html": b"<p>p1 again</p>\n", p.base + "p2.html": b"<p>p2.html</p>\n"})


def progress_on_a_terminal(node, site):
    p = Provider(node, site, "t")
    for i in range(5):
        site.write(f"t/f{i}.html", f"<p>{i}</p>\n".encode())
    rc, out, err = run_on_tty([os.path.join(node.bin, "lcc"), "--config", node.config, *p.argv()],
                              dict(os.environ, LCC_PROGRESS_INTERVAL_MS="0"))
    assert rc == 0, (rc, out, err)
    states = painted_states(err)
    assert any(st.startswith("scanned 5 of 5 files, 5 new or changed") for st in states), states
    assert "sent 5 urls" in states, states
    assert summary(out.decode()).startswith("full set (wanted: first-connect): sent 5 urls"), out


def provider_line(node, pid):
    for line in node.lcc("provider", "list").stdout.decode().splitlines():
        if line.split() and line.split()[0] == pid:
            return line
    raise AssertionError(f"provider {pid} not listed")


def held_back(node, site):
    # The MIME list init answered has no application/pdf: the pdf is never sent.
    p = Provider(node, site, "b")
    site.write("b/doc.html", b"<p>doc</p>\n")
    site.write("b/paper.pdf", b"%PDF-1.4 not really\n")
    out = p.sync(expect=4)
    assert f"held back error 203 {p.base}paper.pdf (application/pdf)" in out, out
    assert summary(out) == ("full set (wanted: first-connect): sent 1 urls (1 updates, 0 deletes), accepted 1; "
                            "held back 1 (203: 1)"), out
    assert "refused" not in out, out  # not sent, so not refused by the UNS
    wait_for("doc.html stored", lambda: settled(node) and set(p.stored()) == {p.base + "doc.html"})
    out = p.sync(expect=4)
    assert summary(out) == "partial set: sent 0 urls (0 updates, 0 deletes); held back 1 (203: 1)", out

    # The files quota: 2 files, 4 new ones: 2 sent, 2 held back with 206.
    q = Provider(node, site, "q", settings=("--quota-files", "2"))
    for i in range(4):
        site.write(f"q/f{i}.html", f"<p>f{i}</p>\n".encode())
    out = q.sync(expect=4)
    assert summary(out) == ("full set (wanted: first-connect): sent 2 urls (2 updates, 0 deletes), accepted 2; "
                            "held back 2 (206: 2)"), out
    assert out.count("held back error 206") == 2, out


def refused(node, site):
    # The provider may notify c/pub/ only: c/priv/ is refused by the UNS (202).
    p = Provider(node, site, "c", prefix=f"{site.base}c/pub/")
    site.write("c/pub/ok.html", b"<p>ok</p>\n")
    site.write("c/priv/no.html", b"<p>no</p>\n")
    out = p.sync(expect=4)
    assert f"error 202 {p.base}priv/no.html (text/html)" in out, out
    assert summary(out) == ("full set (wanted: first-connect): sent 2 urls (2 updates, 0 deletes), accepted 1; "
                            "refused 1 (202: 1)"), out
    # The refused file is not in the state: it is tried again (and refused again).
    out = p.sync(expect=4)
    assert summary(out) == "partial set: sent 1 urls (1 updates, 0 deletes), accepted 0; refused 1 (202: 1)", out


def send_exit_codes(node, site):
    p = Provider(node, site, "s", prefix=f"{site.base}s/pub/")
    site.write("s/pub/ok.html", b"<p>ok</p>\n")
    # A refused URL is exit 4 with a summary (it was exit 0).
    uns = f"127.0.0.1:{node.ports['uns']}"
    r = node.lcc("cp", "send", "--uns", uns, "--id", p.pid, "--password", p.password, "-", check=False,
                 stdin=f'<url c="{p.base}priv/no.html" m="text/html"/>\n<url c="{p.base}pub/ok.html" m="text/html"/>\n'
                 .encode())
    out = r.stdout.decode()
    assert r.returncode == 4, (r.returncode, out, r.stderr.decode())
    assert "accepted 1 of 2 urls\nrefused 1 urls (202: 1)\n" in out, out
    # A partial set while the LCC wants a full one: said on standard output.
    node.lcc("provider", "want-full-set", p.pid)
    r = node.lcc("cp", "send", "--uns", uns, "--id", p.pid, "--password", p.password, "-", check=False,
                 stdin=f'<url c="{p.base}pub/ok.html" m="text/html"/>\n'.encode())
    out = r.stdout.decode()
    assert r.returncode == 0, (r.returncode, out, r.stderr.decode())
    assert "full set wanted (admin): this set was partial; send everything with --full" in out, out


def lock(node, site):
    # The first run connects to a listener that never answers and so holds the lock.
    p = Provider(node, site, "d")
    site.write("d/one.html", b"<p>one</p>\n")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    silent.settimeout(DEADLINE)
    first = subprocess.Popen([os.path.join(node.bin, "lcc"), "--config", node.config,
                              *p.argv(uns=f"127.0.0.1:{silent.getsockname()[1]}")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        conn, _ = silent.accept()  # it connected: it scanned, so it holds the lock
        r = node.lcc(*p.argv(), check=False)
        assert r.returncode == 3, (r.returncode, r.stdout.decode(), r.stderr.decode())
        assert r.stderr.decode() == f"lcc cp sync: {p.state}.lock: another run holds the lock\n", r.stderr.decode()
        assert not os.path.exists(p.state)
        conn.close()
    finally:
        first.kill()
        first.wait()
        silent.close()
    # The lock went with the first run. The password from a file (not in the process list):
    pw_file = os.path.join(os.path.dirname(p.state), "d.password")
    with open(pw_file, "w") as f:
        f.write(p.password + "\n")
    argv = p.argv()
    i = argv.index("--password")
    argv[i:i + 2] = ["--password-file", pw_file]
    r = node.lcc(*argv, check=False)
    assert r.returncode == 0, (r.returncode, r.stdout.decode(), r.stderr.decode())
    assert summary(r.stdout.decode()).startswith("full set (wanted: first-connect): sent 1 urls"), r.stdout.decode()
    r = node.lcc(*argv, "--password", "x", check=False)
    assert r.returncode == 2 and "give --password or --password-file (one of them)" in r.stderr.decode(), r


def hold_session(node, pid, password):
    """An authenticated session kept open (no set): the provider's one session."""
    s = socket.create_connection(("127.0.0.1", node.ports["uns"]), timeout=DEADLINE)
    s.sendall(f'<lococa:init xmlns:lococa="http://www.lococa.org/1.0"><provider id="{pid}" passwd="{password}"/>'
              "</lococa:init>".encode())
    got = b""
    while b"</lococa:init_accepted>" not in got:
        chunk = s.recv(65536)
        assert chunk, got
        got += chunk
    return s


def try_later(args, work, site):
    node = Node(args, work, name="lccd2", extra="uns:\n  max_connections_per_provider: 1\n")
    try:
        node.start()
        p = Provider(node, site, "e")
        site.write("e/one.html", b"<p>one</p>\n")
        held = hold_session(node, p.pid, p.password)
        r = node.lcc(*p.argv(), "--retries", "2", "--retry-delay", "0.05", check=False)
        err = r.stderr.decode()
        assert r.returncode == 5, (r.returncode, r.stdout.decode(), err)
        assert err.count("lcc cp sync: try later (120 ") == 2, err
        assert "lcc cp sync: the UNS said \"try later\" 3 times (last: 120 " in err, err
        assert not os.path.exists(p.state)

        # Once the session is closed, a retry goes through.
        run = subprocess.Popen([os.path.join(node.bin, "lcc"), "--config", node.config, *p.argv(),
                                "--retries", "5", "--retry-delay", "0.5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = run.stderr.readline().decode()
            while line and "try later" not in line:
                line = run.stderr.readline().decode()
            assert "lcc cp sync: try later (120 " in line, line
            held.close()
            out, err = run.communicate(timeout=DEADLINE)
        finally:
            run.kill()
        assert run.returncode == 0, (run.returncode, out.decode(), err.decode())
        assert summary(out.decode()).startswith("full set (wanted: first-connect): sent 1 urls"), out.decode()
        node.stop()
    finally:
        node.kill()


def run(args, work, node, site):
    node.start()
    changes_and_full_sets(node, site)
    sitemap_source(node, site)
    progress_on_a_terminal(node, site)
    held_back(node, site)
    refused(node, site)
    send_exit_codes(node, site)
    lock(node, site)
    node.stop()
    try_later(args, work, site)


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-e2e-cpsync-")
    os.makedirs(os.path.join(work, "site"))
    site = Site(os.path.join(work, "site"))
    node = Node(args, work, extra="accept_mime: [text/*]\n")
    run_guarded(node, site, work, lambda: run(args, work, node, site))


if __name__ == "__main__":
    main()
