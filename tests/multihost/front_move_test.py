#!/usr/bin/env python3
"""Providers sharded over several PostgreSQL clusters, a slot moved between them, on
hosts of the bed (issue 31 §2; core/front/README.md, "Moving a slot").

Hosts: pgf, pge, pgw (each a plain PostgreSQL 15, pgcluster.PgServer); fe1 (lccd with
the role front, its PMDB/FEDB on pgf, `front.slots: 4`); east and west (whole LCCs:
uns, qm, botm, bot, cu, each with its three stores on storage-postgres on its own
server, pge and pgw; one shared auth.key, the admin API open to the bed with
`http.admin_remote` and a copy of each admin.token on fe1); cp (the senders: `lcc cp
send` to fe1's CP port) and web (slow_site.py, its request log). The CU view is
merged over both sub-LCCs by `lcc cu query --cu http://east:7780 --cu http://west:7780`
run on cp.

Scenario: 6 providers added through fe1 (placed by slot on east and west); each sends
a full set of --first URLs (the baseline: the moved slot's URLs sent through fe1 until
stored at their sub-LCC), then sets of --urls every --gap s, sending again a set that
was not acked (130 "try later" during a move, 111 at a suspended provider, no
answer while fe1 is down), as a real CP does. Once they have sent for --before s, the
east slot with the most providers is moved to west (`lcc front move-slot S --to
west`, timed: the call, and until every URL its providers had acked is stored at west)
while the senders go on; then a west slot is moved to east with the site slowed so
that the drain waits, and fe1's lccd is killed -9 mid-move and started again: the
move resumes and ends.

Asserted (what a user notices): every URL of every acked set is stored exactly once
in the merged view, at the destination for the moved providers, nothing of them live
at the source; sets acked after each move reach the destination; `lcc front slots`
shows both slots at their destination and no move left; each store's seqs unique; no
cache-crash on either sub-LCC. Printed: the move's figures beside the baseline, the
130s the moved providers' CPs got, and how many URLs already stored at the source
were fetched again by the destination after the move (the site's log);
that count must be 0: a move carries the bytes (--allow-refetch: only printed).
Exit 77 with one line when namespaces or PostgreSQL 15 are missing.
"""
import json
import os
import re
import shutil
import sys
import threading
import time
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402
import pgcluster  # noqa: E402

ADDR = {"pgf": "10.231.0.21", "pge": "10.231.0.22", "pgw": "10.231.0.23", "fe1": "10.231.0.31",
        "east": "10.231.0.32", "west": "10.231.0.33", "cp": "10.231.0.41", "web": "10.231.0.51"}
UNS_PORT, CU_PORT, HTTP_PORT, WEB_PORT = 7700, 7704, 7780, 8080
SLOTS = 4
# Seconds per answer of the site: until the first move is measured (so that its providers
# have URLs queued), while the second move drains (so that fe1 is killed mid-move), and else.
SITE_DELAY, DRAIN_DELAY, FAST_DELAY = 0.1, 2.0, 0.02
STORE_STALL, STORE_CAP = 20.0, 90.0
MID_MOVE = ("suspended", "drained", "created", "copied", "removed")
T0 = time.monotonic()


def say(line):
    """A line of the run's story, with the seconds since the test began."""
    print(f"[{time.monotonic() - T0:6.1f} s] {line}", flush=True)


def args_parse():
    # --sets only bounds the senders: they send until the scenario stops them (about 60
    # sets each here), and each must still be sending after the second move.
    ap = lccnode.arg_parser(providers=6, urls=6, sets=400)
    for flag, kind, default, what in (("--first", int, 30, "URLs in each provider's first (full) set"),
                                      ("--gap", float, 0.3, "seconds between a sender's acked sets"),
                                      ("--before", float, 4.0, "seconds of sending before the first move")):
        ap.add_argument(flag, type=kind, default=default, help=what)
    ap.add_argument("--allow-refetch", action="store_true",
                    help="do not fail when a URL stored at the source is fetched again by the destination "
                         "(moves carry the bytes: a stored URL is copied from the source, not fetched from its site)")
    a = ap.parse_args()
    if not (4 <= a.providers <= 16 and 1 <= a.urls <= 50 and 1 <= a.first <= 500 and 50 <= a.sets <= 1000):
        ap.error("--providers 4..16, --urls 1..50, --first 1..500, --sets 50..1000")
    return a


