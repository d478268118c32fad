#!/usr/bin/env python3
"""Latency and loss between hosts (issue 27 §4): the QM a round trip away from
PostgreSQL, and the UNS a round trip away from the QM.

Hosts: etcd, db1 and db2 (Patroni + PostgreSQL 15, synchronous_mode); wan (relay.py:
each chunk --delay-ms later, and with probability --drop a chunk dropped and the
connection closed); qm1 (lccd with roles qm, botm, bot, cu) whose three stores reach
PostgreSQL through wan; uns1 (lccd with the uns role) whose provider store reaches
PostgreSQL through wan too, and which forwards sets to qm1's listen.qm through wan
(its own relay, same delay and drop); cp (the senders) and web (the providers' site,
slow_site.py with no delay, which logs every request).

Asserted ("nothing lost, nothing duplicated"):
- every URL of every acked set is in the store (`lcc cu query` on qm1) within
  --store-bound (60) seconds of the first send: a bound the QM meets when it pays its
  round trips per batch (34 s measured), and misses when it pays several per URL one
  after the other (the QM before the group commit of results: 121 s, same run of
  this test on the same machine);
- no URL fetched twice from the site (its request log), no two records share a seq;
- no cache-crash, lccd still running.
--count-statements also prints what PostgreSQL ran per stored URL (log_statement =
all on the leader, its log parsed at the end): the measurement of the round trips.
Exit 77 with one line when namespaces, etcd, Patroni or PostgreSQL are missing.
"""
import collections
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402
import pgcluster  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ADDR = {"etcd": "10.231.0.10", "db1": "10.231.0.21", "db2": "10.231.0.22", "qm1": "10.231.0.31",
        "uns1": "10.231.0.32", "wan": "10.231.0.60", "cp": "10.231.0.41", "web": "10.231.0.51"}
UNS_PORT, QM_PORT, HTTP_PORT, WEB_PORT = 7700, 7701, 7780, 8080
PG_RELAY_PORTS, QM_RELAY_PORT = (15432, 15433), 17701


def args_parse():
    ap = lccnode.arg_parser(providers=6, urls=8, sets=6)
    ap.add_argument("--delay-ms", type=float, default=5.0, help="added each way on every relayed link")
    ap.add_argument("--drop", type=float, default=0.0005, help="probability a relayed chunk is dropped (reset)")
    ap.add_argument("--store-bound", type=float, default=60.0,
                    help="seconds from the first send within which every acked URL must be stored")
    ap.add_argument("--count-statements", action="store_true",
                    help="log every statement on the leader and print them per stored URL")
    a = ap.parse_args()
    if not (1 <= a.providers <= 32 and 1 <= a.urls <= 100 and 1 <= a.sets <= 100 and 0 <= a.delay_ms <= 500
            and 0 <= a.drop <= 0.05 and 5 <= a.store_bound <= 900):
        ap.error("--providers 1..32, --urls 1..100, --sets 1..100, --delay-ms 0..500, --drop 0..0.05, "
                 "--store-bound 5..900")
    return a


def start_relays(a, bed, cl):
    """Relays on wan: one per database (lccd's DSN names them) and one to qm1's listen.qm."""
    wan = bed.add_host("wan", ADDR["wan"])
    relays = []
    targets = [(f"{wan.addr}:{p}", f"{h.addr}:5432", h.name) for p, h in zip(PG_RELAY_PORTS, cl.db_hosts)]
    targets.append((f"{wan.addr}:{QM_RELAY_PORT}", f"{ADDR['qm1']}:{QM_PORT}", "qm1"))
    for i, (listen, target, name) in enumerate(targets):
        r = wan.spawn(f"relay-{name}", bedlib.relay_argv(listen, target, delay_ms=a.delay_ms, drop=a.drop, seed=i + 1,
                                                          lifetime=600, max_conns=5000))
        bedlib.wait_until(f"relay to {name}", lambda r=r: r.alive() and "listening" in r.log_tail(), timeout=15)
        relays.append(r)
    print(f"relays on wan: +{a.delay_ms:g} ms each way, drop {a.drop:g} (lccd to PostgreSQL, uns1 to qm1)",
          flush=True)
    dsn = (f"host={','.join([wan.addr] * len(cl.db_hosts))} port={','.join(map(str, PG_RELAY_PORTS))} "
           f"user=postgres dbname=postgres connect_timeout=3 target_session_attrs=read-write {lccnode.PG_TIMEOUTS}")
    return relays, dsn


