#!/usr/bin/env python3
"""Fetch throughput with 1, 2 and 3 robot hosts in the bed (issue 27 §5): the scaling ratio.

Not a ctest (a measurement, run by hand as root). For each N in --hosts, a fresh bed:
host central (lccd with uns, qm, cu on Kyoto), N robot hosts r1..rN (lccd with botm,
bot; `bot.slots` --slots each) linked to central's listen.botm, host web (slow_site.py:
every answer --delay seconds late, as a site across the internet; it is not the
bottleneck, its threads answer in parallel) and host cp; with --stores postgres (or
both) central's three stores are on a Patroni cluster of the bed (etcd, db1, db2). --providers providers each
send one full set of --urls URLs at once; timed from the first send until central's CU
lists every URL. Prints files/s per N and the ratio to N = 1, all from the same run.
With a site --delay late and S slots per host, N hosts can fetch at most
N × S / delay files/s: the bench shows how much of that the QM and the links deliver.

    python3 tests/multihost/botm_scaling_bench.py --bin build/bin --plugins build/plugins
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ADDR = {"etcd": "10.231.0.10", "db1": "10.231.0.21", "db2": "10.231.0.22", "central": "10.231.0.31", "r1": "10.231.0.36", "r2": "10.231.0.37", "r3": "10.231.0.38",
        "cp": "10.231.0.41", "web": "10.231.0.51"}
UNS_PORT, BOTM_PORT, HTTP_PORT, WEB_PORT = 7700, 7702, 7780, 8080


def args_parse():
    ap = lccnode.arg_parser(providers=12, urls=100, sets=0)
    ap.add_argument("--hosts", default="1,2,3", help="robot host counts to measure, in order")
    ap.add_argument("--slots", type=int, default=4, help="bot.slots of each robot host")
    ap.add_argument("--delay", type=float, default=0.05, help="seconds the site takes per answer")
    ap.add_argument("--stores", default="kyoto", choices=("kyoto", "postgres", "both"),
                    help="central's stores: Kyoto files, or a Patroni cluster (etcd, db1, db2) of the bed; "
                         "both: each N measured on each, side by side")
    a = ap.parse_args()
    a.hosts = [int(x) for x in a.hosts.split(",")]
    if not (all(1 <= n <= 3 for n in a.hosts) and 1 <= a.providers <= 64 and 1 <= a.urls <= 2000
            and 1 <= a.slots <= 64 and 0 <= a.delay <= 2):
        ap.error("--hosts in 1..3, --providers 1..64, --urls 1..2000, --slots 1..64, --delay 0..2")
    return a


def one_run(a, n, stores):
    """Files per second with n robot hosts (a bed of its own), central on `stores`."""
    result = {}

    def body(bed):
        pg = {}
        if stores == "postgres":
            import pgcluster  # noqa: PLC0415 - only with --stores postgres
            cl = pgcluster.PgCluster.in_bed(bed, ADDR)
            cl.start()
            store = lccnode.pg_store(f"{cl.conninfo()} {lccnode.PG_TIMEOUTS}")
            pg = {"queue": store, "content": store, "providers": store}

        def node(name, roles, listen, stores_of, extra):
            return lccnode.bed_node(a, bed, name, ADDR[name], roles, listen, stores_of, extra, HTTP_PORT)
        central = node("central", ["uns", "qm", "cu"],
                       {"uns": f"{ADDR['central']}:{UNS_PORT}", "botm": f"{ADDR['central']}:{BOTM_PORT}",
                        "http": f"0.0.0.0:{HTTP_PORT}"}, pg,
                       f"qm:\n  host_inflight: {3 * a.slots * 2}\n")  # every site is on host web
        robots = [node(f"r{i}", ["botm", "bot"], {"http": f"0.0.0.0:{HTTP_PORT}"}, {},
                       f"botm:\n  source: {ADDR['central']}:{BOTM_PORT}\n  content_url: http://{ADDR[f'r{i}']}:"
                       f"{HTTP_PORT}\nbot:\n  slots: {a.slots}\n") for i in range(1, n + 1)]
        cp, web = bed.add_host("cp", ADDR["cp"]), bed.add_host("web", ADDR["web"])
        site = os.path.join(bed.workdir, "site")
        os.makedirs(site)
        srv = web.spawn("site", [sys.executable, os.path.join(HERE, "slow_site.py"), "--bind", ADDR["web"],
                                 "--port", str(WEB_PORT), "--root", site, "--delay", str(a.delay), "--log",
                                 os.path.join(bed.workdir, "site.log"), "--lifetime", "900"])
        bedlib.wait_until("the site", lambda: srv.alive() and "listening" in srv.log_tail(), timeout=15)
        central.start()
        for r in robots:
            r.start()
        bedlib.wait_until(f"{n} BOT-M links", lambda: central.status()["qm"]["botm_links"] >= n, timeout=30)
        senders = lccnode.add_senders(a.providers, central, cp, site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                      [f"{ADDR['central']}:{UNS_PORT}"])
        for s in senders:
            s.set_urls(0)  # the site's files exist before the clock starts
        t0 = time.monotonic()
        acked, failed = lccnode.send_all(senders, 0)
        want = {u for x in acked for u in x[3]}
        missing = lccnode.wait_stored(central.stored_urls, want, stall=30, cap=600)
        took = time.monotonic() - t0
        result.update(files=len(want) - len(missing), seconds=took)
        return [f"{len(missing)} URLs not stored"] if missing or failed else []
    lccnode.run_scenario(f"botm_scaling_{n}_{stores}", body, needs_pg=stores == "postgres")
    return result


def main():
    a = args_parse()
    rates = {}
    kinds = ["kyoto", "postgres"] if a.stores == "both" else [a.stores]
    for n in a.hosts:
        for k in kinds:
            r = one_run(a, n, k)
            rates[(n, k)] = r["files"] / r["seconds"]
            print(f"{n} robot host(s), {k}: {r['files']} files in {r['seconds']:.1f} s = {rates[(n, k)]:.1f} files/s",
                  flush=True)
    print(f"load: {os.getloadavg()[0]:.2f}; ceiling per host {a.slots / a.delay:.0f} files/s "
          f"({a.slots} slots, site {a.delay:g} s per answer)" if a.delay else "")
    for (n, k), v in rates.items():
        one = rates.get((1, k))
        kyoto = rates.get((n, "kyoto"))
        print(f"  {n} host(s), {k}: {v:.1f} files/s" + (f", {v / one:.2f}x one host" if one else "")
              + (f", {v / kyoto:.2f}x Kyoto" if kyoto and k != "kyoto" else ""))


if __name__ == "__main__":
    main()
