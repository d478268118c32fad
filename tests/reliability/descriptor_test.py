#!/usr/bin/env python3
"""Descriptor exhaustion (issue 25): one real lccd (all roles) at RLIMIT_NOFILE 512.

  1. one address: 400 connections from 127.0.0.2 to listen.uns_tls that never shake
     hands, and 400 plain ones to listen.uns and listen.cu; those past the per-address
     limits are refused at once (before any TLS handshake), so lccd stays below its limit
     and a real CP session from 127.0.0.1 is acked meanwhile.
  2. many addresses: 127.0.0.2 ... 127.0.0.9 together try for more descriptors than
     lccd has; what does not fit the descriptor budget is closed at once.
  Then: the QM is not failed, no cache-crash was raised, a real session is acked, and
  the URL it sent is fetched (fetching still works).

On the code before issue 25 step 1 took lccd to 512 of 512 descriptors (refused TLS
connections waited out the 10 s handshake timeout, uncounted): the intake journal could
not open its segment, the QM failed and raised cache-crash.

  tests/reliability/descriptor_test.py --bin build/bin --plugins build/plugins
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Site, free_port, wait_for  # noqa: E402
from resources_test import LimitedNode  # noqa: E402

NOFILE = 512
PER_ADDRESS = 400  # tries per address and port


def make_cert(work):
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                    "-days", "2", "-keyout", key, "-out", cert, "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def fds(node):
    return len(os.listdir(f"/proc/{node.proc.pid}/fd"))


def open_from(source, port, n, sockets):
    """Up to n connections from `source` (bound) to port; they send nothing."""
    made = 0
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        sockets.append(s)
        made += 1
    return made


def closed_by_server(s):
    """True when lccd closed this connection (EOF, reset), reading at most 2 s."""
    s.settimeout(2)
    try:
        while True:
            b = s.recv(4096)
            if not b:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, OSError):
        return False


def send_set(node, pid, password, url):
    r = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
                 stdin=f'<url c="{url}" m="text/html"/>\n'.encode(), check=False)
    return r.returncode == 0 and b"accepted" in r.stdout + r.stderr, (r.stdout + r.stderr).decode()[-400:]


def status_or_none(node):
    """/status, or None while lccd refuses new connections (its descriptor budget is spent)."""
    try:
        return node.status()
    except OSError:
        return None


def check_qm(node, when):
    qm = node.status()["qm"]
    assert not qm["failed"], f"{when}: the QM failed\n{node.log_tail()}"
    assert not qm["cache_crash"], f"{when}: cache-crash was raised\n{node.log_tail()}"


def flood(node, sources, ports, held):
    """Connections from each source to each port; asserts that the last 10 of each
    (source, port) were closed by lccd (refused) and that lccd stays below its limit."""
    for source in sources:
        for port in ports:
            mine = []
            open_from(source, port, PER_ADDRESS, mine)
            held.extend(mine)
            refused = sum(1 for s in mine[-10:] if closed_by_server(s))
            assert refused == 10, f"{source} -> {port}: {refused} of the last 10 connections refused"
    peak = fds(node)
    assert peak < NOFILE, f"lccd holds {peak} of {NOFILE} descriptors"
    return peak


def run(args, work):
    cert, key = make_cert(work)
    site = Site(os.path.join(work, "site"))
    tls_port = free_port()
    extra = f"""tls:
  cert_file: {cert}
  key_file: {key}
net:
  reserved_descriptors: 64
uns:
  max_connections_per_ip: 32
"""
    node = LimitedNode(args, work, NOFILE, name="descriptors", extra=extra)
    with open(node.config) as f:
        text = f.read()
    with open(node.config, "w") as f:
        f.write(text.replace("listen:\n", f"listen:\n  uns_tls: 127.0.0.1:{tls_port}\n", 1))
    held = []
    try:
        node.start()
        out = node.lcc("provider", "add", "--prefix", site.base).stdout.decode()
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, out
        pid, password = m.group(1), m.group(2)
        for i in range(3):
            site.write(f"p{i}.html", f"<html>page {i}</html>\n".encode())
        ok, why = send_set(node, pid, password, site.base + "p0.html")
        assert ok, why

        base = fds(node)
        # 1. one address
        t0 = time.monotonic()
        peak1 = flood(node, ["127.0.0.2"], [tls_port, node.ports["uns"], node.ports["cu"]], held)
        took = time.monotonic() - t0
        ok, why = send_set(node, pid, password, site.base + "p1.html")
        assert ok, f"a session beside one address's flood: {why}\n{node.log_tail()}"
        check_qm(node, "one address")
        print(f"one address: {len(held)} connections tried, lccd {base} descriptors before, peak {peak1}, {took:.1f} s")
        for s in held:
            s.close()
        held.clear()

        # 2. many addresses
        sources = [f"127.0.0.{i}" for i in range(2, 10)]
        peak2 = flood(node, sources, [tls_port, node.ports["uns"]], held)
        print(f"many addresses: {len(held)} connections tried, lccd peak {peak2} descriptors")
        # While the flood holds the budget every port, the HTTP one included, closes new
        # connections at once: /status is asked once they are gone.
        for s in held:
            s.close()
        held.clear()
        wait_for("the flood's connections gone", lambda: status_or_none(node) is not None
                 and status_or_none(node)["uns"]["connections"] == 0)
        check_qm(node, "many addresses")

        ok, why = send_set(node, pid, password, site.base + "p2.html")
        assert ok, f"a session after the floods: {why}\n{node.log_tail()}"
        wait_for("the three pages fetched", lambda: node.query_xml().getAttribute("count") == "3")
        check_qm(node, "after")
        node.stop()
        stray = node.stray_reports()
        assert not stray, f"sanitizer reports:\n{stray}"
    except BaseException:
        print(node.log_tail(), file=sys.stderr)
        raise
    finally:
        for s in held:
            s.close()
        node.kill()
        site.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    work = tempfile.mkdtemp(prefix="lcc-descriptors-")
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("descriptors: 1 passed, 0 failed")


if __name__ == "__main__":
    main()
