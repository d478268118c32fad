#!/usr/bin/env python3
"""The bed itself (ctest multihost_bed): what every multi-host scenario relies on.

- three hosts reach each other over the bridge (ICMP echo), and only over it: a host
  has no route out (the route lookup for 1.1.1.1 fails, and a connect to 192.0.2.1,
  TEST-NET-1, fails at once with ENETUNREACH while eth0 sends no packet);
- a cut link stops traffic to that host, a healed one carries it again;
- relay.py adds its delay (round trips through it are >= 2 x delay slower), and with
  drop 1.0 closes the connection at the first chunk;
- tc tbf caps a host's bandwidth;
- SIGSTOP / SIGCONT / kill -9 of a process in a host;
- teardown leaves no namespace (and so no veth) behind: after close(), after a test
  body that raised, and, with `bed.py --cleanup`, after a run killed with SIGKILL.
Exit 77 (skipped, one line) when namespaces are not allowed.
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NETTOOLS = [sys.executable, os.path.join(HERE, "nettools.py")]


def tool(host, *argv, check=True, timeout=30):
    return host.run([*NETTOOLS, *map(str, argv)], check=check, timeout=timeout).stdout.decode().strip()


def wait_listening(proc):
    bedlib.wait_until(f"{proc.host.name}/{proc.name} listening",
                      lambda: proc.alive() and "listening on" in proc.log_tail(), timeout=15)


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def check_reach_and_isolation(bed):
    a, b, c = bed["a"], bed["b"], bed["c"]
    for src, dst in ((a, b), (b, c), (c, a)):
        out = tool(src, "ping", dst.addr, "--count", 2)
        assert out != "no reply", f"{src.name} -> {dst.name}: {out}"
    routes = a.run(["ip", "route", "show", "table", "all"]).stdout.decode()
    assert "default" not in routes, routes
    r = a.run(["ip", "route", "get", "1.1.1.1"], check=False)
    assert r.returncode != 0 and b"unreachable" in r.stderr, (r.returncode, r.stdout, r.stderr)
    before = a.tx_packets()
    out = tool(a, "connect", "192.0.2.1", 80, "--timeout", 2, check=False)
    assert out.startswith("errno ENETUNREACH"), out
    assert float(out.split()[2]) < 500, f"not at once: {out}"
    assert a.tx_packets() == before, "a packet left for an outside address"
    print("ok: hosts reach each other over the bed, and nothing else")


def check_cut_heal(bed):
    a, b = bed["a"], bed["b"]
    b.cut()
    out = tool(a, "ping", b.addr, "--count", 1, "--timeout", 1, check=False)
    assert out == "no reply", f"b answered while cut: {out}"
    b.heal()
    bedlib.wait_until("b answers after heal",
                      lambda: tool(a, "ping", b.addr, "--count", 1, "--timeout", 1, check=False) != "no reply",
                      timeout=15)
    print("ok: cut stops traffic, heal brings it back")


def check_relay(bed):
    a, b, c = bed["a"], bed["b"], bed["c"]
    echo = c.spawn("echo", [*NETTOOLS, "echo-server", c.addr, "7000", "--lifetime", "60"])
    wait_listening(echo)
    slow = b.spawn("relay-slow", bedlib.relay_argv(f"{b.addr}:7001", f"{c.addr}:7000", delay_ms=100, lifetime=60))
    lossy = b.spawn("relay-lossy", bedlib.relay_argv(f"{b.addr}:7002", f"{c.addr}:7000", drop=1.0, lifetime=60))
    wait_listening(slow)
    wait_listening(lossy)
    direct = float(tool(a, "rtt", c.addr, 7000, "--count", 5))
    relayed = float(tool(a, "rtt", b.addr, 7001, "--count", 5))
    assert relayed >= direct + 190, f"relay adds too little: direct {direct} ms, relayed {relayed} ms"
    assert relayed < direct + 1000, f"relay adds too much: direct {direct} ms, relayed {relayed} ms"
    out = tool(a, "rtt", b.addr, 7002, "--count", 1, check=False)
    assert out in ("closed", "") or "Error" in out, f"lossy relay let a round trip through: {out!r}"
    assert "dropped" in lossy.log_tail(), lossy.log_tail()
    print(f"ok: relay delay 100 ms one way -> round trip {direct:.1f} ms direct, {relayed:.1f} ms relayed; "
          "drop 1.0 closes")


def check_tbf(bed):
    a, c = bed["a"], bed["c"]
    sink = c.spawn("sink", [*NETTOOLS, "sink", c.addr, "7100", "--lifetime", "60"])
    wait_listening(sink)
    fast = float(tool(a, "blast", c.addr, 7100, 200000).split()[0])
    a.rate_limit("1mbit")
    capped = float(tool(a, "blast", c.addr, 7100, 200000).split()[0])
    a.rate_limit(None)
    # 200000 bytes at 1 Mbit/s: 1.6 s, less the 16 kB burst.
    assert capped >= 1.2, f"tbf did not cap: {capped:.3f} s (uncapped {fast:.3f} s)"
    print(f"ok: tbf 1mbit: 200 kB in {capped:.2f} s (uncapped {fast:.3f} s)")


def check_signals(bed):
    a = bed["a"]
    p = a.spawn("sleeper", ["sleep", "60"])
    bedlib.wait_until("sleeper runs", lambda: proc_state(p.pid) in "SR", timeout=5)
    p.pause()
    bedlib.wait_until("sleeper stopped", lambda: proc_state(p.pid) == "T", timeout=5)
    p.resume()
    bedlib.wait_until("sleeper continued", lambda: proc_state(p.pid) in "SR", timeout=5)
    p.kill9()
    assert p.popen.returncode == -signal.SIGKILL, p.popen.returncode
    print("ok: SIGSTOP, SIGCONT, kill -9")


def leftovers(prefix):
    ns = [n for n in bedlib.namespaces() if n.startswith(prefix + "-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True).stdout.decode()
    veths = [line for line in links.splitlines() if prefix in line]
    return ns + veths


CHILD = """
import sys, time
sys.path.insert(0, {here!r})
import bed as bedlib
b = bedlib.Bed()
b.add_host("x", "10.231.0.51")
b.add_host("y", "10.231.0.52")
b["x"].spawn("sleeper", ["sleep", "60"])
print("up", b.prefix, flush=True)
if {mode!r} == "raise":
    raise RuntimeError("a failing test body")
