#!/usr/bin/env python3
"""Cut the PostgreSQL leader's link while CPs send sets (issue 27 §3, §4).

Hosts: etcd (10.231.0.10), db1 and db2 (Patroni + PostgreSQL 15, synchronous_mode),
lcc1 (one lccd with all roles, its three stores on storage-postgres through
`host=db1,db2 target_session_attrs=read-write`), cp (the senders) and web (the
providers' sites, Python's HTTP server). --senders providers each send new sets of
--urls URLs with `lcc cp send` from cp to lcc1's UNS, one set after the other, before,
during and after the cut. After --before acked sets per sender the leader's link is cut
(the hub end of its veth: a cable pulled); Patroni promotes the sync standby.

The goals of issue 27 §3, asserted:
- no acked set lost: every URL of every set that `lcc cp send` acked (exit 0,
  "accepted N of N") is, in the end, in lccd's content store (`lcc cu query`);
- intake is back within 30 s of the new leader: a set is acked within 30 s after the
  new leader answers Patroni's GET /leader;
- no cache-crash (lccd's /status qm.cache_crash stays false), lccd still runs.

The bounded run (ctest multihost_pg_failover: 8 senders, 8 URLs a set) takes about a
minute; `--senders 64 --urls 16 --after 4` is issue 27's "64 concurrent lcc cp send".
`--db-delay-ms D --db-drop p`: lccd reaches PostgreSQL through relay.py on a host wan.
Exit 77 with one line when namespaces, etcd, Patroni or PostgreSQL are missing.
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402
import pgcluster  # noqa: E402

ADDR = {"etcd": "10.231.0.10", "db1": "10.231.0.21", "db2": "10.231.0.22", "lcc1": "10.231.0.31",
        "cp": "10.231.0.41", "web": "10.231.0.51", "wan": "10.231.0.61"}
UNS_PORT, WEB_PORT = 7700, 8080
INTAKE_GOAL = 30.0  # seconds from the new leader to the first acked set (issue 27 §3)
STORE_STALL = 15.0  # acked URLs still missing when none was stored for this long: lost
STORE_CAP = 240.0  # and at most this long in all (the 64-sender run fetches ~10000 URLs)
# libpq: give up on a dead server in seconds rather than TCP's minutes (a cut link
# answers nothing; without these an unanswered statement waits for TCP to give up).
PG_TIMEOUTS = lccnode.PG_TIMEOUTS


def args_parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--senders", type=int, default=8, help="concurrent `lcc cp send` loops (one provider each)")
    ap.add_argument("--urls", type=int, default=8, help="URLs in each set")
    ap.add_argument("--before", type=int, default=2, help="acked sets per sender before the cut")
    ap.add_argument("--after", type=int, default=2, help="acked sets per sender after the new leader")
    ap.add_argument("--db-delay-ms", type=float, default=0.0,
                    help="lccd reaches db1/db2 through relay.py on host wan, each chunk this much later")
    ap.add_argument("--db-drop", type=float, default=0.0, help="and the relay drops a chunk with this probability")
    ap.add_argument("--no-cut", action="store_true",
                    help="control run: the same sends and checks with no cut (shows the checks can pass)")
    a = ap.parse_args()
    if not (1 <= a.senders <= 64 and 1 <= a.urls <= 200 and 1 <= a.before <= 20 and 1 <= a.after <= 20):
        ap.error("--senders 1..64, --urls 1..200, --before/--after 1..20")
    if not (0 <= a.db_delay_ms <= 1000 and 0 <= a.db_drop <= 0.5):
        ap.error("--db-delay-ms 0..1000, --db-drop 0..0.5")
    return a


def lccd_config(a, work, conninfo):
    # synchronous: full: each apply's COMMIT waits until the sync standby (Patroni's
    # synchronous_mode) has it, so the standby promoted after the cut holds every
    # commit lccd was told of. With `normal` a commit not yet flushed can go with the
    # old leader; storage-postgres finds that after the reconnect and fails, and the
    # QM raises cache-crash (docs/reliability.md, "A store failover").
    store = (f"{{plugin: storage-postgres, options: {{conninfo: '{conninfo}', schema: lcc, "
             f"connect_timeout: 3s, synchronous: full}}}}")
    return f"""node:
  data_dir: {os.path.join(work, "var")}
  machine_id: m1
