#!/usr/bin/env python3
"""Soak (issue 15 §2): a real deployment under mixed load for --duration seconds, with
lccd's (and lcc-bot's) memory, descriptors and threads sampled, and a verdict on them.

The deployment (the Node of tests/e2e/pipeline_test.py, storage-kyoto, the default):
  all:   one lccd with every role;
  split: a UNS lccd (roles uns) and a QM lccd (qm, botm, bot, cu, rs) over 127.0.0.1,
         the providers added on both with the same ids and passwords;
plus one lcc-bot process connected to the BOT-M's robot port (beside lccd's own robots),
and a local HTTP site on 127.0.0.1 (the crash harness's AnySite; paths under /gone/ 404).

The load, until --duration ends (every loop also bounded by --max-ops):
  - --providers providers, each one `lcc cp send` after another: partial sets of updates
    and deletes of a bounded URL universe (--universe URLs each, so the stores stop
    growing), now and then a full set of what it holds, a few URLs that 404, and in every
    set some hostile URLs (outside the prefix, javascript:, white space, a bad port, too
    long, a refused MIME type, a bad op, mt, sz or md5) that must each be refused with
    their code while the rest is accepted; now and then a wrong password (init refused);
  - a content user: `lcc cu query` as tar.gz (read back with tarfile), warc.gz (gunzipped,
    must start with WARC/1.1) and a mirror's xml `--since-seq --deleted`, in a loop;
  - chaos: --restarts clean restarts (SIGTERM, exit 0, start; in split mode the QM and the
    UNS in turn), the first at half the interval, under load; --hups SIGHUPs to every
    lccd and lcc-bot, each after its log file was renamed (the reopened log must appear).
Before and after each restart the load pauses for a "quiet point": no session or export
open, then every process's descriptors are counted.

Sampled every --sample seconds: VmRSS, VmHWM, threads (/proc/PID/status), descriptors
(/proc/PID/fd) of each process, the size of each data folder; a table is printed and
written as CSV (--csv).

The verdict (after the warm-up, the first 10% of the run, and for each process):
  - RSS: the median of the last quarter's samples is at most the median of the second
    quarter's × (1 + --rss-tolerance) + --rss-slack MiB; and within each life of the
    process (between restarts) long enough for 6 samples after its first fifth, the
    median of its second half is within the same bound of its first half's;
  - descriptors and threads: the last quarter's median is at most the second quarter's
    + --fd-slack; and every quiet point's count is at most the first quiet point's +
    --fd-slack (so each restart brings the descriptors back to the same count);
  - and no lccd died or stopped with a code other than 0, no hostile URL was accepted,
    no valid one refused, and no session or export failed outside a restart.

  tests/reliability/soak.py --bin build/bin --plugins build/plugins --duration 3600 \\
      [--mode all|split] [--sample S] [--csv FILE]
"""
import argparse
import csv
import gzip
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from crash_harness import AnyHandler, AnySite, interrupted  # noqa: E402
from pipeline_test import Node, wait_for  # noqa: E402

PASSWORD = "soak-password"
OP_TIMEOUT = 120


class GoneHandler(AnyHandler):
    """AnyHandler's pages, except that a path with /gone/ answers 404."""

    def do_GET(self):  # noqa: N802 - the http.server name
        if "/gone/" not in self.path:
            return super().do_GET()
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None


