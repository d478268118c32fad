#!/usr/bin/env python3
"""Resources (issue 15 §2): one real lccd (all roles, the Node of tests/e2e/pipeline_test.py).

  1. idle:    --idle connections to the UNS port send nothing; meanwhile a real CP session
              (`lcc cp send` of one set) completes, in under 2 s.
  2. trickle: a client that sends its init one byte every 200 ms is cut off by
              uns.session_timeout (3 s here) with 133.
  3. cycles:  --cycles connect/close cycles on the UNS port; afterwards lccd holds no more
              descriptors than before (/proc/<pid>/fd).
  4. limit:   a second lccd started with RLIMIT_NOFILE lowered to 256; clients open
              connections past it; lccd refuses what it cannot take, stays up, does not
              spin, and takes a real session once they are closed.

  tests/reliability/resources_test.py --bin build/bin --plugins build/plugins [--idle 1000] [--cycles 100000]
"""
import argparse
import os
import re
import resource
import shutil
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, wait_for  # noqa: E402

UNS_LIMITS = """uns:
  max_connections: 5000
  max_connections_per_ip: 5000
  idle_timeout: 60s
  session_timeout: 3s
"""


class LimitedNode(Node):
    """An lccd started with a lower open-files limit; its stderr goes to a file.

    Under the sanitizers (scripts/sanitize.sh) this process writes its reports to stderr,
    not to their log files: a sanitizer that cannot open its log file at the limit dies.
    And UBSan's vptr check asks whether an object's memory is readable through a pipe:
    with no descriptor left that fails, and the check reports "object has invalid vptr"
    about a valid object (a six-line program that uses up its descriptors before a
    virtual call shows it). That one report does not stop this process; stray_reports()
    lets it through and nothing else."""

    def __init__(self, args, work, nofile, **kw):
        super().__init__(args, work, **kw)
        self.nofile = nofile
        self.stderr_path = os.path.join(work, f"{self.name}.stderr")

    def start(self):
        import subprocess
        env = dict(os.environ)
        for key in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
            if key in env:
                env[key] += ":log_path=stderr"
        if "UBSAN_OPTIONS" in env:
            env["UBSAN_OPTIONS"] += ":halt_on_error=0"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [os.path.join(self.bin, "lccd"), "-c", self.config], stdout=subprocess.DEVNULL,
                stderr=err, env=env,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile)))
        wait_for(f"{self.name} /status", lambda: self.status() is not None)

    def stray_reports(self):
        """What the sanitizers wrote, less the false vptr reports (see the class): each of
        those says "does not point to an object of type", with the note "object has
        invalid vptr" (threads may interleave their lines). A real use after free in this
        process still stops it: ASan (halt_on_error=1) catches the virtual call's load."""
        with open(self.stderr_path, errors="replace") as f:
            text = f.read()
        errors = re.findall(r"runtime error: [^\n]*", text)
        other = [e for e in errors if "which does not point to an object of type" not in e]
        notes = text.count("object has invalid vptr")
        if other or notes != len(errors):
            return "\n".join([f"{len(errors)} runtime errors, {notes} invalid-vptr notes"] + (other or errors)[:20])
        return "\n".join(re.findall(r"[^\n]*(?:AddressSanitizer|LeakSanitizer|ThreadSanitizer)[^\n]*", text)[:20])


def provider(node):
    out = node.lcc("provider", "add", "--prefix", "http://127.0.0.1:9/").stdout.decode()
    m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
    assert m, out
    return m.group(1), m.group(2)


def session_seconds(node, pid, password, tag):
    t0 = time.monotonic()
    r = node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", pid, "--password", password, "-",
                 stdin=f'<url c="http://127.0.0.1:9/{tag}.html" m="text/html"/>\n'.encode())
    took = time.monotonic() - t0
    assert b"accepted" in r.stdout + r.stderr, (r.stdout, r.stderr)
    return took


def fds(node):
    return len(os.listdir(f"/proc/{node.proc.pid}/fd"))


def uns_connections(node):
    return node.status()["uns"]["connections"]