roles: [uns, qm, botm, bot, cu, rs]
listen:
  uns: {ADDR['lcc1']}:{UNS_PORT}
  qm: 127.0.0.1:7701
  botm: 127.0.0.1:7702
  robots: 127.0.0.1:7703
  cu: 127.0.0.1:7704
  http: 127.0.0.1:7780
storage:
  plugin_dir: {a.plugins}
  queue: {store}
  content: {store}
  providers: {store}
fetcher:
  plugin: fetch-curl
  options:
    allow_private: true
    timeout: 10s
log:
  level: info
  file: {os.path.join(work, "lccd.log")}
"""


class Lccd:
    def __init__(self, a, bed, host, conninfo):
        self.a, self.bed, self.host = a, bed, host
        self.work = os.path.join(bed.workdir, "lcc1")
        os.makedirs(self.work)
        self.config = os.path.join(self.work, "lcc.yaml")
        with open(self.config, "w") as f:
            f.write(lccd_config(a, self.work, conninfo))
        self.proc = None

    def start(self):
        self.proc = self.host.spawn("lccd", [os.path.join(self.a.bin, "lccd"), "-c", self.config])
        bedlib.wait_until("lccd /status", lambda: self.status() is not None, timeout=30)

    def status(self):
        if not self.proc.alive():
            raise AssertionError(f"lccd exited with {self.proc.popen.returncode}\n{self.log_tail()}")
        code, body = self.host.http_get("http://127.0.0.1:7780/status", timeout=2)
        return json.loads(body) if code == 200 else None

    def log_tail(self, n=40):
        try:
            with open(os.path.join(self.work, "lccd.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return self.proc.log_tail(n) if self.proc else ""

    def lcc(self, host, *argv, timeout=30, check=True, input=None):
        r = host.run([os.path.join(self.a.bin, "lcc"), "--config", self.config, *argv], check=False,
                     timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise AssertionError(f"lcc {' '.join(argv)} -> {r.returncode}\n{r.stdout.decode()}{r.stderr.decode()}")
        return r

    def stored_urls(self):
        out = self.lcc(self.host, "cu", "query", "--cu", "127.0.0.1:7704", "--format", "xml", timeout=30).stdout
        doc = xml.dom.minidom.parseString(out)
        return {u.getAttribute("c") for u in doc.getElementsByTagName("url") if u.getAttribute("deleted") != "yes"}


class Sender:
    """One provider's loop of `lcc cp send` from the cp host; every send is recorded."""

    def __init__(self, index, lccd, cp, site_root, urls):
        self.index, self.lccd, self.cp, self.urls = index, lccd, cp, urls
        self.base = f"http://{ADDR['web']}:{WEB_PORT}/p{index}/"
        self.site_root = site_root
        self.id = self.password = None
        self.sends = []  # (start, end, rc, urls, output)
        self.stop = threading.Event()
        self.thread = None

    def set_urls(self, k):
        names = [f"s{k:03d}/f{j:03d}.html" for j in range(self.urls)]
        folder = os.path.join(self.site_root, f"p{self.index}", f"s{k:03d}")
        os.makedirs(folder, exist_ok=True)
        for j, n in enumerate(names):
            with open(os.path.join(self.site_root, f"p{self.index}", n), "w") as f:
                f.write(f"<html><body>provider {self.index} set {k} file {j}</body></html>\n")
        return [self.base + n for n in names]

    def send(self, k, full=False):
        urls = self.set_urls(k)
        body = "".join(f'<url c="{u}" m="text/html"/>\n' for u in urls).encode()
        argv = ["cp", "send", "--uns", f"{ADDR['lcc1']}:{UNS_PORT}", "--id", self.id, "--password", self.password]
        start = time.monotonic()
        try:
            r = self.lccd.lcc(self.cp, *argv, *(["--full"] if full else []), "-", input=body, timeout=40,
                              check=False)
            rc, out = r.returncode, (r.stdout + r.stderr).decode(errors="replace")
        except Exception as e:  # noqa: BLE001 - a hung send is a failed send
            rc, out = -1, repr(e)
        self.sends.append((start, time.monotonic(), rc, urls, out))
        return rc == 0 and lccnode.acked_all(out, len(urls))

    def acked(self, since=None):
        return [s for s in self.sends if s[2] == 0 and lccnode.acked_all(s[4], len(s[3])) and (since is None or s[1] >= since)]

    def loop(self, deadline):
        k = len(self.sends)
        while not self.stop.is_set() and time.monotonic() < deadline and k < 500:
            if not self.send(k):
                self.stop.wait(0.5)  # a refused or failed send: try the next set a little later
            k += 1

    def start(self, deadline):
        self.thread = threading.Thread(target=self.loop, args=(deadline,), daemon=True)
        self.thread.start()