time.sleep(60)
"""


def check_teardown_after_failure_and_kill():
    # A child whose test raises: its bed (prefix lccmh<its pid>) is gone when it exits.
    r = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE, mode="raise")],
                       capture_output=True, timeout=60)
    assert r.returncode != 0 and b"a failing test body" in r.stderr, r
    prefix = r.stdout.decode().split()[1]
    assert leftovers(prefix) == [], leftovers(prefix)
    # A child killed with SIGKILL leaves its bed; --cleanup removes it by prefix.
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(here=HERE, mode="hang")],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    prefix = f"{bedlib.BASE_PREFIX}{child.pid}"
    try:
        assert child.stdout.readline().split() == [b"up", prefix.encode()]
        child.kill()
        child.wait(timeout=10)
        assert len(leftovers(prefix)) == 3, leftovers(prefix)  # hub, x, y
        out = subprocess.run([sys.executable, os.path.join(HERE, "bed.py"), "--cleanup", "--prefix", prefix],
                             capture_output=True, timeout=60).stdout.decode()
        assert "removed 3 namespace(s)" in out, out
        assert leftovers(prefix) == [], leftovers(prefix)
    finally:
        child.kill()
        bedlib.cleanup(prefix=prefix)
    print("ok: no namespace left after a failing test, nor after --cleanup of a killed one")


def main():
    bedlib.require_namespaces()
    start = time.monotonic()
    bed = bedlib.Bed()
    prefix = bed.prefix
    try:
        bed.add_host("a", "10.231.0.11")
        bed.add_host("b", "10.231.0.12")
        bed.add_host("c", "10.231.0.13")
        check_reach_and_isolation(bed)
        check_cut_heal(bed)
        check_relay(bed)
        check_tbf(bed)
        check_signals(bed)
    except BaseException:
        bed.dump_logs()
        raise
    finally:
        bed.close()
    assert leftovers(prefix) == [], f"left behind: {leftovers(prefix)}"
    print("ok: close() left no namespace and no veth")
    check_teardown_after_failure_and_kill()
    print(f"multihost bed: 1 passed, 0 failed ({time.monotonic() - start:.1f} s)")


if __name__ == "__main__":
    main()
