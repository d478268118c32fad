#!/usr/bin/env python3
"""Crash harness (issue 15 §2): kill -9 of lccd at a random moment of an ingest, with
fetching and exporting going on, then a restart and the invariants of crash_checks.py.

Each iteration (its seed is printed; `--seed S --iterations 1` repeats it):
  - a deployment, alternately
      all:   one lccd with every role;
      split: a UNS lccd (roles uns) and a QM lccd (qm, botm, bot, cu, rs) over 127.0.0.1,
             the provider added on both with the same id and password;
  - a local HTTP site that answers every GET, fetched by the QM node's robots while the
    sets come in, and a content user exporting (`lcc cu query`) in a loop;
  - `--senders` providers, each sending its share of `--urls` URLs as sets of random
    size, one `lcc cp send` after another (concurrent sessions, one per provider);
  - once a seeded number of sets was acked (and a seeded few ms more), kill -9 of the
    victim: the lccd (all), or the QM or the UNS (split); a seeded pause; a restart.
    Senders whose session was cut off record the set as `cut`, wait for the node and go
    on with their next set, so sets also arrive while the QM is down (the UNS spools);
  - then: wait for the UNS spool to drain, suspend every provider (fetching stops),
    `lcc botm sweep`, a clean stop, a start and stop again (the intake journal applied),
    and the checks on the QM node's stores and content folder.

Three more deployments, each with its own victim (docs/reliability.md "Crash harness"):
  botm:  a central lccd (uns, qm, cu, rs; machine mA) and a BOT-M lccd of its own (botm,
         bot with one robot; machine mB) with `--robots` `lcc-bot` processes on its robot
         port; kill -9 of the BOT-M lccd (its robot goes with it), a restart: the QM's
         fetches outstanding on the lost link go out again;
  robot: the same deployment; kill -9 of one `lcc-bot`, not restarted: the BOT-M hands
         its fetches to another robot;
  spool: split, with a small `uns.spool_limit`; kill -9 of the QM, which stays down
         until the UNS refused a seeded number of sets with 130 (the senders record them
         as rejected and go on), then a restart and the spool's replay.
  In botm and robot mode, before the providers are suspended, every acked URL must be
  fetched (a bounded wait, `--fetch-wait`) and the checks demand it stored.

  tests/reliability/crash_harness.py --bin build/bin --plugins build/plugins \\
      [--iterations 10] [--seed S] [--urls 100000] [--senders 8]
      [--mode all|split|both|botm|robot|spool|every] [--in-process-links true|false]
"""
import argparse
import http.server
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, HERE)
from crash_checks import check_stores  # noqa: E402
from pipeline_test import Node, free_port, wait_for  # noqa: E402

PASSWORD = "crash-harness-password"
REMOTE = ("botm", "robot")  # deployments with a BOT-M lccd of its own and lcc-bot robots
MODES = ("all", "split", "botm", "robot", "spool")


class AnyHandler(http.server.BaseHTTPRequestHandler):
    """Every GET is a small page of its own path, after `delay` seconds (so that robots
    have fetches in flight when one of them is killed). The site counts the GETs of each
    path and knows which are being answered, by the client's port."""
    protocol_version = "HTTP/1.1"
    site = None

    def do_GET(self):  # noqa: N802 - the http.server name
        port = self.client_address[1]
        self.site.begin(port, self.path)
        try:
            if self.site.delay:
                time.sleep(self.site.delay)
            body = f"<html><body>{self.path}</body></html>\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        finally:
            self.site.end(port, self.path)

    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a robot killed with lccd resets its connections: not news


