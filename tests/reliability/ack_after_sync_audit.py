#!/usr/bin/env python3
"""Ack-after-sync audit (issue 15 §2): every set_accepted a CP reads was preceded by
the fdatasync of that set.

One real lccd (all roles, the Node of tests/e2e/pipeline_test.py) runs under
`strace -f -tt -e trace=openat,write,writev,sendmsg,sendto,fdatasync,fsync`. N sets are
sent one by one with `lcc cp send`, each naming a URL with a marker of its own. The
script then reads the trace: for set k, the last write of its marker into a journal
segment (the QM's intake journal `qm/journal/*.jnl`, or the UNS spool
`uns/journal/*.jnl`), then an fdatasync/fsync of a journal segment that started after
that write ended and returned before the k-th `set_accepted` was written to the CP's
socket. A set_accepted without such a sync fails the audit.

  tests/reliability/ack_after_sync_audit.py --bin build/bin --plugins build/plugins [--sets 20] [--spool]
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from pipeline_test import Node, wait_for  # noqa: E402

LINE = re.compile(r"^(\d+)\s+(\d\d):(\d\d):(\d\d\.\d+) (.*)$")


def untraceable_leak_check_off():
    """The environment for a process under strace: LeakSanitizer cannot run under
    ptrace and would fail the exit of an ASan build, so its leak check is off there
    (scripts/sanitize.sh runs every other lccd with it)."""
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return env


class TracedNode(Node):
    def __init__(self, args, work, trace, **kw):
        super().__init__(args, work, **kw)
        self.trace = trace

    def start(self):
        self.proc = subprocess.Popen(
            ["strace", "-f", "-tt", "-s", "256", "-o", self.trace,
             "-e", "trace=openat,write,writev,sendmsg,sendto,fdatasync,fsync",
             os.path.join(self.bin, "lccd"), "-c", self.config],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=untraceable_leak_check_off())
        wait_for(f"{self.name} /status", lambda: self.status() is not None)

    def stop(self):
        # SIGTERM to lccd itself (strace's child); strace ends with it.
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            child = int(f.read().split()[0])
        os.kill(child, signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        assert rc == 0, f"lccd exited {rc} on SIGTERM\n{self.log_tail()}"


def seconds(h, m, s):
    return int(h) * 3600 + int(m) * 60 + float(s)


def parse(trace):
    """Syscalls as (start, end, name, args, result), unfinished/resumed pairs joined."""
    calls, pending = [], {}
    with open(trace, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue
            pid, t, rest = m.group(1), seconds(m.group(2), m.group(3), m.group(4)), m.group(5)
            if rest.endswith("<unfinished ...>"):
                pending[pid] = (t, rest[: -len("<unfinished ...>")])
                continue
            r = re.match(r"<\.\.\. (\w+) resumed>(.*)$", rest)
            if r and pid in pending:
                start, head = pending.pop(pid)
                rest = head.rstrip() + r.group(2)
                t0 = start
            else:
                t0 = t
            c = re.match(r"(\w+)\((.*)\)\s+=\s+(-?\d+)", rest)
            if c:
                calls.append((t0, t, c.group(1), c.group(2), int(c.group(3))))
    return calls


def audit(calls, markers):
    journal_fds = set()
    last_write = {}   # marker -> end time of its last journal write
    syncs = []        # (start, end) of journal syncs
    accepted = []     # start times of set_accepted writes
    for start, end, name, args, res in calls:
        if name == "openat" and res >= 0 and re.search(r"/(qm|uns)/journal/\d+\.jnl\"", args):
            journal_fds.add(res)
            continue
        fd = re.match(r"\s*(\d+)\s*(,|$)", args)
        fd = int(fd.group(1)) if fd else -1
        if name in ("fdatasync", "fsync") and fd in journal_fds and res == 0:
            syncs.append((start, end))
        elif name in ("write", "writev") and fd in journal_fds:
            for mk in markers:
                if mk in args:
                    last_write[mk] = end
        if name in ("write", "writev", "sendmsg", "sendto") and "set_accepted" in args:
            accepted.append(start)
    problems = []
    if len(accepted) != len(markers):
        problems.append(f"{len(accepted)} set_accepted written for {len(markers)} sets")
    for k, mk in enumerate(markers[: len(accepted)]):
        w = last_write.get(mk)
        if w is None:
            problems.append(f"set {k + 1} ({mk}) acked but never written to a journal")
            continue
        if not any(s >= w and e <= accepted[k] for s, e in syncs):
            problems.append(f"set {k + 1} ({mk}) acked at {accepted[k]:.6f} without a sync after its write at {w:.6f}")
    return problems, len(syncs)


def self_test():
    """The audit must fail a trace whose sync comes after the ack (or never comes)."""
    good = ['1 10:00:00.000001 openat(AT_FDCWD, "/d/qm/journal/00000000000000000001.jnl", O_WRONLY) = 7',
            '1 10:00:00.000002 write(7, "..ackaudit0000x..", 9) = 9',
            '1 10:00:00.000003 fdatasync(7 <unfinished ...>',
            '2 10:00:00.000004 write(9, "x", 1) = 1',
            '1 10:00:00.000005 <... fdatasync resumed>) = 0',
            '2 10:00:00.000006 sendto(5, "<set_accepted received=\\"1\\"/>", 30, 0, NULL, 0) = 30']
    late = good[:2] + [good[5], '1 10:00:00.000007 fdatasync(7) = 0']
    with tempfile.TemporaryDirectory() as d:
        for lines, want_ok in ((good, True), (late, False), (good[:2] + good[5:], False)):
            path = os.path.join(d, "t.log")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            problems, _ = audit(parse(path), ["ackaudit0000x"])
            assert (not problems) == want_ok, (lines, problems)


def main():
    self_test()
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--sets", type=int, default=20)
    ap.add_argument("--spool", action="store_true",
                    help="a UNS whose QM is absent: every set is spooled (uns/journal) before its set_accepted")
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    work = tempfile.mkdtemp(prefix="lcc-ack-audit-")
    trace = os.path.join(work, "strace.log")
    if args.spool:
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            absent = s.getsockname()[1]
        node = TracedNode(args, work, trace, roles=["uns"], extra=f"uns:\n  qm: 127.0.0.1:{absent}\n")
    else:
        node = TracedNode(args, work, trace)
    try:
        node.start()
        out = node.lcc("provider", "add", "--prefix", "http://127.0.0.1:9/").stdout.decode()
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, out
        markers = [f"ackaudit{k:04d}x" for k in range(args.sets)]
        for mk in markers:
            node.lcc("cp", "send", "--uns", f"127.0.0.1:{node.ports['uns']}", "--id", m.group(1),
                     "--password", m.group(2), "-",
                     stdin=f'<url c="http://127.0.0.1:9/{mk}.html" m="text/html"/>\n'.encode())
        node.stop()
        problems, n_syncs = audit(parse(trace), markers)
        if problems:
            print("ack-after-sync audit FAILED:\n  " + "\n  ".join(problems))
            sys.exit(1)
        print(f"ack-after-sync audit ({'UNS spool' if args.spool else 'QM intake journal'}): {len(markers)} sets, "
              f"every set_accepted after the sync of its set ({n_syncs} journal syncs traced)")
    finally:
        node.kill()
        if os.environ.get("LCC_KEEP_TRACE"):
            print("trace kept in", trace)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
