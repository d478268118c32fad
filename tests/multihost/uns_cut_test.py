#!/usr/bin/env python3
"""A UNS host cut off from the QM and the database, then healed (issue 27 §3, §4).

The hosts of roles_test.py (qm1, uns1, uns2, cu1, cu2 on a Patroni cluster). The
senders of this test run on uns1 itself, so they still reach its UNS while uns1's link
is cut (the hub end of its veth down: no QM, no database). Before, during --cut seconds
of cut, and after the heal, --providers providers send sets to uns1 one after the other.
Asserted:
- every URL of every acked set — also of those acked during the cut, if any — is
  stored in the end (cu1);
- a set not acked during the cut was answered "try later" (CP code 130: the provider
  record is out of reach), never 140 or a refusal that asks the site to send
  everything again (a full-set request);
- sets are acked again within 30 s of the heal; every lccd still runs.
Exit 77 with one line when namespaces, etcd, Patroni or PostgreSQL are missing.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lccnode  # noqa: E402
import roles_test  # noqa: E402

HEAL_GOAL = 30.0


def args_parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--providers", type=int, default=2)
    ap.add_argument("--urls", type=int, default=4)
    ap.add_argument("--cut", type=float, default=15.0, help="seconds uns1 stays cut off")
    a = ap.parse_args()
    if not (1 <= a.providers <= 8 and 1 <= a.urls <= 50 and 3 <= a.cut <= 120):
        ap.error("--providers 1..8, --urls 1..50, --cut 3..120")
    a.sets = 2  # roles_test.setup's knobs
    return a


def run_phase(senders, seconds, max_sets=200):
    deadline = time.monotonic() + seconds
    for s in senders:
        s.stop.clear()
        s.start(deadline, max_sets=len(s.sends) + max_sets)
    for s in senders:
        s.thread.join(timeout=seconds + 60)


def scenario(a, bed):
    qm1, uns, cu1, _cu2, senders = roles_test.setup(a, bed)
    uns1 = uns[0]
    local = []
    for s in senders[:a.providers]:
        x = lccnode.Sender(s.index, qm1, uns1.host, s.site_root, s.base, a.urls, [f"{uns1.host.addr}:7700"])
        x.id, x.password = s.id, s.password
        local.append(x)
    for x in local:
        assert x.send(100, full=True), f"the first full set of provider {x.index}: {x.sends[-1]}"
    uns1.host.cut()
    t_cut = time.monotonic()
    print("cut uns1's link", flush=True)
    run_phase(local, a.cut)
    uns1.host.heal()
    t_heal = time.monotonic()
    print(f"healed after {t_heal - t_cut:.1f} s", flush=True)
    run_phase(local, 20, max_sets=10)
    return qm1, uns, cu1, local, t_cut, t_heal


def check(qm1, uns, cu1, local, t_cut, t_heal):
    problems = []
    during = [x for s in local for x in s.sends if t_cut <= x[0] < t_heal]
    acked_during = [x for x in during if x in [y for s in local for y in s.acked()]]
    refused = [x for x in during if x not in acked_during]
    print(f"during the cut: {len(acked_during)} sets acked, {len(refused)} not", flush=True)
    for x in refused:
        out = x[4]
        if "full set" in out.lower() and "wanted" in out.lower():
            problems.append(f"a send during the cut was told to send a full set: {out.strip()[:200]}")
        if "rejected 130" not in out:
            problems.append(f"a send during the cut was not told to try later (130): {out.strip()[:200]}")
    for x in refused[:3]:
        print(f"  not acked (exit {x[2]}): {x[4].strip()[:160]}")
    after = [x for s in local for x in s.acked(since=t_heal)]
    first = min((x[1] for x in after), default=None)
    if first is None or first - t_heal > HEAL_GOAL:
        problems.append(f"no set acked within {HEAL_GOAL:.0f} s of the heal")
    else:
        print(f"a set acked {first - t_heal:.1f} s after the heal", flush=True)
    want = {u for s in local for x in s.acked() for u in x[3]}
    missing = lccnode.wait_stored(cu1.stored_urls, want, stall=20, cap=120)
    if missing:
        problems.append(f"{len(missing)} of {len(want)} acked URLs not stored (e.g. {sorted(missing)[:3]})")
    else:
        print(f"all {len(want)} acked URLs stored", flush=True)
    for n in (qm1, *uns, cu1):
        n.status()
    return problems


def main():
    a = args_parse()

    def body(bed):
        qm1, uns, cu1, local, t_cut, t_heal = scenario(a, bed)
        problems = check(qm1, uns, cu1, local, t_cut, t_heal)
        if problems:
            print(f"--- uns1\n{uns[0].log_tail(30)}", file=sys.stderr)
        return problems
    lccnode.run_scenario("uns_cut", body, needs_pg=True)


if __name__ == "__main__":
    main()
