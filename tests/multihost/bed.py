#!/usr/bin/env python3
"""A multi-host test bed made of Linux network namespaces (issue 27 §4).

Each host is a namespace `<prefix>-<name>` (prefix `lccmh<pid>` unless given) with a
veth `eth0` whose other end is plugged into a Linux bridge `br0` in a namespace
`<prefix>-hub`. Hosts get addresses in 10.231.0.0/24 from the test, a /24 route on
eth0 and nothing else: no default route, no NAT, no link to the machine's own network.
Every veth is created inside the hub namespace and its host end moved straight into
the host's namespace, so nothing is ever added to, or changed in, the root namespace.

A Bed starts processes inside hosts (`ip netns exec`) with their output kept in
`<workdir>/logs/<host>-<name>.log`, cuts and heals a host's link (the hub end of its
veth, as a cable pulled at the switch), caps a host's bandwidth (`tc tbf`), and
kill -9 / SIGSTOP / SIGCONT a process. close() (also run from atexit and on SIGTERM /
SIGINT) kills every process and deletes every namespace, whatever happened.
Beds left by a run that was killed with SIGKILL are removed by the next run (their
prefix names a dead pid) or by `bed.py --cleanup [--prefix P]`.

Skipping: `require_namespaces()` exits with SKIP (77, ctest's SKIP_RETURN_CODE for
these tests) and one line when not root or `ip netns add` fails.
"""
import argparse
import atexit
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
NETWORK = ipaddress.ip_network("10.231.0.0/24")
BASE_PREFIX = "lccmh"
HERE = os.path.dirname(os.path.abspath(__file__))


def sh(argv, check=True, timeout=30, capture=True):
    r = subprocess.run(argv, capture_output=capture, timeout=timeout, stdin=subprocess.DEVNULL)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} -> {r.returncode}: {(r.stderr or b'').decode().strip()}")
    return r


def wait_until(what, fn, timeout, interval=0.1):
    """fn() until truthy, at most `timeout` seconds; the last value or error is reported."""
    end = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - kept for the report
            last = e
        if time.monotonic() >= end:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def namespaces():
    out = sh(["ip", "netns", "list"]).stdout.decode()
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def require_namespaces():
    """Exits 77 with one line when this machine does not let the test make namespaces."""
    if os.geteuid() != 0:
        print("skipped: the multi-host bed needs root (ip netns)")
        sys.exit(SKIP)
    probe = f"{BASE_PREFIX}{os.getpid()}-probe"
    try:
        r = sh(["ip", "netns", "add", probe], check=False)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"skipped: ip netns is not usable here: {e}")
        sys.exit(SKIP)
    if r.returncode != 0:
        print(f"skipped: ip netns add is not allowed here: {r.stderr.decode().strip()}")
        sys.exit(SKIP)
    # `ip netns exec` also needs a mount namespace of its own with / as a mount point
    # (not so in a chroot such as scripts/fresh-debian-check.sh's).
    r = sh(["ip", "netns", "exec", probe, "true"], check=False)
    sh(["ip", "netns", "del", probe], check=False)
    if r.returncode != 0:
        print(f"skipped: ip netns exec is not usable here: {r.stderr.decode().strip()}")
        sys.exit(SKIP)