def make_nodes(a, bed, dsn):
    store = lccnode.pg_store(dsn)

    def node(name, roles, listen, stores, extra=""):
        host = bed.add_host(name, ADDR[name])
        text = lccnode.node_config(os.path.join(bed.workdir, name), f"m-{name}", roles, listen, stores, a.plugins,
                                   extra)
        return lccnode.LccNode(a, bed, host, name, text, HTTP_PORT)
    # Every provider's site is on host web: qm.host_inflight lets the providers' fetches
    # run at once there, as they would on sites of their own.
    qm1 = node("qm1", ["qm", "botm", "bot", "cu"],
               {"qm": f"{ADDR['qm1']}:{QM_PORT}", "cu": "127.0.0.1:7704", "http": f"127.0.0.1:{HTTP_PORT}"},
               {"queue": store, "content": store, "providers": store}, f"qm:\n  host_inflight: {a.providers}\n")
    uns1 = node("uns1", ["uns"], {"uns": f"{ADDR['uns1']}:{UNS_PORT}", "http": f"127.0.0.1:{HTTP_PORT}"},
                {"providers": store}, f"uns:\n  qm: {ADDR['wan']}:{QM_RELAY_PORT}\n")
    return qm1, uns1


def setup(a, bed):
    cl = pgcluster.PgCluster.in_bed(bed, ADDR)
    cp, web = bed.add_host("cp", ADDR["cp"]), bed.add_host("web", ADDR["web"])
    site = os.path.join(bed.workdir, "site")
    os.makedirs(site)
    site_log = os.path.join(bed.workdir, "site-requests.log")
    srv = web.spawn("site", [sys.executable, os.path.join(HERE, "slow_site.py"), "--bind", ADDR["web"], "--port",
                             str(WEB_PORT), "--root", site, "--delay", "0", "--log", site_log, "--lifetime", "600"])
    t0 = time.monotonic()
    cl.start()
    print(f"cluster up in {time.monotonic() - t0:.1f} s, leader {cl.leader().name}", flush=True)
    if a.count_statements:
        cl.psql(cp, "ALTER SYSTEM SET log_statement = 'all'", conninfo=cl.conninfo())
        cl.psql(cp, "ALTER SYSTEM SET log_line_prefix = 'STMT %p '", conninfo=cl.conninfo())
        cl.psql(cp, "SELECT pg_reload_conf()", conninfo=cl.conninfo())
    bedlib.wait_until("the site", lambda: srv.alive() and "listening" in srv.log_tail(), timeout=15)
    relays, dsn = start_relays(a, bed, cl)
    qm1, uns1 = make_nodes(a, bed, dsn)
    qm1.start()  # first: it makes the schema, and the auth.key uns1 takes a copy of
    shutil.copy2(os.path.join(qm1.data_dir, "auth.key"), os.path.join(uns1.data_dir, "auth.key"))
    uns1.start()
    senders = lccnode.add_senders(a.providers, qm1, cp, site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                  [f"{ADDR['uns1']}:{UNS_PORT}"])
    return cl, qm1, uns1, relays, senders, site_log


