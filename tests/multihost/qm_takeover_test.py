#!/usr/bin/env python3
"""QM active/standby with a fencing epoch (issue 27 §3, §4).

Hosts: etcd, db1 and db2 (Patroni + PostgreSQL 15, synchronous_mode); qm1 and qm2 (the
same lccd config: roles qm, botm, bot; the queue store with storage-postgres's
`qm_lease: 5s`, every store `synchronous: full`, `qm.ack_after_store: true`); uns1 (uns
only, `uns.qm: qm1:7701,qm2:7701`, tried in turn); cu1 (cu, reads the store); cp (the
senders) and web (the sites). Both QMs give fetch leases of --fetch-lease (4s, so
that qm2 fetches 6 s after it took over). qm1 starts first and takes the lease (epoch 1); qm2
starts and waits as the standby. Providers send sets through uns1 before, during and
after the fault.

--mode kill: qm1's lccd is killed -9 once every sender has acked sets.
--mode stop: qm1's lccd is paused (SIGSTOP) instead; once qm2 took over and acked a
  set, qm1 is continued (SIGCONT). The fetch leases (issue 27 §3) are tested too: the
  site is slow_site.py (its log says when each request began and ended, and from which
  host), a robot host r1 (botm, bot) is linked to qm1 besides qm1's own robot, both with
  one slot and up to four fetches handed to each (qm.botm_overload_pct 400). Just
  before the pause the site slows down to
  SLOW_DELAY per answer, so qm1's robot and r1 are mid-fetch with fetches waiting
  behind; it speeds up again once qm1 has stopped.

Asserted:
- qm2 takes the lease (epoch 2) within 15 s of qm1's death or pause;
- qm2 takes sets from uns1 after the takeover (its /status), and every sender has
  sets acked after it;
- nothing lost: every URL of every acked set is stored in the end (cu1); nothing
  duplicated: every stored record has a seq of its own;
- --mode stop: the continued qm1 writes nothing: it logs "fenced: QM epoch 1 was taken
  over by m-qm2 ... (epoch 2)" and exits with code 4, and no content record fetched by
  qm1 (machine m-qm1) was stored after it was continued; qm2 still runs;
- --mode stop, from the site's log alone: for each provider, no two requests from two
  hosts ran at the same time, and no request from a host of the old QM (qm1, r1) began
  after qm2's first request. Before the fetch leases r1 went on fetching what qm1 had
  handed it, during the pause, while qm2 fetched the same providers.
Exit 77 with one line when namespaces, etcd, Patroni or PostgreSQL are missing.
"""
import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402

ADDR = {"etcd": "10.231.0.10", "db1": "10.231.0.21", "db2": "10.231.0.22", "qm1": "10.231.0.31",
        "qm2": "10.231.0.32", "uns1": "10.231.0.33", "cu1": "10.231.0.34", "cp": "10.231.0.41",
        "web": "10.231.0.51", "r1": "10.231.0.35"}
UNS_PORT, QM_PORT, BOTM_PORT, HTTP_PORT, WEB_PORT = 7700, 7701, 7702, 7780, 8080
SLOW_DELAY, FAST_DELAY = 3.0, 0.05  # seconds the site takes per answer around the pause, and else
LEASE = "5s"
TAKEOVER_GOAL = 15.0  # seconds from qm1's death to qm2 holding the lease (issue 27 §3)
STORE_STALL, STORE_CAP = 15.0, 90.0
FENCED_EXIT = 4  # lccd's exit code when its QM was fenced (core/qm/qm_service.h)


