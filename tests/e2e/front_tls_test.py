#!/usr/bin/env python3
"""The front end's links to a sub-LCC over TLS (issue 31 §3): real lccd processes on
127.0.0.1, certificates made here with openssl (tests/tls), the PMDB/FEDB on the
PostgreSQL of the ctest fixture lcc_pg_server. Exit 77 (skipped) when there is none.

The sub-LCC's UNS speaks TLS only (listen.uns off, listen.uns_tls on); the front end's
entry is `uns=tls://… admin=https://… ca=CA tls_name=localhost`. A tap between the
front end and that port records every byte the front end sends (the independent reader
of what crosses the network):
  - a CP session through the front end's plain port is relayed over TLS and accepted;
    the tap saw bytes, none of them the CP's password or XML;
  - the admin calls (load, provider add) go over HTTPS (the sub-LCC's http port is not
    in the entry);
  - a front end given another CA (ca= of a second PKI): the CP gets 130, the tap sees no
    byte of the password or XML, the front end logs the certificate failure;
  - lccd --check: an unreadable ca= and ca= without TLS named as `file: front.lccs: why`.
With `proxy=v2` in the entry and the front end (the tap's address) in the sub-LCC's
uns.trusted_proxies, the sub-LCC sees each CP's own address (CPs on 127.0.0.2 and
127.0.0.3): the provider's lastConnectIP is the CP's, and the sub-LCC's
uns.auth_failures_per_minute turns away the CP that guessed, not the other one.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_test import Node, Site, e2e_args, fixture_pg_conninfo, free_port, run_nodes_guarded, wait_for  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tls"))
from tls_test import Pki  # noqa: E402

SUB_ROLES = ["uns", "qm", "botm", "bot", "cu"]


class Tap:
    """A TCP relay on 127.0.0.1 to `port`, keeping what its clients sent."""

    def __init__(self, port):
        self.port = port
        self.sent = bytearray()
        self.lock = threading.Lock()
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.srv.settimeout(0.5)
        self.listen_port = self.srv.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def taken(self):
        with self.lock:
            out = bytes(self.sent)
            self.sent.clear()
            return out

    def serve(self):
        while not self.stopping:
            try:
                c, _ = self.srv.accept()
            except socket.timeout:
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            except OSError:
                c.close()
                continue
            threading.Thread(target=self.pipe, args=(c, up, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(up, c, False), daemon=True).start()

    def pipe(self, src, dst, record):
        src.settimeout(60)
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if record:
                    with self.lock:
                        self.sent += b
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self):
        self.stopping = True
        self.thread.join()
        self.srv.close()


def front_config(conninfo, schema, entry):
    return (f"front:\n  conninfo: '{conninfo}'\n  schema: {schema}\n  refresh_interval: 300ms\n"
            "  stale_after: 3s\n  connect_timeout: 2s\n  cache_ttl: 1s\n"
            f"  lccs:\n    - '{entry}'\n")


def entry_for(sub, tap, ca):
    token = os.path.join(sub.work, "var", "admin.token")
    return (f"a uns=tls://127.0.0.1:{tap.listen_port} admin=https://127.0.0.1:{sub.ports['https']} "
            f"ca={ca} tls_name=localhost proxy=v2 token_file={token}")


def raw_init(front, source, pid, password):
    """An init from `source` (a loopback address) to the front end's plain port: the
    reply's text (init_accepted, or init_rejected with its code)."""
    init = ('<lococa:init xmlns:lococa="http://www.lococa.org/1.0">'
            f'<provider id="{pid}" passwd="{password}"/></lococa:init>\n').encode()
    with socket.create_connection(("127.0.0.1", front.ports["uns"]), timeout=20, source_address=(source, 0)) as s:
        s.sendall(init)
        got = b""
        for chunk in iter(lambda: s.recv(65536), b""):
            got += chunk
            if re.search(rb"</lococa:init_(accepted|rejected)>", got):
                break
        return got.decode(errors="replace")


def cp_addresses(front, pid, pw):
    """The sub-LCC counts and records each CP by its own address (PROXY v2 header)."""
    assert "init_accepted" in raw_init(front, "127.0.0.2", pid, pw)
    wait_for("the CP's address at the sub-LCC", lambda: json.loads(
        front.lcc("provider", "show", pid).stdout)["last_ip"] == "127.0.0.2")
    for _ in range(2):  # the sub-LCC's uns.auth_failures_per_minute: 2
        assert 'code="110"' in raw_init(front, "127.0.0.3", pid, pw + "x")
    got = raw_init(front, "127.0.0.3", pid, pw)
    assert 'code="120"' in got and "failed authentications" in got, got
    assert "init_accepted" in raw_init(front, "127.0.0.2", pid, pw), "the other CP was locked out too"