class Hosts:
    """The hosts, servers and nodes of the scenario."""

    def __init__(self, a, bed):
        self.a, self.bed = a, bed
        # No fsync: no server is cut or killed here, and the 2-core machine's disk is shared.
        self.pg = {n: pgcluster.PgServer(bed, bed.add_host(n, ADDR[n]), fsync=False) for n in ("pgf", "pge", "pgw")}
        self.cp, self.web = bed.add_host("cp", ADDR["cp"]), bed.add_host("web", ADDR["web"])
        self.subs = {n: self.sub_node(n) for n in ("east", "west")}
        self.fe1 = self.front_node()
        self.site = self.site_log = None

    def sub_node(self, name):
        store = lccnode.pg_store(f"{self.pg['pg' + name[0]].conninfo()} {lccnode.PG_TIMEOUTS}")
        extra = ("http:\n  admin_remote: true\n"  # fe1 drives its admin API over the bed
                 "uns:\n  auth_failures_per_minute: 0\n"  # fe1 counts failed inits per CP address
                 "qm:\n  provider_refresh: 500ms\n  host_inflight: 16\n")  # every provider's site is on web
        listen = {"uns": f"{ADDR[name]}:{UNS_PORT}", "cu": f"0.0.0.0:{CU_PORT}", "http": f"0.0.0.0:{HTTP_PORT}"}
        # The address policy stays on (the bed's addresses are private): the robots reach
        # the site and the other sub-LCC's HTTP port (its /cu/content/, read by a move's
        # copies) through allow_peers only.
        peers = [f"{ADDR['web']}:{WEB_PORT}"] + [f"{ADDR[n]}:{HTTP_PORT}" for n in ("east", "west") if n != name]
        fetcher = "allow_private: false\n    allow_peers: [" + ", ".join(f"'{p}'" for p in peers) + "]"
        return lccnode.bed_node(self.a, self.bed, name, ADDR[name], ["uns", "qm", "botm", "bot", "cu"], listen,
                                {"queue": store, "content": store, "providers": store}, extra, HTTP_PORT, fetcher)

    def front_node(self):
        work = os.path.join(self.bed.workdir, "fe1")
        lccs = "".join(f"    - '{n} uns={ADDR[n]}:{UNS_PORT} admin={ADDR[n]}:{HTTP_PORT} cu={ADDR[n]}:{CU_PORT} "
                       f"token_file={os.path.join(work, n + '.admin.token')}'\n" for n in ("east", "west"))
        extra = (f"front:\n  conninfo: '{self.pg['pgf'].conninfo()} {lccnode.PG_TIMEOUTS}'\n  schema: lcc_front\n"
                 f"  refresh_interval: 500ms\n  stale_after: 5s\n  connect_timeout: 2s\n  cache_ttl: 1s\n"
                 f"  slots: {SLOTS}\n  move_wait: 20s\n  lccs:\n{lccs}")
        return lccnode.bed_node(self.a, self.bed, "fe1", ADDR["fe1"], ["front"],
                                {"uns": f"{ADDR['fe1']}:{UNS_PORT}", "http": f"127.0.0.1:{HTTP_PORT}"}, {}, extra,
                                HTTP_PORT)

    def start(self):
        t0 = time.monotonic()
        inits = [threading.Thread(target=pg.initdb) for pg in self.pg.values()]  # the slow part: at once
        for t in inits:
            t.start()
        self.site, self.site_log = lccnode.slow_site(self.bed, self.web, ADDR["web"], WEB_PORT, SITE_DELAY)
        for t in inits:
            t.join(timeout=150)
        for pg in self.pg.values():
            pg.start()
        key = os.urandom(32).hex() + "\n"  # one auth.key: a provider's password hash moves with it
        for n in self.subs.values():
            path = os.path.join(n.data_dir, "auth.key")
            with open(path, "w") as f:
                f.write(key)
            os.chmod(path, 0o600)
            n.start()
        for name, n in self.subs.items():  # a copy of each sub-LCC's admin token on fe1
            dst = os.path.join(self.fe1.work, f"{name}.admin.token")
            shutil.copy2(os.path.join(n.data_dir, "admin.token"), dst)
            os.chmod(dst, 0o600)
        self.fe1.start()
        bedlib.wait_until("east and west live at fe1",
                          lambda: all(x["live"] for x in self.fe1.status()["front"]["lccs"]), timeout=30)
        say(f"3 PostgreSQL servers, east, west and fe1 up in {time.monotonic() - t0:.1f} s")

    def slots(self):
        return json.loads(self.fe1.lcc("front", "slots", "--json").stdout)

    def merged(self, prefixes=()):
        """The live records of the merged view, asked on cp: [(url, source, seq)]."""
        argv = ["cu", "query", "--format", "xml", *(x for p in prefixes for x in ("--prefix", p))]
        for n in self.subs:
            argv += ["--cu", f"http://{ADDR[n]}:{HTTP_PORT}"]
        doc = xml.dom.minidom.parseString(self.fe1.lcc(*argv, host=self.cp, timeout=60).stdout)
        root = doc.documentElement
        if root.getAttribute("unreachable"):
            raise AssertionError(f"the merged view left a sub-LCC out: {root.getAttribute('unreachable')}")
        return [(u.getAttribute("c"), u.getAttribute("source"), int(u.getAttribute("seq") or 0))
                for u in doc.getElementsByTagName("url") if u.getAttribute("deleted") != "yes"]

    def store_id(self, name):
        """The store id (`source`) of sub-LCC `name`, from a merged answer of it alone."""
        out = self.fe1.lcc("cu", "query", "--format", "xml", "--limit", "1", "--cu",
                           f"http://{ADDR[name]}:{HTTP_PORT}", host=self.cp).stdout
        ids = {u.getAttribute("source") for u in xml.dom.minidom.parseString(out).getElementsByTagName("url")}
        assert len(ids) == 1, f"{name}: no record to name its store by ({out[:300]!r})"
        return ids.pop()

    def live_at(self, name, prefixes):
        """URLs live in sub-LCC `name`'s own store under `prefixes` (its CU port)."""
        argv = ["cu", "query", "--cu", f"127.0.0.1:{CU_PORT}", "--format", "xml"]
        argv += [x for p in prefixes for x in ("--prefix", p)]
        doc = xml.dom.minidom.parseString(self.subs[name].lcc(*argv, timeout=30).stdout)
        return {u.getAttribute("c") for u in doc.getElementsByTagName("url") if u.getAttribute("deleted") != "yes"}


