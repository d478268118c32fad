#!/usr/bin/env python3
"""TLS end to end, part 2 (issue 14): content read across machines over HTTPS, the
admin commands over HTTPS, and lcc-bot's SIGHUP reload.

Certificates are made here with openssl (tls_test.Pki). Covered:
  - two lccd on 127.0.0.1: A (mA: uns, qm, cu) and B (mB: botm, bot) whose only HTTP
    port is listen.https and which asks for client certificates (tls.client_ca_file).
    B advertises https://127.0.0.1:<port> (botm.content_url auto); A's CU reads B's
    files over TLS, checks B against tls.peer_ca_file and shows tls.cert_file: the
    tar.gz answer holds the site's bytes. With a CA that did not sign B's certificate
    the records are missing="unreadable" at once, and A's log says why;
  - `lcc --tls --ca FILE [--cert --key] provider|status` against listen.https (the
    default with --tls) and --http HOST:PORT; a wrong CA and plain HTTP to the HTTPS
    port fail with a clear message and exit 2;
  - lcc-bot --connect tls://: after its certificate files are renewed and SIGHUP, its
    next connection shows the new certificate (a Python TLS server records the client
    certificate of each connection); the process is the same; a broken key file is
    refused and the old certificate stays.
"""
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import DEADLINE, Site, e2e_args, run_nodes_guarded, site_files, tar_contents, wait_for  # noqa: E402
from tls_test import Pki, TlsNode  # noqa: E402


def client_ctx(ca, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def start_nodes(args, work, pki):
    a_cert, a_key = pki.issue("a", "DNS:localhost,IP:127.0.0.1")
    b_cert, b_key = pki.issue("b", "DNS:localhost,IP:127.0.0.1")
    a = TlsNode(args, work, "a", {"https": "127.0.0.1:{https}"},
                {"cert_file": a_cert, "key_file": a_key, "peer_ca_file": pki.ca}, roles=["uns", "qm", "cu"],
                machine="mA")
    b = TlsNode(args, work, "b", {"http": "''", "https": "127.0.0.1:{https}"},
                {"cert_file": b_cert, "key_file": b_key, "client_ca_file": pki.ca}, roles=["botm", "bot"],
                machine="mB", status_ctx=client_ctx(pki.ca, a_cert, a_key))
    with open(b.config, "a") as f:
        f.write(f"botm:\n  source: 127.0.0.1:{a.ports['botm']}\n  reconnect_min: 50ms\n  reconnect_max: 500ms\n")
    a.start()
    b.start()
    return a, b


def check_content_over_https(a, b, site, pki):
    b_url = f"https://127.0.0.1:{b.ports['https']}"
    wait_for("A's CU knows mB's https URL",
             lambda: a.status().get("cu", {}).get("content_urls", {}).get("mB") == b_url)
    for i in range(6):
        site.write(f"docs/p{i}.html", (f"<html>page {i} of machine B over TLS</html>\n" * (i + 2)).encode())
    site.write("docs/big.html", os.urandom(200_000).hex().encode())
    out = admin(a, pki, "provider", "add", "--prefix", site.base).stdout.decode()
    fields = dict(kv.split("=", 1) for kv in out.split())
    pid, password = fields["id"], fields["password"]
    scan = a.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    sent = a.lcc("cp", "send", "--uns", f"127.0.0.1:{a.ports['uns']}", "--id", pid, "--password", password,
                 "--full", "-", stdin=scan)
    assert b"accepted 7 of 7" in sent.stdout, sent.stdout
    wait_for("7 URLs stored", lambda: b'count="7"' in a.query_xml_bytes(), timeout=DEADLINE)
    expected = {site.base + k: v for k, v in site_files(site.root).items()}
    got = tar_contents(a.query_tar("--provider", pid))
    assert got == expected, f"export differs: {sorted(set(got) ^ set(expected))}"
    assert b.status()["counters"].get("lcc_botm_content_reads_total", 0) >= 7
    assert "not reachable" not in open(a.log).read()
    return pid


def check_untrusted_content_server(a, pki, other):
    """A's CU trusts another CA now: B's records are unreadable at once, and A's log
    says the certificate was refused."""
    a.stop()
    with open(a.config) as f:
        text = f.read()
    with open(a.config, "w") as f:
        f.write(text.replace(f"peer_ca_file: {pki.ca}", f"peer_ca_file: {other.ca}"))
    a.start()
    wait_for("mB's URL learnt again", lambda: a.status().get("cu", {}).get("content_urls", {}).get("mB"))
    started = time.monotonic()
    xml = a.query_xml_bytes("--content").decode()
    assert time.monotonic() - started < 10, "a refused certificate must not wait for a timeout"
    assert xml.count('missing="unreadable"') == 7, xml[:1500]
    log = open(a.log).read()
    assert "TLS handshake with 127.0.0.1:" in log and "certificate verify failed" in log, log[-3000:]


def admin(node, pki, *argv, extra=(), check=True):
    return node.lcc("--tls", "--ca", pki.ca, *extra, *argv, check=check)


def check_admin_over_https(a, b, pki, other):
    # --tls alone: listen.https of --config (127.0.0.1: the certificate carries the address).
    r = admin(a, pki, "status", "--json")
    assert b'"machine_id": "mA"' in r.stdout, r.stdout[:300]
    r = admin(a, pki, "provider", "list", extra=("--http", f"localhost:{a.ports['https']}"))
    assert b"1 provider(s)" in r.stdout, r.stdout
    # B asks for a client certificate: without one, refused; with one, answered.
    r = admin(b, pki, "status", check=False)
    assert r.returncode == 2 and b"lccd at 127.0.0.1" in r.stderr, (r.returncode, r.stderr)
    r = admin(b, pki, "status", "--json", extra=("--cert", pki.path("a.pem"), "--key", pki.path("a.key")))
    assert b'"machine_id": "mB"' in r.stdout, r.stdout[:300]
    # listen.http is off on B: without --tls there is nowhere to go.
    r = b.lcc("status", check=False)
    assert r.returncode == 2 and b"listen.http is off" in r.stderr, r.stderr
    # A CA that did not sign the server's certificate: a clear refusal.
    r = a.lcc("--tls", "--ca", other.ca, "provider", "list", check=False)
    assert r.returncode == 2 and b"certificate verify failed" in r.stderr, r.stderr
    # Plain HTTP to the HTTPS port: an error, not a hang.
    started = time.monotonic()
    r = a.lcc("--http", f"127.0.0.1:{a.ports['https']}", "status", check=False)
    assert r.returncode == 2 and b"lccd at 127.0.0.1" in r.stderr, r.stderr
    assert time.monotonic() - started < 20


class CertRecorder:
    """A TLS server that asks every client for a certificate of `pki`, records its
    common name and holds the connection until drop_all()."""

    def __init__(self, pki):
        cert, key = pki.issue("recorder", "DNS:localhost")
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.load_verify_locations(pki.ca)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.names, self.conns, self.lock, self.done = [], [], threading.Lock(), False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.done:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                continue
            try:
                raw.settimeout(10)
                conn = self.ctx.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError):
                raw.close()
                continue
            cn = dict(x[0] for x in conn.getpeercert()["subject"])["commonName"]
            with self.lock:
                self.names.append(cn)
                self.conns.append(conn)

    def last(self):
        with self.lock:
            return self.names[-1] if self.names else None

    def drop_all(self):
        with self.lock:
            for c in self.conns:
                c.close()
            self.conns.clear()
            self.names.clear()

    def stop(self):
        self.done = True
        self.thread.join()
        self.drop_all()
        self.sock.close()