def check_fetched_once(site_log, want):
    """No URL of the site fetched twice (the site's request log)."""
    paths = collections.Counter()
    with open(site_log) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[3] == "200":
                paths[parts[4]] += 1
    twice = sorted(p for p, n in paths.items() if n > 1)
    if twice:
        return [f"{len(twice)} URLs fetched more than once from the site (e.g. {twice[:3]})"]
    print(f"the site served {sum(paths.values())} fetches, none twice ({len(want)} acked URLs)", flush=True)
    return []


def check(a, qm1, uns1, acked, site_log, t0):
    problems = []
    want = {u for x in acked for u in x[3]}
    left = max(1.0, a.store_bound - (time.monotonic() - t0))
    missing = lccnode.wait_stored(qm1.stored_urls, want, stall=left, cap=left)
    took = time.monotonic() - t0
    if missing:
        problems.append(f"{len(missing)} of {len(want)} acked URLs not stored {took:.0f} s after the first send "
                        f"(bound {a.store_bound:g} s; e.g. {sorted(missing)[:3]})")
    else:
        print(f"all {len(want)} URLs of the {len(acked)} acked sets stored {took:.1f} s after the first send "
              f"({len(want) / took:.1f} URLs/s)", flush=True)
    live, _ = qm1.cu_records()
    seqs = list(live.values())
    if len(set(seqs)) != len(seqs):
        problems.append(f"{len(seqs) - len(set(seqs))} seqs shared by two records")
    problems += check_fetched_once(site_log, want)
    st = qm1.status() or {}
    qm = st.get("qm", {})
    if qm.get("cache_crash"):
        problems.append("cache-crash raised (qm.cache_crash in /status)")
    print("qm:", {k: qm.get(k) for k in ("fetched", "store_errors", "store_busy", "sets_duplicate")}, flush=True)
    uns1.status()  # still running
    return problems, len(want)


STMT = re.compile(r"STMT (\d+) LOG:  (?:execute [^:]+|statement): (.*)")


def count_statements(bed, cl, stored):
    """What the leader's PostgreSQL ran (log_statement = all), by kind, per stored URL."""
    leader = cl.leader()
    kinds = collections.Counter()
    with open(os.path.join(bed.logdir, f"{leader.name}-patroni.log"), errors="replace") as f:
        for line in f:
            m = STMT.search(line)
            if not m:
                continue
            sql = re.sub(r"\s+", " ", m.group(2)).strip()
            head = " ".join(sql.split()[:2])
            where = re.search(r" FROM (\w+)( WHERE [^$]*\$?\d?\)?)?", sql)
            kinds[(head + (where.group(0) if where and head.startswith("SELECT") else " " + " ".join(
                sql.split()[2:4])))[:90]] += 1
    total = sum(kinds.values())
    print(f"statements on the leader: {total} for {stored} stored URLs = {total / max(1, stored):.1f} per URL")
    for k, n in kinds.most_common(30):
        print(f"  {n:7d} {n / max(1, stored):6.2f}/URL  {k}")


def main():
    a = args_parse()

    def body(bed):
        cl, qm1, uns1, relays, senders, site_log = setup(a, bed)
        t0 = time.monotonic()
        acked, _ = lccnode.send_all(senders, a.sets, first_must_ack=False)
        t_last_ack = max((x[1] for x in acked), default=time.monotonic())
        print(f"last ack {t_last_ack - t0:.1f} s after the first send", flush=True)
        problems, stored = check(a, qm1, uns1, acked, site_log, t0)
        quiet = [s.id for s in senders if not s.acked()]
        if quiet:
            problems.append(f"providers {quiet} had no set acked")
        drops = sum(r.log_tail(10000).count("dropped") for r in relays)
        print(f"relays dropped {drops} chunks (each a reset connection)", flush=True)
        if a.count_statements:
            count_statements(bed, cl, stored)
        if problems:
            print(f"--- qm1\n{qm1.log_tail(30)}\n--- uns1\n{uns1.log_tail(15)}", file=sys.stderr)
        return problems
    lccnode.run_scenario("latency", body, needs_pg=True)


if __name__ == "__main__":
    main()