def kill_namespace(ns):
    """Kills every process in ns and deletes it (its veths go with it)."""
    pids = sh(["ip", "netns", "pids", ns], check=False).stdout.decode().split()
    for p in pids:
        try:
            os.kill(int(p), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    for p in pids:  # bounded: each pid gone within 5 s or left to the kernel
        end = time.monotonic() + 5
        while os.path.exists(f"/proc/{p}") and time.monotonic() < end:
            if _is_zombie(p):
                break
            time.sleep(0.02)
    sh(["ip", "netns", "del", ns], check=False)


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def cleanup(prefix=None, stale_only=False):
    """Deletes beds by prefix (every `lccmh*` when None). stale_only: only those whose
    prefix names a pid that no longer runs. Returns the namespaces removed."""
    removed = []
    for ns in namespaces():
        m = re.fullmatch(rf"({BASE_PREFIX}(\d+))-[a-z0-9]+", ns)
        if not m or (prefix and m.group(1) != prefix):
            continue
        if stale_only and os.path.exists(f"/proc/{m.group(2)}"):
            continue
        kill_namespace(ns)
        removed.append(ns)
    return removed


class Proc:
    """A process started inside a host, in its own process group."""

    def __init__(self, host, name, popen, log):
        self.host, self.name, self.popen, self.log = host, name, popen, log

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self):
        self.signal(signal.SIGKILL)
        self.popen.wait(timeout=10)

    def pause(self):
        self.signal(signal.SIGSTOP)

    def resume(self):
        self.signal(signal.SIGCONT)

    def terminate(self, timeout=15):
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit code."""
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return self.popen.returncode

    def log_tail(self, lines=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""


class Host:
    def __init__(self, bed, name, addr):
        self.bed, self.name, self.addr = bed, name, addr
        self.ns = f"{bed.prefix}-{name}"
        self.hub_end = f"v{name}"[:15]

    def cmd(self, argv, user=None):
        """argv run inside this host (as `user` when given)."""
        inner = ["runuser", "-u", user, "--", *argv] if user else list(argv)
        return ["ip", "netns", "exec", self.ns, *inner]

    def run(self, argv, check=True, timeout=30, user=None, input=None):
        r = subprocess.run(self.cmd(argv, user), capture_output=True, timeout=timeout, input=input,
                           stdin=None if input is not None else subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise AssertionError(f"[{self.name}] {' '.join(argv)} -> {r.returncode}\n"
                                 f"{r.stdout.decode(errors='replace')}\n{r.stderr.decode(errors='replace')}")
        return r

    def spawn(self, name, argv, user=None, env=None, cwd=None):
        """Starts argv in this host; stdout and stderr go to <workdir>/logs/<host>-<name>.log."""
        log = os.path.join(self.bed.logdir, f"{self.name}-{name}.log")
        with open(log, "ab") as out:
            popen = subprocess.Popen(self.cmd(argv, user), stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=env, cwd=cwd)
        proc = Proc(self, name, popen, log)
        self.bed.procs.append(proc)
        return proc

    def http_get(self, url, timeout=2):
        """(status, body) of a GET made from this host with curl; (0, b"") when no answer."""
        r = self.run(["curl", "-s", "-m", str(timeout), "-o", "-", "-w", "\n%{http_code}", url],
                     check=False, timeout=timeout + 5)
        body, _, code = r.stdout.rpartition(b"\n")
        return int(code or 0), body

    def cut(self):
        """Pulls this host's cable: the hub end of its veth goes down; nothing passes."""
        sh(["ip", "-n", self.bed.hub, "link", "set", self.hub_end, "down"])

    def heal(self):
        sh(["ip", "-n", self.bed.hub, "link", "set", self.hub_end, "up"])

    def rate_limit(self, rate="1mbit", burst="16kb", latency="200ms"):
        """Caps what this host sends (tc tbf on its eth0); rate=None removes the cap."""
        if rate is None:
            sh(["ip", "netns", "exec", self.ns, "tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
            return
        sh(["ip", "netns", "exec", self.ns, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
            "rate", rate, "burst", burst, "latency", latency])

    def tx_packets(self):
        with open(f"/var/run/netns/{self.ns}"):
            pass  # the namespace exists
        out = self.run(["cat", "/sys/class/net/eth0/statistics/tx_packets"]).stdout
        return int(out)


class Bed:
    """The hosts of one test. Use as a context manager, or call close()."""

    def __init__(self, prefix=None, workdir=None):
        self.prefix = prefix or f"{BASE_PREFIX}{os.getpid()}"
        assert re.fullmatch(rf"{BASE_PREFIX}\d+", self.prefix), self.prefix
        cleanup(stale_only=True)  # beds of runs killed with SIGKILL
        cleanup(prefix=self.prefix)  # one of ours with the same pid: not possible, but safe
        self.own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"{self.prefix}-")
        os.chmod(self.workdir, 0o755)  # services that run as another user reach their folders
        self.logdir = os.path.join(self.workdir, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.hosts = {}
        self.procs = []
        self.closed = False
        self.hub = f"{self.prefix}-hub"
        atexit.register(self.close)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        sh(["ip", "netns", "add", self.hub])
        for key in ("all", "default"):
            sh(["ip", "netns", "exec", self.hub, "sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"])
        sh(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
        sh(["ip", "-n", self.hub, "link", "set", "br0", "up"])
        sh(["ip", "-n", self.hub, "link", "set", "lo", "up"])

    def _on_signal(self, signum, _frame):
        self.close()
        sys.exit(128 + signum)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def add_host(self, name, addr):
        assert re.fullmatch(r"[a-z][a-z0-9]{0,12}", name) and name != "hub", name
        assert ipaddress.ip_address(addr) in NETWORK, f"{addr} is not in {NETWORK}"
        assert name not in self.hosts
        host = Host(self, name, addr)
        sh(["ip", "netns", "add", host.ns])
        # IPv4 only: no link-local IPv6 address, so no router solicitation or DAD packet
        # leaves on its own (the hosts send only what their processes send).
        for key in ("all", "default"):
            sh(["ip", "netns", "exec", host.ns, "sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"])
        sh(["ip", "-n", self.hub, "link", "add", host.hub_end, "type", "veth", "peer", "name", "eth0",
            "netns", host.ns])
        sh(["ip", "-n", self.hub, "link", "set", host.hub_end, "master", "br0"])
        sh(["ip", "-n", self.hub, "link", "set", host.hub_end, "up"])
        sh(["ip", "-n", host.ns, "link", "set", "lo", "up"])
        sh(["ip", "-n", host.ns, "addr", "add", f"{addr}/{NETWORK.prefixlen}", "dev", "eth0"])
        sh(["ip", "-n", host.ns, "link", "set", "eth0", "up"])
        self.hosts[name] = host
        return host

    def __getitem__(self, name):
        return self.hosts[name]

    def close(self):
        """Kills every process and deletes every namespace of this bed. Idempotent."""
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            p.resume()
            p.signal(signal.SIGKILL)
        for p in self.procs:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for host in self.hosts.values():
            kill_namespace(host.ns)
        kill_namespace(self.hub)
        cleanup(prefix=self.prefix)
        if self.own_workdir and not os.environ.get("LCC_MULTIHOST_KEEP"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def dump_logs(self, lines=30, out=sys.stderr):
        for p in self.procs:
            print(f"----- {p.host.name}/{p.name} ({p.log}) -----\n{p.log_tail(lines)}", file=out)


def relay_argv(listen, target, delay_ms=0, drop=0.0, seed=1, lifetime=120, max_conns=1000):
    """The argv of relay.py (run it in a host with Host.spawn)."""
    return [sys.executable, os.path.join(HERE, "relay.py"), "--listen", listen, "--target", target,
            "--delay-ms", str(delay_ms), "--drop", str(drop), "--seed", str(seed),
            "--lifetime", str(lifetime), "--max-conns", str(max_conns)]


def main():
    ap = argparse.ArgumentParser(description="the multi-host test bed's cleanup")
    ap.add_argument("--cleanup", action="store_true", help="remove leftover beds (namespaces and their processes)")
    ap.add_argument("--prefix", help=f"only this bed (e.g. {BASE_PREFIX}1234); default: every {BASE_PREFIX}*")
    args = ap.parse_args()
    if not args.cleanup:
        ap.error("nothing to do (use --cleanup)")
    removed = cleanup(prefix=args.prefix)
    print(f"removed {len(removed)} namespace(s)" + (": " + " ".join(removed) if removed else ""))


if __name__ == "__main__":
    main()