def check_bot_sighup_reload(args, work, pki):
    folder = os.path.join(work, "bot")
    os.makedirs(folder)
    cert, key = os.path.join(folder, "robot.pem"), os.path.join(folder, "robot.key")
    for name in ("robot1", "robot2"):
        pki.issue(name, "DNS:robot.test")
    os.replace(pki.path("robot1.pem"), cert)
    os.replace(pki.path("robot1.key"), key)
    log = os.path.join(folder, "bot.log")
    config = os.path.join(folder, "bot.yaml")
    with open(config, "w") as f:
        f.write(f"node:\n  data_dir: {folder}/var\nstorage:\n  plugin_dir: {args.plugins}\n"
                f"fetcher:\n  plugin: fetch-curl\nlog:\n  level: info\n  file: {log}\n"
                f"tls:\n  cert_file: {cert}\n  key_file: {key}\n  peer_ca_file: {pki.ca}\n")
    recorder = CertRecorder(pki)
    bot = subprocess.Popen([os.path.join(args.bin, "lcc-bot"), "--connect", f"tls://localhost:{recorder.port}",
                            "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for("the robot shows robot1", lambda: recorder.last() == "robot1")
        os.replace(pki.path("robot2.pem"), cert)
        os.replace(pki.path("robot2.key"), key)
        bot.send_signal(signal.SIGHUP)
        wait_for("lcc-bot reloaded", lambda: "TLS certificates reloaded" in open(log).read())
        recorder.drop_all()
        wait_for("the next connection shows robot2", lambda: recorder.last() == "robot2")
        assert bot.poll() is None, bot.stderr.read()
        # A broken key: refused, the renewed certificate stays in use.
        with open(key, "w") as f:
            f.write("not a key\n")
        bot.send_signal(signal.SIGHUP)
        wait_for("a refused reload", lambda: "TLS certificates not reloaded" in open(log).read())
        recorder.drop_all()
        wait_for("still robot2", lambda: recorder.last() == "robot2")
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(timeout=DEADLINE) == 0
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()
        recorder.stop()


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-tls2-")
    pki = Pki(os.path.join(work, "pki"))
    other = Pki(os.path.join(work, "other-pki"))
    site = Site(os.path.join(work, "site"))
    nodes = []  # filled once they exist: their logs are printed on a failure

    def body():
        a, b = start_nodes(args, work, pki)
        nodes.extend([a, b])
        check_content_over_https(a, b, site, pki)
        check_admin_over_https(a, b, pki, other)
        check_untrusted_content_server(a, pki, other)
        check_bot_sighup_reload(args, work, pki)
        a.stop()
        b.stop()

    run_nodes_guarded(nodes, site, work, body, "tls remote e2e")


if __name__ == "__main__":
    main()
