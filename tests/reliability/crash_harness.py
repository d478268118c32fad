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

  tests/reliability/crash_harness.py --bin build/bin --plugins build/plugins \\
      [--iterations 10] [--seed S] [--urls 100000] [--senders 8] [--mode all|split|both]
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


class AnyHandler(http.server.BaseHTTPRequestHandler):
    """Every GET is a small page of its own path."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 - the http.server name
        body = f"<html><body>{self.path}</body></html>\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a robot killed with lccd resets its connections: not news


class AnySite:
    def __init__(self):
        self.port = free_port()
        self.server = QuietServer(("127.0.0.1", self.port), AnyHandler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}/"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class CrashNode(Node):
    """A Node on storage-sqlite (the checks read its files), fast timers, several robots."""

    def __init__(self, args, work, name, roles, extra=""):
        tuning = ("qm:\n  provider_refresh: 200ms\n  checkpoint_interval: %s\n  apply_batch_ops: 1000\n"
                  "bot:\n  robots: 4\n" % args.checkpoint) if "qm" in roles else ""
        super().__init__(args, work, name=name, roles=roles, extra=tuning + extra)
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


class Run:
    """One iteration's nodes, sets and threads."""

    def __init__(self, args, seed, mode, work):
        self.args, self.seed, self.mode, self.work = args, seed, mode, work
        self.rng = random.Random(seed)
        self.site = AnySite()
        if mode == "all":
            self.qm = self.uns = CrashNode(args, work, "lccd", ["uns", "qm", "botm", "bot", "cu", "rs"])
        else:
            self.qm = CrashNode(args, work, "qm", ["qm", "botm", "bot", "cu", "rs"])
            self.uns = CrashNode(args, work, "uns", ["uns"], f"uns:\n  qm: 127.0.0.1:{self.qm.ports['qm']}\n"
                                 "  qm_retry: 200ms\n")
        self.nodes = [self.qm] if self.qm is self.uns else [self.qm, self.uns]
        self.sets = []
        self.lock = threading.Lock()
        self.acked = 0
        self.stop = threading.Event()
        self.exports = 0

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
                if state == "acked":
                    with self.lock:
                        self.acked += 1
                break

    def exporter(self):
        while not self.stop.is_set():
            if self.qm.alive():
                r = subprocess.run([os.path.join(self.args.bin, "lcc"), "--config", self.qm.config, "cu", "query",
                                    "--cu", f"127.0.0.1:{self.qm.ports['cu']}", "--limit", "2000",
                                    "--timeout", "10"], capture_output=True, timeout=60)
                self.exports += r.returncode == 0
            time.sleep(0.05)

    def killer(self):
        target = self.rng.randint(0, max(0, len(self.sets) * 3 // 4))
        extra = self.rng.uniform(0, 0.05)
        victim_name = "lccd" if self.mode == "all" else self.rng.choice(["qm", "uns"])
        pause = self.rng.uniform(0, 0.5)
        victim = {"lccd": self.qm, "qm": self.qm, "uns": self.uns}[victim_name]
        end = time.time() + 300
        while self.acked < target and time.time() < end and not self.stop.is_set():
            time.sleep(0.002)
        time.sleep(extra)
        victim.kill9()
        self.killed = (victim_name, self.acked, time.time() - self.t0)
        time.sleep(pause)
        victim.start()
        return victim_name, target, extra, pause

    def add_providers(self):
        for p in range(self.args.senders):
            for node in self.nodes:  # the same ids on both nodes of a split deployment
                out = node.lcc("provider", "add", "--prefix", f"{self.site.base}p{p}/",
                               "--password", PASSWORD).stdout.decode()
                m = re.fullmatch(r"id=(\d+) password=\S+\n", out)
                assert m and int(m.group(1)) == p + 1, out

    def ingest(self):
        plan = self.make_sets()
        for n in self.nodes:
            n.start()
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

    def settle(self):
        """Spool drained, fetching stopped, orphans swept, everything applied; stops the nodes."""
        def spool_empty():
            fwd = self.uns.status().get("uns", {}).get("forwarder", {})
            return fwd.get("qm_connected") and fwd.get("spool_sets") == 0
        wait_for("the UNS spool drained", spool_empty, timeout=120)
        status = self.qm.status()["qm"]
        assert not status.get("failed"), f"the QM failed: {status.get('failure')}"
        self.fetched = status.get("fetched", 0)
        for p in range(self.args.senders):
            self.qm.lcc("provider", "suspend", str(p + 1))
        wait_for("fetches out come back", lambda: self.qm.status()["qm"].get("in_flight") == 0, timeout=60)
        self.qm.lcc("botm", "sweep", "--wait", "60")
        self.cache_crash = self.qm.status()["qm"].get("cache_crash")
        for n in self.nodes:
            n.stop()
        self.qm.start()  # open() applies what the journal holds past the applied position
        self.qm.stop()


def run_iteration(args, seed, mode):
    work = tempfile.mkdtemp(prefix="lcc-crash-")
    run = Run(args, seed, mode, work)
    ok = False
    try:
        victim, target, extra, pause = run.ingest()
        run.settle()
        problems, fig = check_stores(os.path.join(run.qm.work, "var"), os.path.join(run.qm.work, "var", "content"),
                                     run.sets)
        ok = not problems
        states = {st: sum(1 for s in run.sets if s["state"] == st) for st in ("acked", "cut", "rejected", "unsent")}
        print(f"seed {seed} {mode}: kill -9 {victim} after {run.killed[1]} acked sets "
              f"(target {target}, +{extra * 1000:.0f} ms, {run.killed[2]:.2f} s in), restart after "
              f"{pause * 1000:.0f} ms; sets {states}; {fig['acked_urls']} acked URLs: {fig['queued']} queued, "
              f"{fig['stored']} stored ({fig['queued_and_stored']} both), {fig['files']} files; "
              f"cut sets applied whole {fig['cut_applied']}/{fig['cut_sets']}; {run.exports} exports; "
              f"cache-crash {run.cache_crash}; ingest {run.t_ingest:.1f} s -> "
              + ("ok" if ok else "FAILED"), flush=True)
        for p in problems:
            print("   ", p, flush=True)
    except BaseException as e:  # noqa: BLE001 - report, with the seed, and the logs
        print(f"seed {seed} {mode}: FAILED: {e}", flush=True)
        for n in run.nodes:
            print(f"--- {n.name} log ---\n{n.log_tail()}", file=sys.stderr)
        if isinstance(e, KeyboardInterrupt):
            raise
    finally:
        run.stop.set()
        for n in run.nodes:
            n.kill()
        run.site.stop()
        if ok or not os.environ.get("LCC_CRASH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept", work)
    return ok


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


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
    ap.add_argument("--mode", choices=["all", "split", "both"], default="both")
    ap.add_argument("--checkpoint", default="500ms", help="qm.checkpoint_interval")
    args = ap.parse_args()
    args.bin, args.plugins = os.path.abspath(args.bin), os.path.abspath(args.plugins)
    first = args.seed if args.seed is not None else int(time.time()) % 1000000
    print(f"crash harness: {args.iterations} iterations from seed {first}, {args.urls} URLs, "
          f"{args.senders} senders, mode {args.mode}", flush=True)
    failed = []
    t0 = time.time()
    for i in range(args.iterations):
        seed = first + i
        mode = args.mode if args.mode != "both" else ("all", "split")[seed % 2]
        if not run_iteration(args, seed, mode):
            failed.append(seed)
    print(f"crash harness: {args.iterations - len(failed)} of {args.iterations} iterations ok in "
          f"{time.time() - t0:.0f} s" + (f"; failed seeds {failed}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
