#!/usr/bin/env python3
"""TLS end to end (issue 14): real lccd, real lcc, certificates made here with openssl.

A CA and certificates are made in a temporary folder with the `openssl` command.
Independent clients check the server: `openssl s_client` against listen.uns_tls and
listen.cu_tls, `curl --cacert` against listen.https. Covered:
  - configuration errors as `file: key: why` (lccd --check);
  - plain listeners turned off with "" (listen.uns, listen.cu, listen.http);
  - a whole CP session over TLS with `lcc cp send --tls --ca`, its URLs forwarded to
    the QM, handed to the BOT-M and fetched by the robot over tls:// links with client
    certificates (tls.peer_ca_file), and read back with `lcc cu query --tls --ca`;
  - a wrong host name and an expired certificate refused by the client;
  - a client without a certificate where tls.client_ca_file requires one;
  - a TLS 1.0 client refused; plain text sent to a TLS port answered with a clean close;
  - SIGHUP: new connections get the new certificate.
"""
import json
import os
import re
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, Site, e2e_args, free_port, run_guarded, wait_for  # noqa: E402


def sh(cmd, cwd, stdin=b"", check=True, timeout=60):
    r = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=timeout, shell=isinstance(cmd, str))
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} -> {r.returncode}\n{r.stdout.decode()}\n{r.stderr.decode()}")
    return r


class Pki:
    """A CA (ca.pem) and the certificates it signs, made with the openssl command."""

    def __init__(self, folder):
        self.dir = folder
        os.makedirs(folder)
        self.ca = self.path("ca.pem")
        sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 "
           "-subj '/CN=LCC test CA' -keyout ca.key -out ca.pem", folder)

    def path(self, name):
        return os.path.join(self.dir, name)

    def issue(self, name, san, expired=False):
        with open(self.path(name + ".ext"), "w") as f:
            f.write(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n")
        sh(f"openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN={name}' "
           f"-keyout {name}.key -out {name}.csr", self.dir)
        if expired:
            # `openssl ca` takes explicit dates: valid in January 2020 only.
            with open(self.path("ca.cnf"), "w") as f:
                f.write("[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial.txt\n"
                        "default_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n")
            open(self.path("index.txt"), "w").close()
            with open(self.path("serial.txt"), "w") as f:
                f.write("01\n")
            sh(f"openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in {name}.csr -out {name}.pem "
               f"-startdate 20200101000000Z -enddate 20200201000000Z -extfile {name}.ext -notext", self.dir)
        else:
            sh(f"openssl x509 -req -in {name}.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 "
               f"-extfile {name}.ext -out {name}.pem", self.dir)
        return self.path(name + ".pem"), self.path(name + ".key")


class TlsNode(Node):
    """A Node whose listen block gains TLS ports; /status over HTTP or HTTPS."""

    def __init__(self, args, work, name, listen, tls, roles=None, status_ctx=None, machine="m1"):
        kw = {"roles": roles} if roles else {}
        super().__init__(args, work, name=name, machine=machine,
                         extra="tls:\n" + "".join(f"  {k}: {v}\n" for k, v in tls.items()), **kw)
        self.ports.update({k: free_port() for k in ("uns_tls", "cu_tls", "https")})
        with open(self.config) as f:
            text = f.read()
        for key, value in listen.items():
            text = re.sub(rf"^  {key}: .*\n", "", text, flags=re.M)
            text = text.replace("listen:\n", f"listen:\n  {key}: {value.format(**self.ports)}\n", 1)
        with open(self.config, "w") as f:
            f.write(text)
        self.status_ctx = status_ctx

    def status(self):
        if self.status_ctx is None:
            return super().status()
        if self.proc.poll() is not None:
            raise AssertionError(f"lccd {self.name} exited: {self.proc.stderr.read().decode()}\n{self.log_tail()}")
        url = f"https://localhost:{self.ports['https']}/status"
        with urllib.request.urlopen(url, timeout=2, context=self.status_ctx) as r:
            return json.load(r)


def s_client(port, ca, *extra, stdin=b""):
    cmd = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", ca, "-verify_return_error", *extra]
    r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=30)
    return r.returncode, (r.stdout + r.stderr).decode(errors="replace")