def proc_figures(pid):
    """{rss, hwm, anon, file (KiB), threads, fds} of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    got = {k: int(re.search(rf"^{name}:\s+(\d+)", text, re.M).group(1))
           for k, name in (("rss", "VmRSS"), ("hwm", "VmHWM"), ("anon", "RssAnon"), ("file", "RssFile"),
                           ("threads", "Threads"))}
    got["fds"] = fds
    return got


def folder_kib(path):
    total = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(d, n)).st_blocks * 512
            except OSError:
                pass  # a journal segment trimmed meanwhile
    return total // 1024


def small_kyoto_caches(config, size):
    """Names the three stores in a Node's lcc.yaml with Kyoto's memory map and B+ tree page
    cache at SIZE: caches that fill within the warm-up, so that what grows after is no cache."""
    options = f"{{plugin: storage-kyoto, options: {{mmap_size: {size}, page_cache: {size}}}}}"
    with open(config) as f:
        text = f.read()
    head = "storage:\n"
    assert text.count(head) == 1, text
    stores = "".join(f"  {s}: {options}\n" for s in ("queue", "content", "providers"))
    with open(config, "w") as f:
        f.write(text.replace(head, head + stores))


def reopened(log):
    try:
        with open(log) as f:
            return "SIGHUP: log reopened" in f.read()
    except OSError:
        return False


def hostile_urls(base, pid, other, tag):
    """(<url> element, code, marker) of URLs the UNS must refuse one by one."""
    mine = f"{base}p{pid}/"
    items = [
        (f'<url c="{base}p{other}/{tag}a.html" m="text/html"/>', 202, f"{tag}a"),
        (f'<url c="javascript:alert({tag}b)" m="text/html"/>', 201, f"{tag}b"),
        (f'<url c="{mine}{tag}c has space.html" m="text/html"/>', 201, f"{tag}c"),
        (f'<url c="http://127.0.0.1:99999/p{pid}/{tag}d.html" m="text/html"/>', 201, f"{tag}d"),
        (f'<url c="{mine}{tag}e{"x" * 2100}.html" m="text/html"/>', 201, f"{tag}e"),
        (f'<url c="{mine}{tag}f.gif" m="image/gif"/>', 203, f"{tag}f"),
        (f'<url c="{mine}{tag}g.html" m="text/html" op="frobnicate"/>', 204, f"{tag}g"),
        (f'<url c="{mine}{tag}h.html" m="text/html" mt="yesterday"/>', 205, f"{tag}h"),
        (f'<url c="{mine}{tag}i.html" m="text/html" sz="12a"/>', 205, f"{tag}i"),
        (f'<url c="{mine}{tag}j.html" m="text/html" md5="xyz"/>', 205, f"{tag}j"),
    ]
    return items


class Soak:
    def __init__(self, args, work):
        self.args, self.work = args, work
        self.rng = random.Random(args.seed)
        self.site = AnySite()
        self.site.server.RequestHandlerClass = GoneHandler
        self.nodes = self.make_nodes()
        self.bot = None
        self.stop = threading.Event()
        self.go = threading.Event()
        self.go.set()
        self.cv = threading.Condition()
        self.active = 0
        self.restarting = False
        self.windows = []  # (begin, end) of each restart: failures inside are excused
        self.restarted = []  # the node of each window
        self.problems, self.samples, self.quiet, self.events = [], [], [], []
        self.count = {k: 0 for k in ("sets", "cut", "refused", "badpw", "tar", "warc", "xml", "export_cut")}

    def make_nodes(self):
        a = self.args
        uns = (f"uns:\n  fullsets_per_period: 1000000\n  fullset_period: 1m\n")
        tuning = ("qm:\n  provider_refresh: 500ms\n  provider_inflight: 8\n  host_inflight: 8\n  retry_delay: 5s\n"
                  f"bot:\n  robots: 2\n  slots: 8\n")
        if a.mode == "all":
            self.qm = self.uns = Node(a, self.work, "lccd", extra=uns + tuning)
            nodes = {"lccd": self.qm}
        else:
            self.qm = Node(a, self.work, "qm", roles=["qm", "botm", "bot", "cu", "rs"], extra=uns + tuning)
            self.uns = Node(a, self.work, "uns", roles=["uns"],
                            extra=uns + f"  qm: 127.0.0.1:{self.qm.ports['qm']}\n  qm_retry: 200ms\n")
            nodes = {"qm": self.qm, "uns": self.uns}
        if a.kyoto_cache != "default":
            for n in nodes.values():
                small_kyoto_caches(n.config, a.kyoto_cache)
        return nodes

    # --- the deployment -------------------------------------------------------------
    def start(self):
        for n in self.nodes.values():
            n.start()
        for p in range(1, self.args.providers + 1):
            for n in self.nodes.values():
                out = n.lcc("provider", "add", "--prefix", f"{self.site.base}p{p}/", "--password",
                            PASSWORD).stdout.decode()
                assert re.fullmatch(rf"id={p} password=\S+\n", out), out
        self.bot_log = os.path.join(self.work, "lcc-bot.log")
        with open(self.bot_log, "ab") as log:
            self.bot = subprocess.Popen(
                [os.path.join(self.args.bin, "lcc-bot"), "--connect", f"127.0.0.1:{self.qm.ports['robots']}",
                 "--slots", "4", "--name", "soak-bot", "--plugin-dir", self.args.plugins,
                 "--fetcher", "fetch-curl", "--allow-private"],
                stdout=subprocess.DEVNULL, stderr=log)
        self.wait_robots()

    def wait_robots(self):
        want = 2 + 1  # lccd's own robots and the lcc-bot
        wait_for(f"{want} robots at the BOT-M",
                 lambda: self.qm.status().get("botm", {}).get("robots", 0) >= want, timeout=60)

    def pids(self):
        got = {name: n.proc.pid for name, n in self.nodes.items() if n.proc and n.proc.poll() is None}
        if self.bot and self.bot.poll() is None:
            got["lcc-bot"] = self.bot.pid
        return got

    def teardown(self):
        self.stop.set()
        self.go.set()
        for n in self.nodes.values():
            n.kill()
        if self.bot and self.bot.poll() is None:
            self.bot.kill()
            self.bot.wait()
        self.site.stop()

    # --- pausing for quiet points ---------------------------------------------------
    def begin_op(self):
        """Waits while the load is paused; False once the run ends."""
        while not self.stop.is_set():
            self.go.wait(1.0)
            with self.cv:
                if self.go.is_set() and not self.stop.is_set():
                    self.active += 1
                    return True
        return False

    def end_op(self):
        with self.cv:
            self.active -= 1
            self.cv.notify_all()

    def quiet_point(self, label):
        """Pauses the load, counts every process's descriptors and threads, resumes."""
        self.go.clear()
        with self.cv:
            self.cv.wait_for(lambda: self.active == 0, timeout=OP_TIMEOUT + 10)
        time.sleep(1.0)
        figs = {name: proc_figures(pid) for name, pid in self.pids().items()}
        self.quiet.append((self.now(), label, figs))
        self.go.set()

    def now(self):
        return time.time() - self.t0

    def excused(self, t_begin, t_end):
        """Did [t_begin, t_end] meet a restart (or one going on)?"""
        if self.restarting:
            return True
        return any(b - 1.0 <= t_end and t_begin <= e + 1.0 for b, e in self.windows)

    def problem(self, what):
        self.problems.append(f"{self.now():.0f} s: {what}")
        print(f"PROBLEM at {self.now():.0f} s: {what}", flush=True)

    # --- providers ------------------------------------------------------------------
    def sender(self, pid):
        rng = random.Random(self.args.seed * 1000 + pid)
        held, k = set(), 0
        while k < self.args.max_ops and self.begin_op():
            try:
                k += 1
                if k % 41 == 7:
                    self.wrong_password(pid)
                else:
                    self.send_set(pid, rng, held, k)
            finally:
                self.end_op()
            self.stop.wait(rng.uniform(0.2, 1.0))

    def make_set(self, pid, rng, held, k):
        base = f"{self.site.base}p{pid}/"
        full = k % 25 == 0
        lines = []
        if full:
            ids = sorted(held)
            lines = [f'<url c="{base}u{i}.html" m="text/html" mt="{self.mt(rng)}"/>' for i in ids]
        else:
            for _ in range(rng.randint(1, self.args.set_size)):
                i = rng.randrange(self.args.universe)
                if i in held and rng.random() < 0.3:
                    held.discard(i)
                    lines.append(f'<url c="{base}u{i}.html" m="text/html" op="delete"/>')
                else:
                    held.add(i)
                    lines.append(f'<url c="{base}u{i}.html" m="text/html" mt="{self.mt(rng)}"/>')
            if rng.random() < 0.2:
                lines.append(f'<url c="{base}gone/g{rng.randrange(20)}.html" m="text/html"/>')
        other = pid % self.args.providers + 1
        hostile = rng.sample(hostile_urls(self.site.base, pid, other, f"h{pid}x{k}"), 3)
        for h in hostile:
            lines.insert(rng.randint(0, len(lines)), h[0])
        return full, "\n".join(lines).encode() + b"\n", hostile

    @staticmethod
    def mt(rng):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - rng.randrange(86400)))

    def cp_send(self, pid, body, password=PASSWORD, full=False):
        cmd = [os.path.join(self.args.bin, "lcc"), "cp", "send", "--uns", f"127.0.0.1:{self.uns.ports['uns']}",
               "--id", str(pid), "--password", password] + (["--full"] if full else []) + ["-"]
        t_begin = self.now()
        try:
            r = subprocess.run(cmd, input=body, capture_output=True, timeout=OP_TIMEOUT)
            rc, out = r.returncode, (r.stdout + r.stderr).decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, out = -1, "no answer within %d s" % OP_TIMEOUT
        return rc, out, self.excused(t_begin, self.now())

    def send_set(self, pid, rng, held, k):
        full, body, hostile = self.make_set(pid, rng, held, k)
        rc, out, excused = self.cp_send(pid, body, full=full)
        # Exit 4: taken, with URLs refused (the hostile ones); still an acked set.
        if rc not in (0, 4) or not re.search(r"^accepted \d+ of \d+ urls$", out, re.M):
            if excused:
                self.count["cut"] += 1
            else:
                self.problem(f"provider {pid} set {k} ({'full' if full else 'partial'}) failed: {out[-400:]}")
            return
        self.count["sets"] += 1
        errors = re.findall(r"^error (\d+) (.*)$", out, re.M)
        for _, code, marker in hostile:
            if not any(int(c) == code and marker in rest for c, rest in errors):
                self.problem(f"provider {pid} set {k}: hostile {marker} not refused with {code}: {out[-600:]}")
        if len(errors) != len(hostile):
            self.problem(f"provider {pid} set {k}: {len(errors)} URLs refused, {len(hostile)} hostile: {out[-600:]}")
        self.count["refused"] += len(errors)

    def wrong_password(self, pid):
        rc, out, excused = self.cp_send(pid, b"", password="not-" + PASSWORD)
        if rc == 1 and "init rejected" in out:
            self.count["badpw"] += 1
        elif not excused:
            self.problem(f"provider {pid} with a wrong password: exit {rc}: {out[-300:]}")

    # --- the content user -----------------------------------------------------------
    def exporter(self):
        out = os.path.join(self.work, "export")
        last_seq, k = 0, 0
        while k < self.args.max_ops and self.begin_op():
            fmt = ("tar.gz", "warc.gz", "xml")[k % 3]
            k += 1
            t_begin = self.now()
            try:
                extra = ["--since-seq", str(last_seq), "--deleted"] if fmt == "xml" else []
                r = subprocess.run([os.path.join(self.args.bin, "lcc"), "cu", "query", "--cu",
                                    f"127.0.0.1:{self.qm.ports['cu']}", "--format", fmt, "-o", out,
                                    "--timeout", "30"] + extra, capture_output=True, timeout=OP_TIMEOUT)
                why = (r.stdout + r.stderr).decode(errors="replace")[-400:] if r.returncode else self.check_export(
                    fmt, out)
                if fmt == "xml" and not why:
                    last_seq = self.last_seq
            except subprocess.TimeoutExpired:
                why = "no answer"
            finally:
                self.end_op()
            if not why:
                self.count[fmt.split(".")[0]] += 1
            elif self.excused(t_begin, self.now()):
                self.count["export_cut"] += 1
            else:
                self.problem(f"cu query --format {fmt} failed: {why}")
            self.stop.wait(0.5)

    def check_export(self, fmt, path):
        """'' when the export reads back, else why not."""
        try:
            if fmt == "tar.gz":
                with tarfile.open(path, "r:gz") as t:
                    names = t.getnames()
                return "" if "MANIFEST.xml" in names else f"no MANIFEST.xml among {len(names)} members"
            if fmt == "warc.gz":
                with gzip.open(path, "rb") as f:
                    head = f.read(9)
                    while f.read(1 << 20):
                        pass
                return "" if head == b"WARC/1.1\r" else f"starts with {head!r}"
            with open(path, "rb") as f:
                m = re.search(rb'last_seq="(\d+)"', f.read(4096))
            if not m:
                return "no last_seq in the answer"
            self.last_seq = int(m.group(1))
            return ""
        except (OSError, tarfile.TarError, EOFError) as e:
            return f"unreadable: {e}"

    # --- chaos: restarts and SIGHUPs ------------------------------------------------
    def schedule(self):
        d, a = self.args.duration, self.args
        plan = [((k + 0.5) * d / a.restarts, "restart", k) for k in range(a.restarts)]
        plan += [((k + 0.25) * d / a.hups, "hup", k) for k in range(a.hups)]
        return sorted(plan)

    def chaos(self):
        for when, what, k in self.schedule():
            if self.stop.wait(max(0.0, when - self.now())):
                return
            try:
                if what == "restart":
                    names = list(self.nodes)
                    self.restart(names[k % len(names)], k)
                else:
                    self.hup()
            except Exception as e:  # noqa: BLE001 - the run goes on; the verdict fails
                self.problem(f"{what} {k}: {e}")

    def restart(self, name, k):
        node = self.nodes[name]
        self.quiet_point(f"before restart {k + 1}")
        time.sleep(1.0)  # the load again, so the restart meets open sessions and exports
        self.restarting = True
        b = self.now()
        self.events.append(f"restart {name}")
        try:
            try:
                node.stop()  # SIGTERM; asserts exit 0
            except (AssertionError, subprocess.TimeoutExpired) as e:
                self.problem(f"restart {k + 1} of {name}: {e}")
                node.kill()
            node.start()
            if node is self.qm:
                self.wait_robots()
        finally:
            self.windows.append((b, self.now()))
            self.restarted.append(name)
            self.restarting = False
        time.sleep(2.0)
        self.quiet_point(f"after restart {k + 1} ({name})")

    def hup(self):
        """Renames each lccd's log (a log rotation), SIGHUPs every process; the log reappears."""
        self.events.append("hup")
        for name, node in self.nodes.items():
            rotated = node.log + ".1"
            os.replace(node.log, rotated)
            node.proc.send_signal(signal.SIGHUP)
            wait_for(f"{name}'s log reopened after SIGHUP", lambda: reopened(node.log), timeout=30)
            os.remove(rotated)
        self.bot.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        for name, pid in [("lcc-bot", self.bot)] + [(n, x.proc) for n, x in self.nodes.items()]:
            if pid.poll() is not None:
                self.problem(f"{name} exited with {pid.returncode} after SIGHUP")

    # --- sampling -------------------------------------------------------------------
    def sampler(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.args.sample)

    def sample(self):
        row = {"t": round(self.now(), 1)}
        for name, pid in self.pids().items():
            figs = proc_figures(pid)
            for key, v in (figs or {}).items():
                row[f"{name}_{key}"] = v
        for name, node in self.nodes.items():
            row[f"{name}_data_kib"] = folder_kib(os.path.join(node.work, "var"))
        row.update(self.count)
        row["events"] = " ".join(self.events)
        self.events = []
        self.samples.append(row)
        self.print_row(row)

    def procs(self):
        return list(self.nodes) + ["lcc-bot"]

    def print_row(self, row):
        if len(self.samples) == 1:
            print("     t " + "".join(f"| {p:>7} rss/hwm/anon MiB  fds thr " for p in self.procs()) +
                  "| data MiB | sets  cut  exp | events", flush=True)
        cells = []
        for p in self.procs():
            if f"{p}_rss" in row:
                cells.append(f"| {row[f'{p}_rss'] / 1024:6.1f} {row[f'{p}_hwm'] / 1024:6.1f} "
                             f"{row[f'{p}_anon'] / 1024:6.1f} {row[f'{p}_fds']:5d} {row[f'{p}_threads']:3d} ")
            else:
                cells.append("|" + " " * 36 + "down ")
        data = sum(row[f"{n}_data_kib"] for n in self.nodes) / 1024
        exports = row["tar"] + row["warc"] + row["xml"]
        print(f"{row['t']:6.0f} " + "".join(cells) + f"| {data:8.1f} | {row['sets']:5d} {row['cut']:3d} "
              f"{exports:5d} | {row['events']}", flush=True)

    def write_csv(self, path):
        keys = []
        for row in self.samples:
            keys += [k for k in row if k not in keys]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            w.writerows(self.samples)