def args_parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--plugins", required=True)
    ap.add_argument("--mode", choices=("kill", "stop"), required=True)
    ap.add_argument("--providers", type=int, default=None, help="default 4; --mode stop 8")
    ap.add_argument("--urls", type=int, default=4, help="URLs in each set")
    ap.add_argument("--before", type=int, default=2, help="acked sets per sender before the fault")
    ap.add_argument("--fetch-lease", default="4s",
                    help="qm.fetch_lease of both QMs ('': the key left out, as an lccd from before it needs)")
    a = ap.parse_args()
    a.providers = a.providers or (8 if a.mode == "stop" else 4)
    if not (1 <= a.providers <= 16 and 1 <= a.urls <= 50 and 1 <= a.before <= 10):
        ap.error("--providers 1..16, --urls 1..50, --before 1..10")
    return a


def log_text(node):
    try:
        with open(os.path.join(node.work, "lccd.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def make_nodes(a, bed, cl):
    rw = f"{cl.conninfo()} {lccnode.PG_TIMEOUTS}"
    store = lccnode.pg_store(rw, extra="synchronous: full")
    queue = lccnode.pg_store(rw, extra=f"synchronous: full, qm_lease: {LEASE}")

    def node(name, roles, listen, stores, extra=""):
        host = bed.add_host(name, ADDR[name])
        text = lccnode.node_config(os.path.join(bed.workdir, name), f"m-{name}", roles, listen, stores, a.plugins,
                                   extra)
        return lccnode.LccNode(a, bed, host, name, text, HTTP_PORT)

    # qm2 hands nothing out until qm1's fetch lease (plus 2 s) has run out after it took over
    qm_extra, bot_extra = (f"  fetch_lease: {a.fetch_lease}\n" if a.fetch_lease else ""), ""
    if a.mode == "stop":  # every provider on host web side by side, four fetches out on each link
        qm_extra += "  host_inflight: 16\n  botm_overload_pct: 400\n"
        bot_extra = "bot:\n  slots: 1\n"
    qms = [node(n, ["qm", "botm", "bot"], {"qm": f"{ADDR[n]}:{QM_PORT}", "botm": f"{ADDR[n]}:{BOTM_PORT}",
                                          "http": f"0.0.0.0:{HTTP_PORT}"},
                {"queue": queue, "content": store, "providers": store},
                f"botm:\n  content_url: http://{ADDR[n]}:{HTTP_PORT}\nqm:\n  ack_after_store: true\n{qm_extra}"
                f"{bot_extra}")
           for n in ("qm1", "qm2")]
    uns1 = node("uns1", ["uns"], {"uns": f"{ADDR['uns1']}:{UNS_PORT}", "http": f"127.0.0.1:{HTTP_PORT}"},
                {"providers": store},
                f"uns:\n  qm: {ADDR['qm1']}:{QM_PORT},{ADDR['qm2']}:{QM_PORT}\n  qm_ack_timeout: 3s\n")
    cu1 = node("cu1", ["cu"], {"http": f"127.0.0.1:{HTTP_PORT}"}, {"content": store, "providers": store},
               f"cu:\n  content_urls: [m-qm1=http://{ADDR['qm1']}:{HTTP_PORT}, "
               f"m-qm2=http://{ADDR['qm2']}:{HTTP_PORT}]\n")
    r1 = None
    if a.mode == "stop":  # a robot host that takes its fetches from qm1
        r1 = node("r1", ["botm", "bot"], {"http": f"0.0.0.0:{HTTP_PORT}"}, {},
                  f"botm:\n  source: {ADDR['qm1']}:{BOTM_PORT}\n  content_url: http://{ADDR['r1']}:{HTTP_PORT}\n"
                  f"{bot_extra}")
    return qms[0], qms[1], uns1, cu1, r1


def setup(a, bed):
    cl, cp, site = lccnode.cluster_and_site(bed, ADDR, WEB_PORT, slow=a.mode == "stop")
    qm1, qm2, uns1, cu1, r1 = make_nodes(a, bed, cl)
    qm1.start()  # first: it makes the schema and takes the lease (epoch 1)
    # qm2 waits for the lease inside its store's open: no /status until it holds it.
    qm2.proc = qm2.host.spawn("lccd-qm2", [os.path.join(a.bin, "lccd"), "-c", qm2.config])
    bedlib.wait_until("qm2 waiting as the standby",
                      lambda: "waiting for the QM lease (standby): held by m-qm1" in log_text(qm2), timeout=30)
    shutil.copy2(os.path.join(qm1.data_dir, "auth.key"), os.path.join(uns1.data_dir, "auth.key"))
    for n in (uns1, cu1) + ((r1,) if r1 else ()):
        n.start()
    if r1:
        bedlib.wait_until("r1 linked to qm1", lambda: qm1.status()["qm"]["botm_links"] >= 2, timeout=30)
    senders = lccnode.add_senders(a.providers, qm1, cp, site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                  [f"{ADDR['uns1']}:{UNS_PORT}"])
    print("qm1 active (epoch 1), qm2 waiting as the standby", flush=True)
    return cl, qm1, qm2, uns1, cu1, senders


def wait_acked(senders, n, since, timeout):
    """Until every sender has n acked sets (ended after `since`); False after `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(len(s.acked(since)) >= n for s in senders):
            return True
        time.sleep(0.2)
    return False


def takeover(a, qm1, qm2):
    """The fault, then qm2 taking the lease: (problems, monotonic time of the fault)."""
    t_fault = time.monotonic()
    if a.mode == "kill":
        qm1.proc.kill9()
        print("qm1 killed -9", flush=True)
    else:
        qm1.proc.pause()
        print("qm1 paused (SIGSTOP)", flush=True)
    bedlib.wait_until("qm2 taking the lease", lambda: "took the QM lease: epoch 2 as m-qm2" in log_text(qm2),
                      timeout=45)
    t_take = time.monotonic() - t_fault
    print(f"qm2 took the lease (epoch 2) {t_take:.1f} s after the fault", flush=True)
    problems = []
    if t_take > TAKEOVER_GOAL:
        problems.append(f"qm2 took over {t_take:.1f} s after qm1's {a.mode}, goal {TAKEOVER_GOAL} s")
    return problems, t_fault


def fence_check(cl, cp, qm1):
    """qm1, continued after the takeover: fenced, exits 4, writes nothing."""
    t_wall = time.time()
    qm1.proc.resume()
    print("qm1 continued (SIGCONT)", flush=True)
    problems = []
    try:
        rc = qm1.proc.popen.wait(timeout=30)
    except Exception:  # noqa: BLE001 - still running: the check below says so
        rc = None
    text = log_text(qm1)
    fenced = re.search(r"fenced: QM epoch 1 was taken over by m-qm2 pid \d+ \(epoch 2\)", text)
    if rc != FENCED_EXIT:
        problems.append(f"qm1 after SIGCONT: exit code {rc}, not {FENCED_EXIT} (fenced)")
    if not fenced:
        problems.append("qm1's log has no line 'fenced: QM epoch 1 was taken over by m-qm2 ...'")
    else:
        print(f"qm1 exited {rc}: {fenced.group(0)}", flush=True)
    n = cl.psql(cp, "SELECT count(*) FROM lcc.lcc WHERE machine = convert_to('m-qm1', 'UTF8') "
                    f"AND stored >= {int(t_wall * 1000)}")
    if n != "0":
        problems.append(f"qm1 stored {n} content records after it was continued (it was fenced)")
    if "cache-crash" in text:
        problems.append("qm1 raised cache-crash instead of stopping as fenced")
    return problems


def site_problems(log_path):
    """From the site's log: no provider fetched by two hosts at once, and nothing from
    the old QM's hosts (qm1, r1) begun after the new QM's host (qm2) fetched."""
    log = lccnode.read_site_log(log_path)
    old = {ADDR["qm1"]: "qm1", ADDR["r1"]: "r1"}
    new = [r for r in log if r[2] == ADDR["qm2"]]
    if not new:
        return ["the site's log has no request from qm2"]
    first_new = min(r[0] for r in new)
    late = [r for r in log if r[2] in old and r[0] >= first_new]
    both = lccnode.site_overlaps(log)
    counts = ", ".join(f"{n} {sum(1 for r in log if r[2] == addr)}" for addr, n in old.items())
    print(f"site log: {len(log)} requests ({counts}, qm2 {len(new)}); "
          f"{len(late)} of the old QM's hosts after qm2's first; {len(both)} of one provider from two hosts at once",
          flush=True)
    problems = []
    if late:
        r = late[0]
        problems.append(f"{len(late)} requests from the old QM's hosts began after qm2's first request "
                        f"({first_new:.3f}), e.g. {old[r[2]]} {r[4]} at {r[0]:.3f}")
    if both:
        x, y = both[0]
        problems.append(f"{len(both)} times two hosts fetched one provider at once, e.g. {x[2]} {x[4]} "
                        f"{x[0]:.3f}-{x[1]:.3f} and {y[2]} {y[4]} {y[0]:.3f}-{y[1]:.3f}")
    return problems


def scenario(a, bed):
    cl, qm1, qm2, uns1, cu1, senders = setup(a, bed)
    for s in senders:
        assert s.send(0, full=True), f"the first full set of provider {s.index}: {s.sends[-1]}"
    deadline = time.monotonic() + 120
    for s in senders:
        # bounded: the spool replays in seconds. --mode stop paces them, so that sets still
        # come when qm1 stops after its slow phase (the UNS finds it silent, then qm2)
        s.start(deadline, max_sets=1 + a.before + 30, gap=1.5 if a.mode == "stop" else 0.0)
    problems = []
    if not wait_acked(senders, 1 + a.before, None, 40):
        problems.append(f"not every sender had {1 + a.before} acked sets before the fault")
    if a.mode == "stop":  # the robots mid-fetch, with fetches waiting behind, when qm1 stops
        lccnode.set_site_delay(bed, SLOW_DELAY)
        time.sleep(SLOW_DELAY)
    p, t_fault = takeover(a, qm1, qm2)
    problems += p
    bedlib.wait_until("qm2's /status", lambda: qm2.status() is not None, timeout=30)
    # Taken by qm2 itself (the UNS acks its CPs from its spool meanwhile).
    try:
        bedlib.wait_until("qm2 taking sets", lambda: qm2.status()["qm"].get("sets", 0) >= a.providers, timeout=45)
        print(f"qm2 took {qm2.status()['qm']['sets']} sets from uns1", flush=True)
    except AssertionError as e:
        problems.append(str(e))
    if a.mode == "stop":
        problems += fence_check(cl, bed["cp"], qm1)
        lccnode.set_site_delay(bed, FAST_DELAY)
    if not wait_acked(senders, 2, t_fault, 30):
        problems.append("not every sender had two sets acked after the takeover")
    for s in senders:
        s.stop.set()
    for s in senders:
        s.thread.join(timeout=60)
    acked = [x for s in senders for x in s.acked()]
    print(f"sends: {len(acked)} acked, {sum(len(s.sends) for s in senders) - len(acked)} not acked", flush=True)
    problems += lccnode.stored_problems("cu1", cu1.stored_urls, acked, STORE_STALL, STORE_CAP)
    problems += lccnode.seq_problems(cu1)
    if a.mode == "stop":
        problems += site_problems(os.path.join(bed.workdir, "site.log"))
    for n in (qm2, uns1, cu1):
        n.status()  # each still running
    if problems:
        for n in (qm1, qm2, uns1):
            print(f"--- {n.name}\n{n.log_tail(25)}", file=sys.stderr)
    return problems


def main():
    a = args_parse()
    lccnode.run_scenario(f"qm_takeover --mode {a.mode}", lambda bed: scenario(a, bed), needs_pg=True)


if __name__ == "__main__":
    main()