class AnySite:
    def __init__(self, delay=0.0):
        self.port = free_port()
        self.delay = delay
        self.lock = threading.Lock()
        self.hits = {}    # path -> GETs begun
        self.active = {}  # (client port, path) -> GETs being answered
        handler = type("Handler", (AnyHandler,), {"site": self})
        self.server = QuietServer(("127.0.0.1", self.port), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def begin(self, port, path):
        with self.lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            self.active[(port, path)] = self.active.get((port, path), 0) + 1

    def end(self, port, path):
        with self.lock:
            self.active[(port, path)] -= 1
            if not self.active[(port, path)]:
                del self.active[(port, path)]

    def answering(self, ports):
        """The paths being answered to clients on these ports."""
        with self.lock:
            return sorted(path for (port, path) in self.active if port in ports)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def tcp_ports(pid):
    """The local TCP ports of a process's sockets (/proc/<pid>/fd and /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[9] in inodes:
                    ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


class CrashNode(Node):
    """A Node on storage-sqlite (the checks read its files), fast timers, several robots."""

    def __init__(self, args, work, name, roles, extra="", machine="m1", bot="  robots: 4\n", qm=""):
        # fetch_lease 4s: a lost BOT-M link's fetches go out again 6 s after it, not 32 s
        tuning = ("qm:\n  provider_refresh: 200ms\n  checkpoint_interval: %s\n  apply_batch_ops: 1000\n"
                  "  fetch_lease: 4s\n%s" % (args.checkpoint, qm)) if "qm" in roles else ""
        tuning += "bot:\n" + bot if "bot" in roles else ""
        super().__init__(args, work, name=name, machine=machine, roles=roles, extra=tuning + extra)
        with open(self.config) as f:
            text = f.read()
        stores = "".join(f"  {s}: {{plugin: storage-sqlite}}\n" for s in ("queue", "content", "providers"))
        text = text.replace(f"storage:\n  plugin_dir: {args.plugins}\n",
                            f"storage:\n  plugin_dir: {args.plugins}\n{stores}")
        with open(self.config, "w") as f:
            f.write(text)

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None


class Robot:
    """One `lcc-bot` process on a BOT-M's robot port, writing below its content folder."""

    def __init__(self, args, botm, name):
        self.args, self.botm, self.name = args, botm, name
        self.log = os.path.join(botm.work, f"{name}.log")
        self.proc = None

    def start(self):
        content = os.path.join(self.botm.work, "var", "content")
        os.makedirs(content, exist_ok=True)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [os.path.join(self.args.bin, "lcc-bot"), "--connect", f"127.0.0.1:{self.botm.ports['robots']}",
                 "--slots", "4", "--name", self.name, "--plugin-dir", self.args.plugins, "--allow-private",
                 "--content-dir", content], stdout=subprocess.DEVNULL, stderr=log)

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(timeout=30)
            assert rc == 0, f"lcc-bot {self.name} exited {rc} on SIGTERM"

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.kill9()

    log_tail = Node.log_tail  # the last lines of self.log, as for an lccd


class Deployment:
    """The lccds (and lcc-bots) of one mode; qm and uns may be one node."""

    def __init__(self, args, work, mode):
        self.botm, self.robots = None, []
        qm_roles = ["qm", "botm", "bot", "cu", "rs"]
        if mode == "all":
            self.qm = self.uns = CrashNode(args, work, "lccd", ["uns"] + qm_roles)
        elif mode in REMOTE:
            # 4 fetches per provider at once (the providers share the test site's host:
            # qm.host_inflight too): each robot has several in flight when it dies
            self.qm = self.uns = CrashNode(args, work, "central", ["uns", "qm", "cu", "rs"], machine="mA",
                                           qm="  provider_inflight: 4\n  host_inflight: 4\n")
            source = (f"botm:\n  source: 127.0.0.1:{self.qm.ports['botm']}\n  reconnect_min: 50ms\n"
                      "  reconnect_max: 500ms\n")
            self.botm = CrashNode(args, work, "botm", ["botm", "bot"], source, machine="mB",
                                  bot="  robots: 1\n  slots: 4\n")
            self.robots = [Robot(args, self.botm, f"robot{i + 1}") for i in range(args.robots)]
        else:
            limit = f"  spool_limit: {args.spool_limit}\n" if mode == "spool" else ""
            self.qm = CrashNode(args, work, "qm", qm_roles)
            self.uns = CrashNode(args, work, "uns", ["uns"], f"uns:\n  qm: 127.0.0.1:{self.qm.ports['qm']}\n"
                                 "  qm_retry: 200ms\n" + limit)
        self.nodes = [self.qm] + ([self.uns] if self.uns is not self.qm else []) + ([self.botm] if self.botm else [])
        # The UNS → QM link (issue 28): in process when both roles run in one lccd and
        # node.in_process_links is on (the parsed notices handed over), else TCP.
        self.uns_link = "in process" if self.uns is self.qm and args.in_process_links == "true" else "tcp"
        self.content_node = self.botm or self.qm  # where the content files are

    def start(self):
        for n in self.nodes:
            n.start()
        for r in self.robots:
            r.start()
        if self.botm:
            want = len(self.robots) + 1
            wait_for("the robots on the BOT-M", lambda: self.botm.status()["botm"].get("robots") == want)
            wait_for("the BOT-M on the QM", lambda: self.qm.status()["qm"].get("botm_links") == 1)
        fwd = lambda: self.uns.status()["uns"]["forwarder"]
        wait_for("the UNS linked to the QM", lambda: fwd().get("qm_connected"))
        assert fwd()["qm_link"] == self.uns_link, fwd()

    def kill(self):
        for r in self.robots:
            r.kill()
        for n in self.nodes:
            n.kill()

    def logs(self):
        return [(n.name, n.log_tail()) for n in self.nodes] + [(r.name, r.log_tail()) for r in self.robots]