def idle_and_session(node, pid, password, n):
    idle = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", node.ports["uns"]), timeout=5)
        idle.append(s)
    wait_for(f"{n} idle connections", lambda: uns_connections(node) >= n)
    took = session_seconds(node, pid, password, "idle")
    for s in idle:
        s.close()
    wait_for("the idle connections gone", lambda: uns_connections(node) == 0)
    assert took < 2.0, f"a session took {took:.2f} s beside {n} idle connections"
    return took


def trickle(node):
    init = (b'<lococa:init xmlns:lococa="http://www.lococa.org/1.0"><id>1</id><password>x</password>'
            b'</lococa:init>')
    s = socket.create_connection(("127.0.0.1", node.ports["uns"]), timeout=10)
    t0 = time.monotonic()
    got = b""
    s.settimeout(0.2)
    try:
        for b in init * 10:
            s.send(bytes([b]))
            try:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
            except socket.timeout:
                pass
            if time.monotonic() - t0 > 15:
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    took = time.monotonic() - t0
    s.close()
    assert took < 8, f"a trickling client was kept {took:.1f} s (uns.session_timeout 3 s)"
    return took


def cycles(node, n):
    before = fds(node)
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", node.ports["uns"]), timeout=5)
        if i % 2:
            s.send(b"<lococa:init")
        s.close()
    wait_for("the cycled connections gone", lambda: uns_connections(node) == 0)
    wait_for("the descriptors back", lambda: fds(node) <= before + 2)
    return before, fds(node)


def at_the_limit(args, work):
    node = LimitedNode(args, work, 256, name="limited", extra=UNS_LIMITS)
    try:
        node.start()
        pid, password = provider(node)
        held = []
        for _ in range(400):  # past what 256 descriptors allow
            try:
                held.append(socket.create_connection(("127.0.0.1", node.ports["uns"]), timeout=2))
            except OSError:
                break
        time.sleep(1.0)
        cpu0 = sum(os.times()[:2])
        with open(f"/proc/{node.proc.pid}/stat") as f:
            ticks0 = sum(int(x) for x in f.read().split()[13:15])
        time.sleep(2.0)
        with open(f"/proc/{node.proc.pid}/stat") as f:
            ticks1 = sum(int(x) for x in f.read().split()[13:15])
        busy = (ticks1 - ticks0) / os.sysconf("SC_CLK_TCK") / 2.0
        assert node.proc.poll() is None, \
            f"lccd died at the open-files limit (exit {node.proc.returncode})\n" \
            f"{node.stray_reports()}\n{node.log_tail()}"
        for s in held:
            s.close()
        wait_for("the held connections gone", lambda: uns_connections(node) == 0)
        took = session_seconds(node, pid, password, "after-limit")
        node.stop()
        stray = node.stray_reports()
        assert not stray, f"sanitizer reports from the lccd at the limit:\n{stray}"
        print(f"limit: lccd at {busy:.0%} of a core while out of descriptors")
        assert busy < 0.5, f"lccd used {busy:.0%} of a core while out of descriptors"
        return len(held), busy, took
    finally:
        node.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--cycles", type=int, default=100000)
    ap.add_argument("--only-limit", action="store_true")
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    work = tempfile.mkdtemp(prefix="lcc-resources-")
    node = Node(args, work, extra=UNS_LIMITS)
    try:
        if args.only_limit:
            print(at_the_limit(args, work))
            return
        node.start()
        pid, password = provider(node)
        session_seconds(node, pid, password, "warm")
        took = idle_and_session(node, pid, password, args.idle)
        print(f"idle: a session took {took:.3f} s beside {args.idle} idle connections")
        t = trickle(node)
        print(f"trickle: cut off after {t:.1f} s")
        before, after = cycles(node, args.cycles)
        print(f"cycles: {args.cycles} connect/close, descriptors {before} before, {after} after")
        node.stop()
        held, busy, took = at_the_limit(args, work)
        print(f"limit: RLIMIT_NOFILE 256, {held} client connections held, lccd at {busy:.0%} of a core, "
              f"a session after them took {took:.3f} s")
    finally:
        node.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