def without_certificate(port, ca):
    """What a TLS client that trusts `ca` but shows no certificate gets: the error's
    text (TLS 1.3 sends the refusal after the handshake: it comes with the first read)."""
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=15) as raw:
        try:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(b"<x/>")
                return f"answered {s.recv(4096)!r}"
        except (ssl.SSLError, OSError) as e:
            return str(e)


def refused(port):
    with socket.socket() as s:
        s.settimeout(5)
        return s.connect_ex(("127.0.0.1", port)) != 0


def check_config_errors(args, work, pki):
    """lccd --check names the file, the key and why."""
    cert, key = pki.path("server.pem"), pki.path("server.key")
    cases = [
        ({"uns_tls": "127.0.0.1:{uns_tls}"}, {}, "tls.cert_file: must be set when listen.uns_tls is"),
        ({"cu_tls": "127.0.0.1:{cu_tls}"}, {"cert_file": cert, "key_file": pki.path("missing.key")},
         f"tls.key_file: {pki.path('missing.key')}: No such file or directory"),
        ({"https": "127.0.0.1:{https}"}, {"cert_file": cert, "key_file": pki.ca},
         f"tls.key_file: {pki.ca}: not a PEM private key"),
        ({"uns_tls": "127.0.0.1:{uns_tls}"}, {"cert_file": cert, "key_file": key, "min_version": "1.0"},
         "tls.min_version: must be 1.2 or 1.3 (got 1.0)"),
        ({"uns": "tls://127.0.0.1:{uns}"}, {}, "listen.uns: tls:// is for links between machines"),
        ({"qm": "tls://127.0.0.1:{qm}"}, {"cert_file": cert, "key_file": key},
         "tls.peer_ca_file: must be set when listen.qm is tls://"),
        ({"robots": "tls://127.0.0.1:{robots}"}, {"peer_ca_file": pki.ca},
         "tls.cert_file: must be set when listen.robots is"),
    ]
    for i, (listen, tls, want) in enumerate(cases):
        node = TlsNode(args, work, f"check{i}", listen, tls)
        r = subprocess.run([os.path.join(args.bin, "lccd"), "-c", node.config, "--check"], capture_output=True,
                           timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 2 and f"{node.config}: {want}" in err, f"case {i}: rc {r.returncode}\n{err}"


def check_independent_clients(node, pki):
    for port in (node.ports["uns_tls"], node.ports["cu_tls"]):
        rc, out = s_client(port, pki.ca, "-verify_hostname", "localhost", "-brief")
        assert rc == 0 and "Verification: OK" in out, out
        rc, out = s_client(port, pki.ca, "-verify_hostname", "lcc.example.org", "-brief")
        assert rc != 0 and "hostname mismatch" in out, out
    r = sh(["curl", "-sS", "--cacert", pki.ca, f"https://localhost:{node.ports['https']}/status"], node.work)
    assert json.loads(r.stdout)["machine_id"] == "m1", r.stdout
    r = sh(["curl", "-sS", "--cacert", pki.ca, f"https://127.0.0.1:{node.ports['https']}/status"], node.work,
           check=False)
    assert r.returncode != 0 and b"127.0.0.1" in r.stderr, r.stderr  # the certificate names localhost only
    # TLS 1.0: the local OpenSSL only offers it at security level 0.
    rc, out = s_client(node.ports["uns_tls"], pki.ca, "-tls1", "-cipher", "DEFAULT@SECLEVEL=0")
    assert rc != 0 and "alert protocol version" in out and "Cipher is (NONE)" in out, out


def assert_clean_close(port, payload):
    """Plain text to a TLS port: at most a TLS alert, then the end of the stream
    (a timeout raises: no hang; a reset raises too)."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(payload)
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        assert len(got) < 64 and b"lococa" not in got and b"HTTP" not in got, got


def check_plain_text_closed(node):
    hello = b'<lococa:init xmlns:lococa="http://www.lococa.org/1.0" id="1" password="x"/>\r\n'
    for port in (node.ports["uns_tls"], node.ports["cu_tls"], node.ports["qm"], node.ports["botm"],
                 node.ports["robots"]):
        assert_clean_close(port, hello)
    assert_clean_close(node.ports["https"], b"GET /status HTTP/1.0\r\n\r\n")
    node.status()  # still alive


def run_cp_session(node, site, pki, work):
    for i in range(5):
        site.write(f"docs/p{i}.html", f"<html>tls page {i}</html>\n".encode())
    out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    pid, password = m.group(1), m.group(2)
    scan = node.lcc("cp", "scan", site.root, "--base-url", site.base).stdout
    uns = f"localhost:{node.ports['uns_tls']}"
    r = node.lcc("cp", "send", "--uns", uns, "--tls", "--ca", pki.ca, "--id", pid, "--password", password,
                 "--full", "-", stdin=scan)
    assert r.stdout.decode() == "accepted 5 of 5 urls\n", r.stdout
    # The UNS reached the QM, the QM its BOT-M and the BOT-M its robot, each over a
    # tls:// link with certificates both ways: the pages were fetched.
    wait_for("5 pages fetched", lambda: node.status()["qm"]["fetched"] == 5)
    links = [line for line in open(node.log) if "connected" in line or "link up" in line]
    assert any("QM link up (tls://localhost" in line for line in links), links
    fwd = node.status()["uns"]["forwarder"]
    assert fwd["qm_connected"] is True and fwd["qm"].startswith("tls://"), fwd
    xml = node.lcc("cu", "query", "--cu", f"localhost:{node.ports['cu_tls']}", "--tls", "--ca", pki.ca,
                   "--format", "xml").stdout.decode()
    assert xml.count("<url ") == 5, xml[:400]
    # The certificate names localhost, not 127.0.0.1: a client that asks for the
    # address refuses the server.
    bad = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns_tls']}", "--tls", "--ca", pki.ca, "--id",
                   pid, "--password", password, "-", stdin=scan, check=False)
    assert bad.returncode == 2 and "IP address mismatch" in bad.stderr.decode(), bad.stderr
    # A client with the CA but without a certificate of its own gets no session on
    # the QM's tls:// port (tls.peer_ca_file: both sides show one).
    why = without_certificate(node.ports["qm"], pki.ca)
    assert "certificate required" in why, why
    return pid, password


def burst_of_sessions(node, pki, pid, password, threads=16, each=32):
    """Many short CP sessions at once over TLS, half of them ended with a reset: lccd
    must answer every one and stay up."""
    ctx = ssl.create_default_context(cafile=pki.ca)
    hello = (f'<lococa:init xmlns:lococa="http://www.lococa.org/1.0"><provider id="{pid}" passwd="{password}"/>'
             f'</lococa:init><lococa:set xmlns:lococa="http://www.lococa.org/1.0" set="partial"/>').encode()
    results = []

    def client(t):
        for i in range(each):
            raw = socket.create_connection(("127.0.0.1", node.ports["uns_tls"]), timeout=20)
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                s.sendall(hello)
                got = b""
                while b"</lococa:set_result>" not in got and b"init_rejected" not in got:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
                results.append(got)
                if (t + i) % 2 == 0:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    refused = [r for r in results if b"set_accepted" not in r]
    assert len(results) == threads * each and not refused, (len(results), len(refused), refused[:1])
    node.status()  # still up


def check_sighup_reload(node, pki):
    """New connections get the reloaded certificate; an expired one is refused by clients."""
    cert, key = pki.path("server.pem"), pki.path("server.key")
    pki.issue("reloaded", "DNS:localhost")
    os.replace(pki.path("reloaded.pem"), cert)
    os.replace(pki.path("reloaded.key"), key)
    node.proc.send_signal(signal.SIGHUP)
    wait_for("the log says reloaded", lambda: "TLS certificates reloaded" in open(node.log).read())
    rc, out = s_client(node.ports["cu_tls"], pki.ca, "-verify_hostname", "localhost")
    assert rc == 0 and "CN = reloaded" in out, out
    pki.issue("old", "DNS:localhost", expired=True)
    os.replace(pki.path("old.pem"), cert)
    os.replace(pki.path("old.key"), key)
    node.proc.send_signal(signal.SIGHUP)
    wait_for("a second reload", lambda: open(node.log).read().count("TLS certificates reloaded") == 2)
    r = node.lcc("cu", "query", "--cu", f"localhost:{node.ports['cu_tls']}", "--tls", "--ca", pki.ca, check=False)
    assert r.returncode == 2 and "certificate has expired" in r.stderr.decode(), r.stderr
    # A broken file: the reload is refused and the old context stays.
    with open(key, "w") as f:
        f.write("not a key\n")
    node.proc.send_signal(signal.SIGHUP)
    wait_for("a refused reload", lambda: "TLS certificates not reloaded" in open(node.log).read())


def check_mutual_tls(args, work, pki):
    """tls.client_ca_file: a client without a certificate is refused; plain HTTP is off."""
    cert, key = pki.issue("server2", "DNS:localhost")
    client_cert, client_key = pki.issue("client", "DNS:cu.test")
    ctx = ssl.create_default_context(cafile=pki.ca)
    ctx.load_cert_chain(client_cert, client_key)
    node = TlsNode(args, work, "mtls", {"http": "''", "cu": "''", "https": "127.0.0.1:{https}",
                                        "cu_tls": "127.0.0.1:{cu_tls}"},
                   {"cert_file": cert, "key_file": key, "client_ca_file": pki.ca}, roles=["cu"], status_ctx=ctx)
    try:
        node.start()
        assert refused(node.ports["http"]) and refused(node.ports["cu"])
        cu = f"localhost:{node.ports['cu_tls']}"
        r = node.lcc("cu", "query", "--cu", cu, "--tls", "--ca", pki.ca, check=False)
        assert r.returncode == 2, (r.returncode, r.stderr)
        why = without_certificate(node.ports["cu_tls"], pki.ca)
        assert "certificate required" in why, why
        r = node.lcc("cu", "query", "--cu", cu, "--tls", "--ca", pki.ca, "--cert", client_cert, "--key", client_key)
        assert b'count="0"' in r.stdout, r.stdout
        r = sh(["curl", "-sS", "--cacert", pki.ca, f"https://localhost:{node.ports['https']}/status"], work,
               check=False)
        assert r.returncode != 0, r.stdout
        r = sh(["curl", "-sS", "--cacert", pki.ca, "--cert", client_cert, "--key", client_key,
                f"https://localhost:{node.ports['https']}/status"], work)
        assert json.loads(r.stdout)["roles"] == ["cu"], r.stdout
        node.stop()
    finally:
        node.kill()


def main():
    args = e2e_args()
    work = tempfile.mkdtemp(prefix="lcc-tls-")
    pki = Pki(os.path.join(work, "pki"))
    cert, key = pki.issue("server", "DNS:localhost")
    check_config_errors(args, work, pki)
    site = Site(os.path.join(work, "site"))
    node = TlsNode(args, work, "lccd",
                   {"uns": "''", "cu": "''", "uns_tls": "127.0.0.1:{uns_tls}", "cu_tls": "127.0.0.1:{cu_tls}",
                    "https": "127.0.0.1:{https}", "qm": "tls://127.0.0.1:{qm}", "botm": "tls://127.0.0.1:{botm}",
                    "robots": "tls://127.0.0.1:{robots}"},
                   {"cert_file": cert, "key_file": key, "peer_ca_file": pki.ca})
    with open(node.config, "a") as f:  # the certificate names localhost: the links say so
        f.write(f"uns:\n  qm: tls://localhost:{node.ports['qm']}\n  max_connections_per_provider: 64\n"
                f"botm:\n  source: tls://localhost:{node.ports['botm']}\n"
                f"bot:\n  connect: tls://localhost:{node.ports['robots']}\n")

    def body():
        node.start()
        assert refused(node.ports["uns"]) and refused(node.ports["cu"])
        check_independent_clients(node, pki)
        check_plain_text_closed(node)
        pid, password = run_cp_session(node, site, pki, work)
        burst_of_sessions(node, pki, pid, password)
        check_sighup_reload(node, pki)
        check_mutual_tls(args, work, pki)
        node.stop()

    run_guarded(node, site, work, body)
    print("tls e2e: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