def rewrite(node, old, new):
    with open(node.config) as f:
        text = f.read()
    assert old in text, (old, text)
    with open(node.config, "w") as f:
        f.write(text.replace(old, new))


def send(front, pid, password, scan, check=True):
    return front.lcc("cp", "send", "--uns", f"127.0.0.1:{front.ports['uns']}", "--id", pid, "--password", password,
                     "-", stdin=scan, check=check)


def check_config_errors(args, work, sub, tap, pki):
    cases = [(entry_for(sub, tap, pki.path("missing.pem")), "front.lccs: a: ca=" + pki.path("missing.pem")),
             (f"a uns=127.0.0.1:1 admin=127.0.0.1:2 ca={pki.ca} token_file=/x",
              "ca= and tls_name= need uns=tls:// or admin=https://")]
    for i, (entry, want) in enumerate(cases):
        node = Node(args, work, f"check{i}", "mC", ["front"], front_config("host=/nonexistent", "x", entry))
        r = subprocess.run([os.path.join(args.bin, "lccd"), "-c", node.config, "--check"], capture_output=True,
                           timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 2 and f"{node.config}: front.lccs: " in err and want in err, (i, r.returncode, err)


def run(args, work, conninfo, site, front, sub, tap, pki, other):
    check_config_errors(args, work, sub, tap, pki)
    for i in range(3):
        site.write(f"p1/page{i}.html", f"<html><body>page {i}</body></html>\n".encode())
    sub.start()
    front.start()
    # The load is read over HTTPS (the entry names only the sub-LCC's https port).
    wait_for("the sub-LCC live", lambda: all(l["live"] for l in front.status()["front"]["lccs"]))
    out = front.lcc("provider", "add", "--prefix", f"{site.base}p1/").stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, pw = m.group(1), m.group(2)
    scan = front.lcc("cp", "scan", os.path.join(site.root, "p1"), "--base-url", f"{site.base}p1/").stdout
    tap.taken()
    out = send(front, pid, pw, scan).stdout.decode()
    assert "accepted 3 of 3" in out.lower(), out
    seen = tap.taken()
    assert len(seen) > 200, len(seen)  # the handshake and the records went through the tap
    for clear in (pw.encode(), b"lococa", b"<url", site.base.encode()):
        assert clear not in seen, f"{clear!r} crossed in clear"
    wait_for("p1 stored on the sub-LCC", lambda: len(re.findall(r'c="[^"]*p1/page', sub.query_xml_bytes().decode()))
             == 3, timeout=30)
    cp_addresses(front, pid, pw)

    # Another CA: the sub-LCC's certificate is refused; nothing of the CP's is sent.
    front.stop()
    rewrite(front, f"ca={pki.ca} ", f"ca={other.ca} ")
    front.start()
    r = send(front, pid, pw, scan, check=False)
    assert r.returncode == 1 and "init rejected 130" in r.stdout.decode(), r.stdout
    seen = tap.taken()
    assert seen, "the front end did not even try the sub-LCC"
    for clear in (pw.encode(), b"lococa", b"<url"):
        assert clear not in seen, f"{clear!r} crossed in clear to a sub-LCC whose certificate was refused"
    wait_for("the refusal logged", lambda: "certificate verify failed" in open(front.log).read())
    assert not any(l["live"] for l in front.status()["front"]["lccs"])  # admin over HTTPS refused too


def main():
    args = e2e_args()
    conninfo = fixture_pg_conninfo()
    work = tempfile.mkdtemp(prefix="lcc-front-tls-")
    site = Site(os.path.join(work, "site"))
    pki = Pki(os.path.join(work, "pki"))
    other = Pki(os.path.join(work, "other"))
    cert, key = pki.issue("sub", "DNS:localhost")
    sub = Node(args, work, "a", "mA", SUB_ROLES, f"tls:\n  cert_file: {cert}\n  key_file: {key}\n"
               "uns:\n  trusted_proxies: ['127.0.0.1']\n  auth_failures_per_minute: 2\n  auth_cooldown: 5m\n")
    sub.ports.update({"uns_tls": free_port(), "https": free_port()})
    rewrite(sub, f"  uns: 127.0.0.1:{sub.ports['uns']}\n",
            f"  uns: ''\n  uns_tls: 127.0.0.1:{sub.ports['uns_tls']}\n  https: 127.0.0.1:{sub.ports['https']}\n")
    tap = Tap(sub.ports["uns_tls"])
    front = Node(args, work, "front", "mF", ["front"],
                 front_config(conninfo, f"lcc_front_tls_{os.getpid()}", entry_for(sub, tap, pki.ca)))
    try:
        run_nodes_guarded([front, sub], [site], work,
                          lambda: run(args, work, conninfo, site, front, sub, tap, pki, other))
    finally:
        tap.stop()
    print("e2e front tls: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
