#!/usr/bin/env python3
"""A robot host killed mid-run (issue 27 §3, §4): its fetches are handed out again to
the other robot host, and no provider is fetched by two hosts at once.

Hosts: central (lccd with roles uns, qm, cu; Kyoto stores), r1 and r2 (lccd with roles
botm, bot, each linked to central's listen.botm), cp (the senders) and web (a slow site,
`slow_site.py`, that logs when each request began and ended and from which address).
--providers providers send a full set of --urls URLs each; each robot host takes two
fetches at once (bot.slots 2), so both fetch; once both have fetched a few,
r1's lccd is killed with SIGKILL. Asserted, from central's CU and the site's log:
- every URL of every acked set is stored (the fetches r1 held were handed out again,
  once their fetch lease ran out: r1 could only be cut off and still fetching);
- r2 fetched after the kill;
- per provider, no two requests of the site's log ran at the same time, except a
  request of r1 that the site was still answering when r1 was already dead;
- central still runs, no cache-crash.
Exit 77 with one line where namespaces cannot be made.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402

ADDR = {"central": "10.231.0.31", "r1": "10.231.0.32", "r2": "10.231.0.33", "cp": "10.231.0.41",
        "web": "10.231.0.51"}
UNS_PORT, BOTM_PORT, HTTP_PORT, WEB_PORT = 7700, 7702, 7780, 8080


def args_parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--providers", type=int, default=4)
    ap.add_argument("--urls", type=int, default=30, help="URLs in each provider's full set")
    ap.add_argument("--delay", type=float, default=0.15, help="seconds the site takes for each answer")
    a = ap.parse_args()
    if not (2 <= a.providers <= 16 and 10 <= a.urls <= 200 and 0.01 <= a.delay <= 2):
        ap.error("--providers 2..16, --urls 10..200, --delay 0.01..2")
    return a


def make_nodes(a, bed):
    def node(name, roles, listen, extra):
        return lccnode.bed_node(a, bed, name, ADDR[name], roles, listen, {}, extra, HTTP_PORT)
    central = node("central", ["uns", "qm", "cu"],
                   {"uns": f"{ADDR['central']}:{UNS_PORT}", "botm": f"{ADDR['central']}:{BOTM_PORT}",
                    "http": f"0.0.0.0:{HTTP_PORT}"},
                   # every provider's site is on host web: fetch them side by side; r1's fetches
                   # go out again once their fetch lease (4 s, renewed while r1 lives) ran out
                   "qm:\n  host_inflight: 8\n  fetch_lease: 4s\n")
    robots = [node(n, ["botm", "bot"], {"http": f"0.0.0.0:{HTTP_PORT}"},
                   f"botm:\n  source: {ADDR['central']}:{BOTM_PORT}\n  content_url: http://{ADDR[n]}:{HTTP_PORT}\n"
                   "bot:\n  slots: 2\n")  # two fetches at once each: both hosts take part
              for n in ("r1", "r2")]
    return central, robots


def overlaps(log, t_kill):
    """Requests of one provider from two hosts at the same time, leaving out a request of
    r1 still being answered after r1 was killed (its client is gone)."""
    return lccnode.site_overlaps(log, lambda r: r[2] == ADDR["r1"] and r[1] > t_kill)


def scenario(a, bed):
    central, robots = make_nodes(a, bed)
    cp, web = bed.add_host("cp", ADDR["cp"]), bed.add_host("web", ADDR["web"])
    site, log = lccnode.slow_site(bed, web, ADDR["web"], WEB_PORT, delay=a.delay)
    central.start()
    for r in robots:
        r.start()
    bedlib.wait_until("two BOT-M links at central", lambda: central.status()["qm"]["botm_links"] >= 2, timeout=30)
    senders = lccnode.add_senders(a.providers, central, cp, site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                  [f"{ADDR['central']}:{UNS_PORT}"])
    for s in senders:
        assert s.send(0, full=True), f"provider {s.index}'s full set: {s.sends[-1]}"

    def both_fetched():
        entries = lccnode.read_site_log(log)
        return all(sum(1 for r in entries if r[2] == ADDR[n]) >= 5 for n in ("r1", "r2"))
    bedlib.wait_until("r1 and r2 fetching", both_fetched, timeout=60)
    robots[0].proc.kill9()
    t_kill = time.time()
    n = sum(1 for r in lccnode.read_site_log(log) if r[2] == ADDR["r1"])
    print(f"killed r1's lccd after {n} of its fetches", flush=True)
    return central, senders, log, t_kill


def check(central, senders, log, t_kill):
    problems = []
    want = {u for s in senders for x in s.acked() for u in x[3]}
    missing = lccnode.wait_stored(central.stored_urls, want, stall=20, cap=120)
    if missing:
        problems.append(f"{len(missing)} of {len(want)} acked URLs not stored (e.g. {sorted(missing)[:3]})")
    else:
        print(f"all {len(want)} acked URLs stored", flush=True)
    entries = lccnode.read_site_log(log)
    after = [r for r in entries if r[2] == ADDR["r2"] and r[0] > t_kill]
    before = [r for r in entries if r[2] == ADDR["r2"] and r[0] <= t_kill]
    if not after:
        problems.append("r2 fetched nothing after r1 was killed")
    both = overlaps(entries, t_kill)
    if both:
        problems.append(f"{len(both)} times two requests of one provider ran at once, e.g. {both[0]}")
    print(f"site log: {len(entries)} requests, r1 {sum(1 for r in entries if r[2] == ADDR['r1'])}, "
          f"r2 {len(before)} before the kill and {len(after)} after; "
          f"{len(both)} overlapping requests of one provider", flush=True)
    st = central.status()
    if st["qm"].get("cache_crash"):
        problems.append("cache-crash raised at central")
    return problems


def main():
    a = args_parse()

    def body(bed):
        central, senders, log, t_kill = scenario(a, bed)
        problems = check(central, senders, log, t_kill)
        if problems:
            print(central.log_tail(30), file=sys.stderr)
        return problems
    lccnode.run_scenario("botm_death", body)


if __name__ == "__main__":
    main()
