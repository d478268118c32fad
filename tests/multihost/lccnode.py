"""lccd nodes and CP senders on the multi-host bed: what the scenario tests share.

LccNode is one lccd in one bed host, with its own work folder (`<bed>/<name>`), config
and log; Sender is one provider's loop of `lcc cp send` from a CP host to one or more
UNS nodes, recording every send and what it answered.
"""
import argparse
import json
import os
import re
import shutil
import sys
import threading
import time
import xml.dom.minidom

import bed as bedlib

# libpq: give up on a dead server in seconds rather than TCP's minutes (a cut link
# answers nothing; without these an unanswered statement waits for TCP to give up).
PG_TIMEOUTS = "keepalives_idle=2 keepalives_interval=1 keepalives_count=3 tcp_user_timeout=5000"


def arg_parser(providers, urls, sets):
    """The options every sending scenario takes: --bin, --plugins, and the load
    (--providers, --urls per set, --sets per provider after its first full set)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--providers", type=int, default=providers)
    ap.add_argument("--urls", type=int, default=urls, help="URLs in each set")
    ap.add_argument("--sets", type=int, default=sets, help="sets per provider after its first full set")
    return ap


def pg_store(conninfo, read_only=False, extra=""):
    """The YAML flow value of one storage.* entry on storage-postgres (`extra`: more
    options, "synchronous: full, qm_lease: 5s")."""
    ro = ", read_only: true" if read_only else ""
    more = f", {extra}" if extra else ""
    return (f"{{plugin: storage-postgres, options: {{conninfo: '{conninfo}', schema: lcc, connect_timeout: 3s"
            f"{ro}{more}}}}}")


ALLOW_PRIVATE = "allow_private: true"


def node_config(work, machine_id, roles, listen, stores, plugins, extra="", fetcher=ALLOW_PRIVATE):
    """An lccd config: `listen` maps listen.* keys to host:port, `stores` maps
    queue/content/providers to pg_store() values (absent: the role does not open it);
    `fetcher` is fetch-curl's address policy (the bed's addresses are private)."""
    lines = [f"node:\n  data_dir: {os.path.join(work, 'var')}\n  machine_id: {machine_id}",
             f"roles: [{', '.join(roles)}]",
             "listen:\n" + "".join(f"  {k}: {v}\n" for k, v in listen.items()).rstrip("\n"),
             f"storage:\n  plugin_dir: {plugins}\n" + "".join(f"  {k}: {v}\n" for k, v in stores.items()).rstrip("\n"),
             f"fetcher:\n  plugin: fetch-curl\n  options:\n    {fetcher}\n    timeout: 10s",
             f"log:\n  level: info\n  file: {os.path.join(work, 'lccd.log')}"]
    return "\n".join(lines) + "\n" + extra


class LccNode:
    """One lccd in a bed host. Its admin API and /status are on 127.0.0.1:<http_port>
    inside the host, so `lcc` run in that host reaches them."""

    def __init__(self, a, bed, host, name, config_text, http_port=7780):
        self.a, self.bed, self.host, self.name, self.http_port = a, bed, host, name, http_port
        self.work = os.path.join(bed.workdir, name)
        os.makedirs(os.path.join(self.work, "var"), mode=0o700)
        self.data_dir = os.path.join(self.work, "var")
        self.config = os.path.join(self.work, "lcc.yaml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.proc = None

    def start(self, timeout=30):
        self.proc = self.host.spawn(f"lccd-{self.name}", [os.path.join(self.a.bin, "lccd"), "-c", self.config])
        bedlib.wait_until(f"{self.name}'s /status", lambda: self.status() is not None, timeout=timeout)

    def status(self):
        if not self.proc.alive():
            raise AssertionError(f"{self.name}: lccd exited with {self.proc.popen.returncode}\n{self.log_tail()}")
        code, body = self.host.http_get(f"http://127.0.0.1:{self.http_port}/status", timeout=2)
        return json.loads(body) if code == 200 else None

    def log_tail(self, n=40):
        try:
            with open(os.path.join(self.work, "lccd.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return self.proc.log_tail(n) if self.proc else ""

    def lcc(self, *argv, host=None, timeout=30, check=True, input=None):
        """`lcc --config <this node's config> argv…`, run in `host` (default: this node's)."""
        r = (host or self.host).run([os.path.join(self.a.bin, "lcc"), "--config", self.config, *argv], check=False,
                                    timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise AssertionError(f"{self.name}: lcc {' '.join(argv)} -> {r.returncode}\n"
                                 f"{r.stdout.decode()}{r.stderr.decode()}")
        return r

    def add_provider(self, prefix):
        """`lcc provider add --prefix` through this node's admin API: (id, password)."""
        out = self.lcc("provider", "add", "--prefix", prefix).stdout.decode()
        m = re.fullmatch(r"id=(\d+) password=(\S+)\n", out)
        assert m, f"{self.name}: provider add said {out!r}"
        return m.group(1), m.group(2)

    def cu_records(self, cu="127.0.0.1:7704", since=None):
        """The records of this node's CU (`lcc cu query --format xml`): ({url: seq} of the
        live ones, the answer's last_seq)."""
        argv = ["cu", "query", "--cu", cu, "--format", "xml"] + (["--since-seq", str(since)] if since else [])
        doc = xml.dom.minidom.parseString(self.lcc(*argv, timeout=30).stdout)
        root = doc.documentElement
        live = {u.getAttribute("c"): int(u.getAttribute("seq") or 0)
                for u in doc.getElementsByTagName("url") if u.getAttribute("deleted") != "yes"}
        return live, int(root.getAttribute("last_seq") or 0)

    def stored_urls(self):
        return set(self.cu_records()[0])


def bed_node(a, bed, name, addr, roles, listen, stores, extra="", http_port=7780, fetcher=ALLOW_PRIVATE):
    """A new host `name` at `addr` in `bed` and its LccNode (machine id = name)."""
    host = bed.add_host(name, addr)
    text = node_config(os.path.join(bed.workdir, name), name, roles, listen, stores, a.plugins, extra, fetcher)
    return LccNode(a, bed, host, name, text, http_port)


class Sender:
    """One provider's sets, sent with `lcc cp send` from host `cp` by `node`'s lcc, to the
    UNS addresses in `uns` in turn; every send is recorded as (start, end, rc, urls, output)."""

    def __init__(self, index, node, cp, site_root, base, urls, uns):
        self.index, self.node, self.cp, self.urls, self.uns = index, node, cp, urls, list(uns)
        self.base, self.site_root = base, site_root
        self.id = self.password = None
        self.sends = []
        self.stop = threading.Event()
        self.thread = None

    def set_urls(self, k, n=None):
        """The URLs of set k (`n` of them, default --urls), their pages written on the
        site once (a set sent again does not rewrite a page the site may be serving)."""
        names = [f"s{k:03d}/f{j:03d}.html" for j in range(n or self.urls)]
        os.makedirs(os.path.join(self.site_root, f"p{self.index}", f"s{k:03d}"), exist_ok=True)
        for j, name in enumerate(names):
            path = os.path.join(self.site_root, f"p{self.index}", name)
            if not os.path.exists(path):
                with open(path, "w") as f:
                    f.write(f"<html><body>provider {self.index} set {k} file {j}</body></html>\n")
        return [self.base + name for name in names]

    def send(self, k, full=False, uns=None, n=None):
        urls = self.set_urls(k, n)
        body = "".join(f'<url c="{u}" m="text/html"/>\n' for u in urls).encode()
        target = uns or self.uns[k % len(self.uns)]
        argv = ["cp", "send", "--uns", target, "--id", self.id, "--password", self.password]
        start = time.monotonic()
        try:
            r = self.node.lcc(*argv, *(["--full"] if full else []), "-", host=self.cp, input=body, timeout=40,
                              check=False)
            rc, out = r.returncode, (r.stdout + r.stderr).decode(errors="replace")
        except Exception as e:  # noqa: BLE001 - a hung send is a failed send
            rc, out = -1, repr(e)
        self.sends.append((start, time.monotonic(), rc, urls, out))
        return rc == 0 and acked_all(out, len(urls))

    def acked(self, since=None):
        return [s for s in self.sends if s[2] == 0 and acked_all(s[4], len(s[3])) and (since is None or s[1] >= since)]

    def loop(self, deadline, max_sets, gap=0.0, resend=False):
        k = len(self.sends)
        while not self.stop.is_set() and time.monotonic() < deadline and k < max_sets:
            if not self.send(k):
                self.stop.wait(0.5)  # a refused or failed send: try again a little later
                if resend:
                    continue  # the same set again, as a CP told 130 "try later" does
            elif gap:
                self.stop.wait(gap)
            k += 1

    def start(self, deadline, max_sets=500, gap=0.0, resend=False):
        """Sends sets 1, 2, … until stopped, `deadline` or `max_sets`, waiting `gap`
        seconds after each acked one (so that a bounded number lasts the scenario).
        A set not acked is given up (the next one follows), or with `resend` sent
        again until acked (the deadline and stop() still bound it)."""
        self.thread = threading.Thread(target=self.loop, args=(deadline, max_sets, gap, resend), daemon=True)
        self.thread.start()


def add_senders(providers, node, cp, site_root, web, urls, uns, admin=None):
    """One Sender per provider p0, p1, … of the site at `web` (HOST:PORT), its lcc run by
    `node`, sending to the UNS addresses `uns`; each provider is added through the admin
    API of `admin(i)` (default: `node`)."""
    senders = []
    for i in range(providers):
        base = f"http://{web}/p{i}/"
        s = Sender(i, node, cp, site_root, base, urls, uns)
        s.id, s.password = (admin(i) if admin else node).add_provider(base)
        senders.append(s)
    return senders


def send_all(senders, sets, window=60.0, first_must_ack=True):
    """Each sender: its first set full (asserted acked unless first_must_ack is False),
    then `sets` more, all senders at once, for at most `window` seconds. Returns the
    acked sends; prints how many were not acked and why (the first five)."""
    for s in senders:
        ok = s.send(0, full=True)
        assert ok or not first_must_ack, f"the first full set of provider {s.index}: {s.sends[-1]}"
    deadline = time.monotonic() + window
    for s in senders:
        s.start(deadline, max_sets=1 + sets)
    for s in senders:
        s.thread.join(timeout=window + 30)
    acked = [x for s in senders for x in s.acked()]
    failed = [x for s in senders for x in s.sends if x not in acked]
    print(f"sends: {len(acked)} acked, {len(failed)} not acked", flush=True)
    for x in failed[:5]:
        print(f"  not acked (rc {x[2]}): {x[4].strip()[:200]}")
    return acked, failed


def acked_all(out, n):
    m = re.search(r"accepted (\d+) of (\d+) urls", out)
    return bool(m) and int(m.group(1)) == n and int(m.group(2)) == n


def wait_stored(stored, want, stall, cap):
    """Waits until every URL of `want` is in stored() (a set); gives up when none was
    added for `stall` seconds (the pipeline is idle: what is missing is lost) or after
    `cap`. Returns the URLs still missing."""
    missing = set(want)
    end = time.monotonic() + cap
    last_progress = time.monotonic()
    while missing and time.monotonic() < end and time.monotonic() - last_progress < stall:
        try:
            now_missing = missing - stored()
        except AssertionError:
            now_missing = missing
        if len(now_missing) < len(missing):
            last_progress = time.monotonic()
        missing = now_missing
        if missing:
            time.sleep(0.5)
    return missing


def stored_problems(name, stored, acked, stall, cap):
    """Every URL of every acked send in stored() (wait_stored): [] or one problem."""
    want = {u for x in acked for u in x[3]}
    missing = wait_stored(stored, want, stall=stall, cap=cap)
    if missing:
        return [f"{name}: {len(missing)} of {len(want)} acked URLs missing (e.g. {sorted(missing)[:3]})"]
    print(f"{name}: all {len(want)} URLs of the {len(acked)} acked sets", flush=True)
    return []


def seq_problems(node):
    """Each record `node`'s CU answers has a seq of its own: [] or one problem."""
    seqs = list(node.cu_records()[0].values())
    shared = len(seqs) - len(set(seqs))
    return [f"{node.name}: {shared} seqs shared by two records"] if shared else []


def read_site_log(path):
    """slow_site.py's log: [(start, end, address, status, path)], times in epoch seconds."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                out.append((float(p[0]), float(p[1]), p[2], int(p[3]), p[4]))
    return out


def site_overlaps(log, exempt=lambda r: False):
    """Pairs of requests of one provider (/pN/) from two hosts that ran at the same time,
    leaving out the requests `exempt(r)` names."""
    by_provider = {}
    for r in log:
        by_provider.setdefault(r[4].split("/")[1], []).append(r)
    found = []
    for reqs in by_provider.values():
        reqs.sort()
        for i, x in enumerate(reqs):
            for y in reqs[i + 1:]:
                if y[0] >= x[1]:
                    break
                if x[2] != y[2] and not exempt(x) and not exempt(y):
                    found.append((x, y))
    return found


def slow_site(bed, host, addr, port, delay=0.05):
    """slow_site.py on `host` serving `<bed>/site` at addr:port, its log `<bed>/site.log`,
    its delay read from `<bed>/site.delay` at each request (set_site_delay()): (site
    folder, log path) once it listens."""
    site, log = os.path.join(bed.workdir, "site"), os.path.join(bed.workdir, "site.log")
    os.makedirs(site)
    set_site_delay(bed, delay)
    srv = host.spawn("site", [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow_site.py"),
                              "--bind", addr, "--port", str(port), "--root", site, "--delay", str(delay), "--delay-file",
                              os.path.join(bed.workdir, "site.delay"), "--log", log, "--lifetime", "600"])
    bedlib.wait_until("the site", lambda: srv.alive() and "listening" in srv.log_tail(), timeout=15)
    return site, log


def set_site_delay(bed, seconds):
    """The seconds slow_site.py takes for each answer from now on."""
    tmp = os.path.join(bed.workdir, "site.delay.tmp")
    with open(tmp, "w") as f:
        f.write(f"{seconds}\n")
    os.replace(tmp, os.path.join(bed.workdir, "site.delay"))


def cluster_and_site(bed, addr, web_port, slow=False):
    """etcd, db1 and db2 (a Patroni cluster with a streaming sync standby), a CP host
    and a web host serving `<bed>/site` on `web_port`, at the addresses `addr` names
    (etcd, db1, db2, cp, web): (cluster, cp host, site folder) once all answer. slow: the
    site is slow_site.py (its log `<bed>/site.log`, its delay set_site_delay())."""
    import pgcluster  # noqa: PLC0415 - only the PostgreSQL scenarios need it
    cl = pgcluster.PgCluster(bed, bed.add_host("etcd", addr["etcd"]),
                             [bed.add_host("db1", addr["db1"]), bed.add_host("db2", addr["db2"])])
    cp, web = bed.add_host("cp", addr["cp"]), bed.add_host("web", addr["web"])
    if slow:
        site = slow_site(bed, web, addr["web"], web_port)[0]
    else:
        site = os.path.join(bed.workdir, "site")
        os.makedirs(site)
        srv = web.spawn("site", [sys.executable, "-m", "http.server", "--bind", addr["web"], "--directory", site,
                                 str(web_port)])
    cl.start()
    cl.wait_sync_standby(30)
    if not slow:
        bedlib.wait_until("the site", lambda: srv.alive() and cp.http_get(f"http://{addr['web']}:{web_port}/")[0] == 200,
                          timeout=15)
    return cl, cp, site


def run_scenario(name, body, needs_pg=False):
    """The frame every scenario test shares: skip (77, one line) where the bed cannot
    run, make a Bed, run body(bed) -> list of problems, dump the hosts' logs when it
    raised, tear the bed down whatever happened, print the one-line verdict and exit
    1 when a problem was found. needs_pg: True (etcd, Patroni and PostgreSQL 15) or
    "server" (PostgreSQL 15 alone, pgcluster.PgServer)."""
    bedlib.require_namespaces()
    if needs_pg:
        import pgcluster  # noqa: PLC0415 - only the PostgreSQL scenarios need it
        why = pgcluster.missing_postgres() if needs_pg == "server" else pgcluster.missing()
        if why:
            print("skipped:", why)
            sys.exit(bedlib.SKIP)
    start = time.monotonic()
    bed = bedlib.Bed()
    problems = ["not run"]
    try:
        problems = body(bed)
    except BaseException:
        bed.dump_logs()
        raise
    finally:
        t_down = time.monotonic()
        bed.close()
        if not os.environ.get("LCC_MULTIHOST_KEEP"):
            shutil.rmtree(bed.workdir, ignore_errors=True)
        print(f"torn down in {time.monotonic() - t_down:.1f} s", flush=True)
    took = time.monotonic() - start
    if problems:
        for p in problems:
            print("FAILED:", p)
        print(f"multihost {name}: 0 passed, 1 failed ({took:.1f} s)")
        sys.exit(1)
    print(f"multihost {name}: 1 passed, 0 failed ({took:.1f} s)")