# --- the verdict ------------------------------------------------------------------------
def series(samples, key, lo, hi):
    return [r[key] for r in samples if key in r and lo <= r["t"] < hi]


def bound(base, args):
    return base * (1 + args.rss_tolerance) + args.rss_slack * 1024


def verdict_rss(soak, proc, d):
    a, out = soak.args, []
    key = f"{proc}_rss"
    q2, q4 = series(soak.samples, key, d / 4, d / 2), series(soak.samples, key, 3 * d / 4, d + 1)
    if not q2 or not q4:
        return [f"{proc}: too few RSS samples in the second or the last quarter"], ""
    m2, m4 = statistics.median(q2), statistics.median(q4)
    line = f"{proc}: RSS median {m2 / 1024:.1f} MiB (2nd quarter) -> {m4 / 1024:.1f} MiB (last quarter)"
    if m4 > bound(m2, a):
        out.append(line + f", above {bound(m2, a) / 1024:.1f} MiB")
    starts = [0.0] + [e for (b, e), name in zip(soak.windows, soak.restarted) if name == proc] + [d + 1]
    for lo, hi in zip(starts, starts[1:]):
        first = max(lo + (hi - lo) / 5, a.duration / 10)
        life = series(soak.samples, key, first, hi)
        if len(life) < 6:
            continue
        h1, h2 = statistics.median(life[:len(life) // 2]), statistics.median(life[len(life) // 2:])
        line += f"; life from {lo:.0f} s: {h1 / 1024:.1f} -> {h2 / 1024:.1f}"
        if h2 > bound(h1, a):
            out.append(f"{proc}: RSS grew within its life from {lo:.0f} s: median {h1 / 1024:.1f} MiB "
                       f"-> {h2 / 1024:.1f} MiB, above {bound(h1, a) / 1024:.1f} MiB")
    return out, line


def verdict_counts(soak, proc, d):
    out, lines = [], []
    for what in ("fds", "threads"):
        key = f"{proc}_{what}"
        q2, q4 = series(soak.samples, key, d / 4, d / 2), series(soak.samples, key, 3 * d / 4, d + 1)
        if q2 and q4:
            m2, m4 = statistics.median(q2), statistics.median(q4)
            lines.append(f"{what} median {m2:g} -> {m4:g}")
            if m4 > m2 + soak.args.fd_slack:
                out.append(f"{proc}: {what} grew: median {m2:g} (2nd quarter) -> {m4:g} (last quarter)")
        quiet = [(t, label, figs[proc][what]) for t, label, figs in soak.quiet if figs.get(proc)]
        if quiet:
            lines.append(f"quiet {what} " + ",".join(str(q[2]) for q in quiet))
            for t, label, n in quiet[1:]:
                if n > quiet[0][2] + soak.args.fd_slack:
                    out.append(f"{proc}: {n} {what} at the quiet point {label} ({t:.0f} s), "
                               f"{quiet[0][2]} at the first")
    return out, f"{proc}: " + "; ".join(lines)


def verdict(soak):
    d = soak.args.duration
    failures, lines = list(soak.problems), []
    for proc in soak.procs():
        for check in (verdict_rss, verdict_counts):
            out, line = check(soak, proc, d)
            failures += out
            lines.append(line)
    c = soak.count
    if c["sets"] == 0 or c["tar"] == 0 or c["warc"] == 0:
        failures.append(f"too little load: {c}")
    return failures, lines


def self_check(args):
    """The verdict on made-up samples: flat passes; RSS, descriptors or threads that grow fail."""
    def fake(rss_step, fd_step, quiet_fds):
        run = argparse.Namespace(args=argparse.Namespace(**{**vars(args), "duration": 100.0}), problems=[],
                                 windows=[(50.0, 51.0)], restarted=["lccd"], count={"sets": 1, "tar": 1, "warc": 1})
        run.samples = [{"t": t, "lccd_rss": 50000 + rss_step * t, "lccd_fds": 40 + int(fd_step * t),
                        "lccd_threads": 30} for t in range(0, 101, 2)]
        run.quiet = [(t, f"q{t}", {"lccd": {"fds": n, "threads": 30}}) for t, n in zip((49, 52, 99), quiet_fds)]
        run.procs = lambda: ["lccd"]
        return verdict(run)[0]
    assert not fake(0, 0, (40, 41, 40)), fake(0, 0, (40, 41, 40))
    assert fake(1000, 0, (40, 40, 40)), "RSS growing by 1 MiB a second passed"
    assert fake(0, 0.2, (40, 40, 40)), "descriptors growing by one every 5 s passed"
    assert fake(0, 0, (40, 40, 50)), "ten more descriptors at a quiet point passed"


def run(soak):
    a = soak.args
    soak.start()
    soak.t0 = time.time()
    threads = [threading.Thread(target=soak.sender, args=(p,)) for p in range(1, a.providers + 1)]
    threads += [threading.Thread(target=f) for f in (soak.exporter, soak.chaos, soak.sampler)]
    for t in threads:
        t.daemon = True  # Ctrl-C: the nodes are killed, the threads' subprocesses end with them
        t.start()
    try:
        soak.stop.wait(a.duration)
    finally:
        soak.stop.set()
        soak.go.set()
        for t in threads:
            t.join(timeout=OP_TIMEOUT + 30)
    soak.sample()
    soak.quiet_point("at the end")
    for name, node in soak.nodes.items():
        try:
            node.stop()
        except (AssertionError, subprocess.TimeoutExpired) as e:
            soak.problem(f"the final stop of {name}: {e}")


def main():
    # SIGTERM (a ctest timeout, kill) ends the run as Ctrl-C does: everything is torn down.
    signal.signal(signal.SIGTERM, interrupted)
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--duration", type=float, default=3600, help="seconds of load")
    ap.add_argument("--mode", choices=["all", "split"], default="all")
    ap.add_argument("--sample", type=float, default=None, help="seconds between samples (default duration/120, >= 2)")
    ap.add_argument("--csv", default=None, help="the samples as CSV (default soak-<mode>.csv here)")
    ap.add_argument("--providers", type=int, default=4)
    ap.add_argument("--universe", type=int, default=600, help="URLs of each provider's site")
    ap.add_argument("--set-size", type=int, default=150, help="most URLs in a partial set")
    ap.add_argument("--restarts", type=int, default=4)
    ap.add_argument("--hups", type=int, default=6)
    ap.add_argument("--max-ops", type=int, default=100000, help="bound on each loop's operations")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rss-tolerance", type=float, default=0.10, help="fraction of growth allowed")
    ap.add_argument("--rss-slack", type=float, default=8.0, help="MiB of growth allowed beside the fraction")
    ap.add_argument("--fd-slack", type=int, default=4, help="descriptors (and threads) of growth allowed")
    ap.add_argument("--kyoto-cache", default="1MiB",
                    help="storage-kyoto's mmap_size and page_cache for every store ('default': the plugin's, "
                         "32MiB and 64MiB, which take longer than an hour of this load to fill)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    args.sample = args.sample or max(2.0, args.duration / 120)
    args.csv = args.csv or f"soak-{args.mode}.csv"
    self_check(args)
    work = tempfile.mkdtemp(prefix="lcc-soak-")
    soak = Soak(args, work)
    print(f"soak: {args.duration:.0f} s, mode {args.mode}, {args.providers} providers, sample every "
          f"{args.sample:.0f} s, {args.restarts} restarts, {args.hups} SIGHUPs, work {work}", flush=True)
    try:
        run(soak)
    except BaseException as e:  # noqa: BLE001 - report with the logs, then tear down
        print(f"soak: FAILED: {e!r}", flush=True)
        for name, node in soak.nodes.items():
            print(f"--- {name} log ---\n{node.log_tail()}", file=sys.stderr)
        raise
    finally:
        soak.teardown()
        if soak.samples:
            soak.write_csv(args.csv)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report(soak)


def report(soak):
    failures, lines = verdict(soak)
    print("quiet points: " + "; ".join(
        f"{label} ({t:.0f} s): " + ", ".join(f"{p} {f['fds']} fds {f['threads']} thr" for p, f in figs.items() if f)
        for t, label, figs in soak.quiet))
    print(f"load: {soak.count}")
    for line in lines:
        print("  " + line)
    print(f"samples: {soak.args.csv}")
    if failures:
        print("soak: FAILED")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    print("soak: flat (RSS, descriptors and threads) -> ok")


if __name__ == "__main__":
    main()