def db_conninfo(a, bed, cl):
    """The DSN lccd uses: straight to db1,db2, or through a relay per database on host
    wan (latency and loss between lccd and PostgreSQL) when --db-delay-ms/--db-drop."""
    if not a.db_delay_ms and not a.db_drop:
        return cl.conninfo()
    wan = bed.add_host("wan", ADDR["wan"])
    ports = []
    for i, h in enumerate(cl.db_hosts):
        port = 15432 + i
        relay = wan.spawn(f"relay-{h.name}", bedlib.relay_argv(f"{wan.addr}:{port}", f"{h.addr}:5432",
                                                              delay_ms=a.db_delay_ms, drop=a.db_drop, seed=i + 1,
                                                              lifetime=600, max_conns=5000))
        bedlib.wait_until(f"relay to {h.name}", lambda: relay.alive() and "listening" in relay.log_tail(), timeout=15)
        ports.append(str(port))
    print(f"lccd reaches PostgreSQL through relays on wan: +{a.db_delay_ms:g} ms each way, drop {a.db_drop:g}",
          flush=True)
    return (f"host={','.join([wan.addr] * len(ports))} port={','.join(ports)} user=postgres dbname=postgres "
            "connect_timeout=3 target_session_attrs=read-write")


def setup(a, bed):
    cl = pgcluster.PgCluster.in_bed(bed, ADDR)
    lcc1, cp, web = (bed.add_host(n, ADDR[n]) for n in ("lcc1", "cp", "web"))
    site = os.path.join(bed.workdir, "site")
    os.makedirs(site)
    srv = web.spawn("site", [sys.executable, "-m", "http.server", "--bind", ADDR["web"], "--directory", site,
                             str(WEB_PORT)])
    t0 = time.monotonic()
    cl.start()
    print(f"cluster up in {time.monotonic() - t0:.1f} s, leader {cl.leader().name}", flush=True)
    bedlib.wait_until("the site", lambda: srv.alive() and cp.http_get(f"http://{ADDR['web']}:{WEB_PORT}/")[0] == 200,
                      timeout=15)
    lccd = Lccd(a, bed, lcc1, f"{db_conninfo(a, bed, cl)} {PG_TIMEOUTS}")
    lccd.start()
    senders = [Sender(i, lccd, cp, site, a.urls) for i in range(a.senders)]
    for s in senders:
        out = lccd.lcc(lcc1, "provider", "add", "--prefix", s.base).stdout.decode()
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, out
        s.id, s.password = m.group(1), m.group(2)
        assert s.send(0, full=True), f"the first full set of provider {s.index}: {s.sends[-1]}"
    return cl, lccd, senders