class Run:
    """One iteration's nodes, sets and threads."""

    def __init__(self, args, seed, mode, work):
        self.args, self.seed, self.mode, self.work = args, seed, mode, work
        self.rng = random.Random(seed)
        delay = args.site_delay if args.site_delay is not None else {"botm": 5, "robot": 30}.get(mode, 0)
        self.site = AnySite(delay / 1000.0)
        self.dep = Deployment(args, work, mode)
        self.qm, self.uns, self.nodes = self.dep.qm, self.dep.uns, self.dep.nodes
        self.sets = []
        self.lock = threading.Lock()
        self.acked = self.rejected = 0
        self.stop = threading.Event()
        self.exports = 0
        self.figures = {}

    def make_sets(self):
        per = self.args.urls // self.args.senders
        plan = []
        for p in range(self.args.senders):
            mine, left, k = [], per, 0
            while left > 0:
                n = min(left, self.rng.randint(1, 2 * self.args.set_size))
                urls = [f"{self.site.base}p{p}/s{k}/u{i}.html" for i in range(n)]
                s = {"name": f"p{p}s{k}", "urls": urls, "state": "unsent", "refused": set(), "why": ""}
                self.sets.append(s)
                mine.append(s)
                left, k = left - n, k + 1
            plan.append(mine)
        return plan

    def send(self, pid, s):
        body = "".join(f'<url c="{u}" m="text/html"/>\n' for u in s["urls"]).encode()
        cmd = [os.path.join(self.args.bin, "lcc"), "cp", "send", "--uns", f"127.0.0.1:{self.uns.ports['uns']}",
               "--id", str(pid), "--password", PASSWORD, "-"]
        r = subprocess.run(cmd, input=body, capture_output=True, timeout=120)
        out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        for m in re.finditer(r"^error (\d+) (\S+) ", out, re.M):
            s["refused"].add(m.group(2))
        if r.returncode == 0 and re.search(r"accepted \d+ of \d+ urls", out):
            return "acked", ""
        if r.returncode == 1:
            return "rejected", out.strip().splitlines()[-1] if out.strip() else err.strip()
        return ("cut" if "connected:" in err else "unsent"), (out + err).strip()[-300:]

    def sender(self, pid, mine):
        for s in mine:
            while not self.stop.is_set():
                state, why = self.send(pid, s)
                if state == "unsent":  # no session: nothing was sent, try the same set again
                    time.sleep(0.05)
                    continue
                s["state"], s["why"] = state, why
                with self.lock:
                    self.acked += state == "acked"
                    self.rejected += state == "rejected"
                if state == "rejected":
                    time.sleep(0.05)  # 130 says "later": the next set, a little later
                break

    def exporter(self):
        while not self.stop.is_set():
            if self.qm.alive():
                r = subprocess.run([os.path.join(self.args.bin, "lcc"), "--config", self.qm.config, "cu", "query",
                                    "--cu", f"127.0.0.1:{self.qm.ports['cu']}", "--limit", "2000",
                                    "--timeout", "10"], capture_output=True, timeout=60)
                self.exports += r.returncode == 0
            time.sleep(0.05)

    def pick_victim(self):
        if self.mode == "all":
            return "lccd", self.qm
        if self.mode == "split":
            name = self.rng.choice(["qm", "uns"])
            return name, {"qm": self.qm, "uns": self.uns}[name]
        if self.mode == "botm":
            return "botm", self.dep.botm
        if self.mode == "robot":
            robot = self.rng.choice(self.dep.robots)
            return robot.name, robot
        return "qm", self.qm  # spool

    def wait_down(self):
        """spool mode: the QM stays down until the UNS refused a seeded number of sets
        with 130 (or every sender is done)."""
        want = self.rng.randint(1, 8)
        end = time.time() + 120
        while self.rejected < want and time.time() < end and not self.stop.is_set():
            if all(s["state"] != "unsent" for s in self.sets):
                break
            time.sleep(0.01)
        self.figures["down"] = f"down until {self.rejected} sets refused (wanted {want})"

    def killer(self):
        # spool mode kills early: enough sets must come while the QM is down to fill the spool
        target = self.rng.randint(0, max(0, len(self.sets) * (1 if self.mode == "spool" else 3) // 4))
        extra = self.rng.uniform(0, 0.05)
        victim_name, victim = self.pick_victim()
        pause = self.rng.uniform(0, 0.5)
        end = time.time() + 300
        while self.acked < target and time.time() < end and not self.stop.is_set():
            time.sleep(0.002)
        time.sleep(extra)
        if self.mode in REMOTE:
            self.figures["rehanded_before"] = self.dep.botm.status()["botm"].get("rehanded", 0)
            qm = self.qm.status()["qm"]
            self.figures["queued_at_kill"] = qm.get("queued_urls", 0)
            self.figures["out_at_kill"] = qm.get("in_flight", 0)
        ports = tcp_ports(victim.proc.pid) if self.mode == "robot" else set()
        victim.kill9()
        # GETs the site is still answering to the dead robot: fetches it never answered
        self.figures["victim_paths"] = self.site.answering(ports)
        self.killed = (victim_name, self.acked, time.time() - self.t0)
        if self.mode == "spool":
            self.wait_down()
        time.sleep(pause)
        if self.mode != "robot":  # a killed robot stays dead: the others take its fetches
            victim.start()
        return victim_name, target, extra, pause

    def add_providers(self):
        for p in range(self.args.senders):
            for node in (self.qm, self.uns) if self.uns is not self.qm else (self.qm,):
                out = node.lcc("provider", "add", "--prefix", f"{self.site.base}p{p}/",
                               "--password", PASSWORD).stdout.decode()
                m = re.fullmatch(r"id=(\d+) password=\S+\n", out)
                assert m and int(m.group(1)) == p + 1, out

    def ingest(self):
        plan = self.make_sets()
        self.dep.start()
        self.add_providers()
        self.t0 = time.time()
        senders = [threading.Thread(target=self.sender, args=(p + 1, mine)) for p, mine in enumerate(plan)]
        exporter = threading.Thread(target=self.exporter)
        for t in senders + [exporter]:
            t.start()
        try:
            kill = self.killer()
        finally:
            for t in senders:
                t.join(timeout=600)
            self.stop.set()
            exporter.join(timeout=120)
        self.t_ingest = time.time() - self.t0
        return kill

    def wait_fetched(self):
        """botm, robot: providers not suspended, the site answering: the QDB must empty
        (every acked URL fetched and stored), within --fetch-wait seconds."""
        t = time.time()

        # /status is a snapshot the QM refreshes now and then: it must have seen every
        # acked set (the QM, not killed in these modes, counts each once) before its
        # empty queue means anything; acked sets not applied yet are neither queued
        # nor in flight.
        def done():
            q = self.qm.status()["qm"]
            return (q.get("sets", 0) >= self.acked and q.get("queued_urls") == 0
                    and q.get("unapplied_urls") == 0 and q.get("in_flight") == 0)
        try:
            wait_for("every queued URL fetched", done, timeout=self.args.fetch_wait)
        except Exception:
            print("qm:", self.qm.status().get("qm"), "\nbotm:", self.dep.botm.status().get("botm"), flush=True)
            raise
        self.figures["fetch_wait"] = time.time() - t
        self.figures["fetch_errors"] = self.qm.status()["qm"].get("fetch_errors", 0)
        botm = self.dep.botm.status()["botm"]
        self.figures["rehanded"] = botm.get("rehanded", 0) - self.figures.get("rehanded_before", 0)

    def settle(self):
        """Spool drained, fetching stopped, orphans swept, everything applied; stops the nodes."""
        def spool_empty():
            fwd = self.uns.status().get("uns", {}).get("forwarder", {})
            return fwd.get("qm_connected") and fwd.get("spool_sets") == 0
        wait_for("the UNS spool drained", spool_empty, timeout=120)
        status = self.qm.status()["qm"]
        assert not status.get("failed"), f"the QM failed: {status.get('failure')}"
        if self.mode in REMOTE:
            self.wait_fetched()
        self.fetched = self.qm.status()["qm"].get("fetched", 0)
        for p in range(self.args.senders):
            self.qm.lcc("provider", "suspend", str(p + 1))
        wait_for("fetches out come back", lambda: self.qm.status()["qm"].get("in_flight") == 0, timeout=60)
        self.qm.lcc("botm", "sweep", "--wait", "60")
        self.cache_crash = self.qm.status()["qm"].get("cache_crash")
        for r in self.dep.robots:
            r.stop()
        for n in self.nodes:
            n.stop()
        if self.dep.botm:  # lccd's bot role sweeps the temporary files of dead robots at start
            self.dep.botm.start()
            wait_for("the robots' temporary files swept", lambda: not temp_files(self.content_dir()), timeout=30)
            self.figures["temp_swept"] = self.dep.botm.status().get("bot", {}).get("temp_files_removed", 0)
            self.dep.botm.stop()
        self.qm.start()  # open() applies what the journal holds past the applied position
        self.qm.stop()

    def content_dir(self):
        return os.path.join(self.dep.content_node.work, "var", "content")

    def mode_problems(self):
        """What the mode itself must show: 130 for spool, a re-hand-out for robot."""
        problems = []
        rejected = [s for s in self.sets if s["state"] == "rejected"]
        if self.mode == "spool" and not rejected:
            problems.append("the spool never refused a set (uns.spool_limit not reached)")
        for s in rejected:
            if not re.search(r"rejected 130\b", s["why"]):
                problems.append(f"set {s['name']} was rejected, not with 130: {s['why']}")
                break
        if self.mode == "robot":
            paths = self.figures["victim_paths"]
            if self.figures["rehanded"] < len(paths):
                problems.append(f"the killed robot had {len(paths)} fetches at the site, the BOT-M handed "
                                f"{self.figures['rehanded']} to another robot")
            again = [p for p in paths if self.site.hits.get(p, 0) < 2]
            if again:
                problems.append(f"{len(again)} of the killed robot's fetches were never asked for again, "
                                f"e.g. {again[0]}")
        return problems


def temp_files(content_dir):
    """A robot's temporary files, `<file>.<pid>-<n>.tmp` (core/bot/README.md)."""
    return [n for _, _, names in os.walk(content_dir) for n in names if n.endswith(".tmp")]


def describe(run, kill, fig, ok):
    victim, target, extra, pause = kill
    states = {st: sum(1 for s in run.sets if s["state"] == st) for st in ("acked", "cut", "rejected", "unsent")}
    more = ""
    if run.mode in REMOTE:
        more = (f"all fetched {run.figures['fetch_wait']:.1f} s after the ingest "
                f"({run.figures['fetch_errors']} fetch errors); {run.figures['temp_swept']} temporary files "
                "swept at the BOT-M's last start; ")
        more += f"{run.figures['out_at_kill']} fetches out on the BOT-M link at the kill; "
    if run.mode == "robot":
        more += (f"{len(run.figures['victim_paths'])} of its fetches at the site when it died, "
                 f"{run.figures['rehanded']} fetches handed to another robot; ")
    if run.mode == "spool":
        more += run.figures.get("down", "") + "; "
    restart = "not restarted" if run.mode == "robot" else f"restart after {pause * 1000:.0f} ms"
    return (f"seed {run.seed} {run.mode}: kill -9 {victim} after {run.killed[1]} acked sets "
            f"(target {target}, +{extra * 1000:.0f} ms, {run.killed[2]:.2f} s in), {restart}; "
            f"sets {states}; {fig['acked_urls']} acked URLs: {fig['queued']} queued, "
            f"{fig['stored']} stored ({fig['queued_and_stored']} both), {fig['files']} files; "
            f"cut sets applied whole {fig['cut_applied']}/{fig['cut_sets']}; {run.exports} exports; {more}"
            f"cache-crash {run.cache_crash}; ingest {run.t_ingest:.1f} s -> " + ("ok" if ok else "FAILED"))


def run_iteration(args, seed, mode):
    work = tempfile.mkdtemp(prefix="lcc-crash-")
    run = Run(args, seed, mode, work)
    ok = False
    try:
        kill = run.ingest()
        run.settle()
        problems, fig = check_stores(os.path.join(run.qm.work, "var"), run.content_dir(), run.sets,
                                     must_store=mode in REMOTE)
        problems += run.mode_problems()
        ok = not problems
        print(describe(run, kill, fig, ok), flush=True)
        for p in problems:
            print("   ", p, flush=True)
    except BaseException as e:  # noqa: BLE001 - report, with the seed, and the logs
        print(f"seed {seed} {mode}: FAILED: {e}", flush=True)
        for name, tail in run.dep.logs():
            print(f"--- {name} log ---\n{tail}", file=sys.stderr)
        if isinstance(e, KeyboardInterrupt):
            raise
    finally:
        run.stop.set()
        run.dep.kill()
        run.site.stop()
        if ok or not os.environ.get("LCC_CRASH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    return ok


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def mode_of(args, seed):
    if args.mode == "both":
        return ("all", "split")[seed % 2]
    if args.mode == "every":
        return MODES[seed % len(MODES)]
    return args.mode


def main():
    # SIGTERM (a ctest timeout, kill) ends the run as Ctrl-C does: the lccds are killed.
    signal.signal(signal.SIGTERM, interrupted)
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None, help="the first iteration's seed (default: from the time)")
    ap.add_argument("--urls", type=int, default=100000)
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--set-size", type=int, default=500, help="mean URLs per set")
    ap.add_argument("--mode", choices=list(MODES) + ["both", "every"], default="both",
                    help="both: all and split by turns; every: the five by turns")
    ap.add_argument("--checkpoint", default="500ms", help="qm.checkpoint_interval")
    ap.add_argument("--in-process-links", default="true", choices=("true", "false"),
                    help="node.in_process_links: the QM and the BOT-M of one lccd (all, split), and the UNS and "
                         "the QM of one lccd (all), link in process "
                         "or over TCP; botm and robot always link over TCP (two lccd)")
    ap.add_argument("--robots", type=int, default=2, help="lcc-bot processes (botm, robot)")
    ap.add_argument("--site-delay", type=float, default=None,
                    help="ms before each answer of the site (default: botm 5, robot 30, else 0)")
    ap.add_argument("--fetch-wait", type=float, default=120, help="s for every acked URL to be fetched (botm, robot)")
    ap.add_argument("--spool-limit", default="16KiB", help="uns.spool_limit (spool)")
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    first = args.seed if args.seed is not None else int(time.time()) % 1000000
    print(f"crash harness: {args.iterations} iterations from seed {first}, {args.urls} URLs, "
          f"{args.senders} senders, mode {args.mode}", flush=True)
    failed = []
    t0 = time.time()
    for i in range(args.iterations):
        seed = first + i
        if not run_iteration(args, seed, mode_of(args, seed)):
            failed.append(seed)
    print(f"crash harness: {args.iterations - len(failed)} of {args.iterations} iterations ok in "
          f"{time.time() - t0:.0f} s" + (f"; failed seeds {failed}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