def place(b, senders):
    """{slot: (holder, [senders])} as fe1's directory says, each sender's slot its id mod SLOTS."""
    held = {s["slot"]: s["lcc"] for s in b.slots()["held"]}
    out = {}
    for s in senders:
        slot = int(s.id) % SLOTS
        out.setdefault(slot, (held[slot], []))[1].append(s)
    say("placed: " + ", ".join(f"slot {k} on {h}: providers {[s.id for s in ss]}"
                               for k, (h, ss) in sorted(out.items())))
    return out


def first_sets(a, b, senders, moved):
    """Every provider's first full set through fe1 at once; the baseline: seconds from
    the sends until the `moved` providers' URLs are all stored at their sub-LCC."""
    src = moved[0]
    t0 = time.monotonic()
    threads = [threading.Thread(target=s.send, args=(0, True, None, a.first)) for s in senders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for s in senders:
        assert s.acked(), f"the first full set of provider {s.id}: {s.sends[-1] if s.sends else 'not sent'}"
    want = {u for s in moved[1] for x in s.acked() for u in x[3]}
    prefixes = [s.base for s in moved[1]]
    missing = lccnode.wait_stored(lambda: b.live_at(src, prefixes), want, STORE_STALL, STORE_CAP)
    assert not missing, f"{len(missing)} of the first sets' URLs never stored at {src}"
    took = time.monotonic() - t0
    say(f"baseline: {len(want)} URLs of slot providers {[s.id for s in moved[1]]} sent through fe1, "
        f"stored at {src} in {took:.2f} s ({len(want) / took:.1f} URLs/s)")
    return len(want), took


def acked_urls(senders, before=None):
    return {u for s in senders for x in s.sends if x in s.acked() and (before is None or x[1] <= before)
            for u in x[3]}


def wait_moved(b, timeout=60):
    """Until fe1's directory lists no move (the call may answer 202 while its thread carries it)."""
    bedlib.wait_until("no move left at fe1", lambda: b.slots()["moves"] == [], timeout=timeout, interval=0.3)


def timed_move(b, slot, src, dst, movers):
    """`lcc front move-slot` of a slot while its CPs send: (figures, what was stored at src)."""
    prefixes = [s.base for s in movers]
    stored_before = b.live_at(src, prefixes)
    queued = b.subs[src].status()["qm"].get("queued_urls", 0)
    t_wall, t0 = time.time(), time.monotonic()
    want = acked_urls(movers, before=t0)
    out = b.fe1.lcc("front", "move-slot", str(slot), "--to", dst, timeout=60).stdout.decode().strip()
    call = time.monotonic() - t0
    say(f"move-slot {slot} --to {dst}: {out} ({call:.2f} s); its providers had {len(want)} URLs acked, "
        f"{len(stored_before)} stored at {src} and {len(want - stored_before)} not yet ({queued} queued at "
        f"{src} in all)")
    assert stored_before and want - stored_before, \
        f"slot {slot}'s providers had {len(stored_before)} URLs stored and {len(want - stored_before)} not yet: " \
        "the move was to carry both (the site was to be slower than the senders)"
    wait_moved(b)
    done = time.monotonic() - t0
    missing = lccnode.wait_stored(lambda: b.live_at(dst, prefixes), want, STORE_STALL, STORE_CAP)
    stored = time.monotonic() - t0
    assert not missing, f"{len(missing)} of the {len(want)} moved URLs never stored at {dst}"
    say(f"move: every move row gone {done:.2f} s after the call began; all {len(want)} URLs stored at {dst} "
        f"after {stored:.2f} s")
    return {"call": call, "done": done, "stored": stored, "urls": len(want), "t_wall": t_wall}, stored_before


def killed_move(b, slot, src, dst, movers):
    """The slot moved with the site slowed (the drain waits for a fetch in flight) and
    fe1's lccd killed -9 mid-move, then started again: the move resumes and ends."""
    stored_before = b.live_at(src, [s.base for s in movers])
    lccnode.set_site_delay(b.bed, DRAIN_DELAY)
    time.sleep(DRAIN_DELAY / 2)  # a fetch of the slot's providers in flight
    t_wall = time.time()
    mover = threading.Thread(target=lambda: b.fe1.lcc("front", "move-slot", str(slot), "--to", dst, check=False,
                                                      timeout=60), daemon=True)
    mover.start()
    phase = bedlib.wait_until("the move under way", lambda: next(
        (m["phase"] for m in b.slots()["moves"] if m["phase"] in MID_MOVE), None), timeout=30, interval=0.05)
    b.fe1.proc.kill9()
    say(f"fe1's lccd killed -9 in phase {phase} of slot {slot}'s move ({src} -> {dst})")
    lccnode.set_site_delay(b.bed, FAST_DELAY)
    mover.join(timeout=60)
    b.fe1.start()
    t0 = time.monotonic()
    wait_moved(b)
    say(f"fe1 restarted; the move resumed and ended {time.monotonic() - t0:.2f} s after its start")
    return t_wall, stored_before


def refetched(site_log, stored_before, dst, t_wall):
    """Requests from host `dst` after t_wall for URLs stored at the source before the move."""
    paths = {re.sub(r"^http://[^/]+", "", u) for u in stored_before}
    return sum(1 for r in lccnode.read_site_log(site_log)
               if r[2] == ADDR[dst] and r[0] >= t_wall and r[3] == 200 and r[4] in paths)


def check_views(b, senders, moves):
    """Every acked URL stored exactly once in the merged view, at the destination for
    the moved providers, nothing of them at the source; seqs unique per store."""
    want = acked_urls(senders)
    seen = {}

    def stored():
        recs = b.merged()
        seen["recs"] = recs
        return {r[0] for r in recs}
    missing = lccnode.wait_stored(stored, want, STORE_STALL, STORE_CAP)
    recs = seen.get("recs", [])
    problems = [f"{len(missing)} of {len(want)} acked URLs not in the merged view (e.g. {sorted(missing)[:3]})"] \
        if missing else []
    ids = {b.store_id(n): n for n in b.subs}
    where = {}
    for url, source, _ in recs:
        where.setdefault(url, []).append(ids.get(source, source))
    twice = {u: w for u, w in where.items() if u in want and len(w) > 1}
    if twice:
        problems.append(f"{len(twice)} acked URLs stored more than once in the merged view, e.g. "
                        f"{sorted(twice.items())[:2]}")
    for slot, src, dst, movers in moves:
        for s in movers:
            mine = [u for u in want if u.startswith(s.base)]
            wrong = [(u, where.get(u)) for u in mine if where.get(u) and where[u] != [dst]]
            if wrong:
                problems.append(f"provider {s.id} (slot {slot} moved to {dst}): {len(wrong)} URLs stored at "
                                f"another sub-LCC, e.g. {wrong[:2]}")
        left = b.live_at(src, [s.base for s in movers])
        if left:
            problems.append(f"slot {slot}: {len(left)} URLs of its providers still live at {src}")
    for source in {r[1] for r in recs}:
        seqs = [r[2] for r in recs if r[1] == source]
        if len(seqs) != len(set(seqs)):
            problems.append(f"{ids.get(source, source)}: {len(seqs) - len(set(seqs))} seqs shared by two records")
    say(f"merged view: {len(recs)} live records, every one of the {len(want)} acked URLs once "
        f"({sum(1 for w in where.values() if w == ['east'])} at east, "
        f"{sum(1 for w in where.values() if w == ['west'])} at west)" if not problems else
        f"merged view: {len(recs)} live records")
    return problems


def check_after_moves(b, moves, t_done):
    """The CPs' sets acked after each move reached its destination; the slots there; no
    cache-crash."""
    problems = []
    held = {s["slot"]: s["lcc"] for s in b.slots()["held"]}
    for (slot, _src, dst, movers), t in zip(moves, t_done):
        if held.get(slot) != dst:
            problems.append(f"lcc front slots shows slot {slot} on {held.get(slot)}, not {dst}")
        for s in movers:
            later = [x for x in s.acked() if x[0] >= t]
            if not later:
                problems.append(f"provider {s.id}: no set acked after slot {slot}'s move to {dst}")
                continue
            missing = {u for x in later for u in x[3]} - b.live_at(dst, [s.base])
            if missing:
                problems.append(f"provider {s.id}: {len(missing)} URLs acked after the move not stored at {dst}")
    for n in b.subs.values():
        st = n.status()  # also: still running
        if st["qm"].get("cache_crash"):
            problems.append(f"{n.name} raised cache-crash")
        problems += lccnode.seq_problems(n)
    return problems


def print_figures(base, m, moved_130):
    n_base, t_base = base
    per_url = (m["stored"] / m["urls"]) / (t_base / n_base)
    say(f"FIGURES: baseline {n_base} URLs through fe1 until stored {t_base:.2f} s; move-slot call "
        f"{m['call']:.2f} s ({m['call'] / t_base:.2f}x baseline); every one of its {m['urls']} URLs stored at "
        f"the target {m['stored']:.2f} s after the call began ({m['stored'] / t_base:.2f}x baseline, "
        f"{per_url:.2f}x per URL); CP sessions of the moved providers told 130 during the moves: {moved_130}")


def scenario(a, b):
    b.start()
    senders = lccnode.add_senders(a.providers, b.fe1, b.cp, b.site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                  [f"{ADDR['fe1']}:{UNS_PORT}"])
    placed = place(b, senders)
    slot1 = max((k for k, v in placed.items() if v[0] == "east"), key=lambda k: len(placed[k][1]))
    slot2 = max((k for k, v in placed.items() if v[0] == "west"), key=lambda k: len(placed[k][1]))
    base = first_sets(a, b, senders, placed[slot1])
    deadline = time.monotonic() + 150
    for s in senders:
        s.start(deadline, max_sets=1 + a.sets, gap=a.gap, resend=True)
    time.sleep(a.before)
    m, stored_before = timed_move(b, slot1, "east", "west", placed[slot1][1])
    t_done = [time.monotonic()]
    lccnode.set_site_delay(b.bed, FAST_DELAY)
    time.sleep(1.0)
    t_kill, stored_before2 = killed_move(b, slot2, "west", "east", placed[slot2][1])
    t_done.append(time.monotonic())
    for (_, ss), t in zip((placed[slot1], placed[slot2]), t_done):
        for s in ss:
            try:
                bedlib.wait_until(f"a set of provider {s.id} acked after its move",
                                  lambda s=s, t=t: any(x[0] >= t for x in s.acked()), timeout=30, interval=0.3)
            except AssertionError as e:
                raise AssertionError(f"{e}; its sender {'sends' if s.thread.is_alive() else 'ended'}, "
                                     f"{len(s.sends)} sends, the last: {s.sends[-1][4][-300:]!r}") from None
    for s in senders:
        s.stop.set()
    for s in senders:
        s.thread.join(timeout=60)
    moves = [(slot1, "east", "west", placed[slot1][1]), (slot2, "west", "east", placed[slot2][1])]
    movers = placed[slot1][1] + placed[slot2][1]
    moved_130 = sum(1 for s in movers for x in s.sends if "rejected 130" in x[4])
    say(f"sends: {sum(len(s.acked()) for s in senders)} acked of {sum(len(s.sends) for s in senders)}; "
        f"111 (suspended) answers {sum(1 for s in senders for x in s.sends if 'rejected 111' in x[4])}")
    problems = check_views(b, senders, moves) + check_after_moves(b, moves, t_done)
    print_figures(base, m, moved_130)
    for src, dst, before, t_wall in (("east", "west", stored_before, m["t_wall"]),
                                     ("west", "east", stored_before2, t_kill)):
        refetch = refetched(b.site_log, before, dst, t_wall)
        say(f"REFETCH: {refetch} of the {len(before)} URLs stored at {src} before the move were fetched again "
            f"by {dst} after it")
        if not a.allow_refetch and refetch:
            problems.append(f"{refetch} URLs already stored at {src} were fetched again by {dst} after the move")
    if problems:
        for n in (b.fe1, *b.subs.values()):
            print(f"--- {n.name}\n{n.log_tail(25)}", file=sys.stderr)
    return problems


def main():
    a = args_parse()
    lccnode.run_scenario("front_move", lambda bed: scenario(a, Hosts(a, bed)), needs_pg="server")


if __name__ == "__main__":
    main()