def scenario(a, bed):
    cl, lccd, senders = setup(a, bed)
    deadline = time.monotonic() + 75
    for s in senders:
        s.start(deadline)
    bedlib.wait_until(f"{a.before} acked sets per sender",
                      lambda: all(len(s.acked()) >= a.before for s in senders), timeout=30, interval=0.05)
    old = cl.leader()
    t_cut = time.monotonic()
    if a.no_cut:
        print(f"control run: {old.name} stays the leader", flush=True)
    else:
        old.cut()
        print(f"cut {old.name}'s link", flush=True)
        new = cl.wait_leader(45, among=[h for h in cl.db_hosts if h is not old])
        print(f"new leader {new.name} {time.monotonic() - t_cut:.1f} s after the cut", flush=True)
    t_new = time.monotonic()

    def intake_back():
        firsts = [min(x[1] for x in s.acked(since=t_new)) for s in senders if s.acked(since=t_new)]
        return min(firsts) if firsts else None
    first = None
    try:
        first = bedlib.wait_until("a set acked after the new leader", intake_back, timeout=INTAKE_GOAL + 5,
                                  interval=0.1)
    except AssertionError:
        pass
    if first is not None:  # intake is back: more sets from every sender (bounded by the deadline)
        try:
            bedlib.wait_until(f"{a.after} acked sets per sender after the new leader",
                              lambda: all(len(s.acked(since=t_new)) >= a.after for s in senders),
                              timeout=max(1.0, deadline - time.monotonic()), interval=0.1)
        except AssertionError:
            pass
    for s in senders:
        s.stop.set()
    for s in senders:
        s.thread.join(timeout=45)
    acked = [x for s in senders for x in s.acked()]
    failed = [x for s in senders for x in s.sends if x not in acked]
    print(f"sends: {len(acked)} acked, {len(failed)} not acked "
          f"({sum(1 for x in acked if x[1] >= t_new)} acked after the new leader)", flush=True)
    for x in failed[:5]:
        print(f"  not acked (rc {x[2]}, {x[0] - t_cut:+.1f} s from the cut): {x[4].strip()[:200]}")
    return lccd, senders, acked, t_new, first


def check_goals(lccd, acked, t_new, first):
    problems = []
    if first is None or first - t_new > INTAKE_GOAL:
        problems.append(f"intake not back within {INTAKE_GOAL:.0f} s of the new leader "
                        f"({'no set acked after it' if first is None else f'{first - t_new:.1f} s'})")
    else:
        print(f"intake back {first - t_new:.1f} s after the new leader", flush=True)
    want = {u for x in acked for u in x[3]}
    missing = lccnode.wait_stored(lccd.stored_urls, want, stall=STORE_STALL, cap=STORE_CAP)
    if missing:
        sets = sorted({u.rsplit("/", 1)[0] for u in missing})
        problems.append(f"acked sets lost: {len(missing)} of {len(want)} acked URLs not in the store, and none "
                        f"stored for {STORE_STALL:.0f} s (e.g. {sorted(missing)[:3]}; sets {sets[:10]})")
        try:  # where they are: still queued, in flight, or never applied
            qm = (lccd.status() or {}).get("qm", {})
            print("qm status:", {k: qm.get(k) for k in ("queued_urls", "in_flight", "store_busy", "sets",
                                                        "sets_duplicate", "sets_rejected", "urls_absorbed",
                                                        "fetched", "fetch_errors", "store_errors")}, flush=True)
        except AssertionError:
            pass
    else:
        print(f"all {len(want)} URLs of the {len(acked)} acked sets are in the store", flush=True)
    try:
        st = lccd.status()
        if st and st.get("qm", {}).get("cache_crash"):
            problems.append("cache-crash raised (qm.cache_crash in /status)")
    except AssertionError as e:
        problems.append(f"lccd did not survive the failover: {e}")
    return problems


def main():
    a = args_parse()

    def body(bed):
        lccd, senders, acked, t_new, first = scenario(a, bed)
        problems = check_goals(lccd, acked, t_new, first)
        if problems:
            print(lccd.log_tail(30), file=sys.stderr)
        return problems
    lccnode.run_scenario("pg_failover", body, needs_pg=True)


if __name__ == "__main__":
    main()
