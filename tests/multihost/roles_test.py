#!/usr/bin/env python3
"""Every role on its own host, one PostgreSQL store (issue 27 §1).

Hosts: etcd, db1 and db2 (Patroni + PostgreSQL 15, synchronous_mode); qm1 (lccd with
roles qm, botm, bot: the queue, the fetches and the content files); uns1 and uns2 (lccd
with the uns role only, forwarding to qm1's listen.qm); cu1 (cu role, reading the
store's primary) and cu2 (cu role, its content store `read_only` on the sync standby);
cp (the senders) and web (the providers' sites). Every node's stores are the same
schema on the cluster; the UNS nodes hold a copy of qm1's `auth.key` (docs/scaling.md:
a provider's password is checked on any UNS) and run without a spool (`uns.spool:
false`: no acked set rests on a UNS host's disk).

Asserted:
- providers added through the admin API of any node (qm1 and uns2) are listed by every
  other node (`lcc provider list` on cu1 and uns1);
- sets sent to uns1 and uns2 in turn, for every provider, are acked, and every URL of
  every acked set reaches both CUs (`lcc cu query` on cu1 and on cu2);
- seqs are unique across the store, and cu2's `last_seq` never goes back between
  queries while it reads the standby;
- a full set wanted through cu1's admin API is what uns2 tells the provider's next
  session (the UNS reads the flag from the store, not from a copy);
- `processing` at init is real on a UNS host: after a set of URLs whose `tod` window
  is closed (they stay queued on qm1), an init through uns2 and one through uns1 tell
  the provider exactly that many URLs still queued (read from the queue qm1 wrote);
- a CU on its own host exports content fetched on qm1 (`--content`, read over HTTP
  from qm1's content URL), byte for byte the site's file.
Exit 77 with one line when namespaces, etcd, Patroni or PostgreSQL are missing.
"""
import base64
import os
import re
import shutil
import sys
import time
import urllib.parse
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lccnode  # noqa: E402

ADDR = {"etcd": "10.231.0.10", "db1": "10.231.0.21", "db2": "10.231.0.22", "qm1": "10.231.0.31",
        "uns1": "10.231.0.32", "uns2": "10.231.0.33", "cu1": "10.231.0.34", "cu2": "10.231.0.35",
        "cp": "10.231.0.41", "web": "10.231.0.51"}
UNS_PORT, QM_PORT, HTTP_PORT, WEB_PORT = 7700, 7701, 7780, 8080
STORE_STALL, STORE_CAP = 15.0, 120.0


def args_parse():
    ap = lccnode.arg_parser(providers=4, urls=6, sets=6)
    a = ap.parse_args()
    if not (2 <= a.providers <= 32 and 1 <= a.urls <= 100 and 2 <= a.sets <= 50):
        ap.error("--providers 2..32, --urls 1..100, --sets 2..50")
    return a


def make_nodes(a, bed, cl):
    rw = f"{cl.conninfo()} {lccnode.PG_TIMEOUTS}"
    standby = next(h for h in cl.db_hosts if h is not cl.leader())
    ro = f"host={standby.addr} port=5432 user=postgres dbname=postgres connect_timeout=3 {lccnode.PG_TIMEOUTS}"
    store = lccnode.pg_store(rw)
    wild = f"0.0.0.0:{HTTP_PORT}"  # the admin API answers loopback; the content URL is the host's address

    def node(name, roles, listen, stores, extra=""):
        host = bed.add_host(name, ADDR[name])
        work = os.path.join(bed.workdir, name)
        text = lccnode.node_config(work, f"m-{name}", roles, listen, stores, a.plugins, extra)
        return lccnode.LccNode(a, bed, host, name, text, HTTP_PORT)

    qm1 = node("qm1", ["qm", "botm", "bot"],
               {"qm": f"{ADDR['qm1']}:{QM_PORT}", "http": wild},
               {"queue": store, "content": store, "providers": store},
               f"botm:\n  content_url: http://{ADDR['qm1']}:{HTTP_PORT}\n")
    uns = [node(n, ["uns"], {"uns": f"{ADDR[n]}:{UNS_PORT}", "http": f"127.0.0.1:{HTTP_PORT}"},
                {"providers": store}, f"uns:\n  qm: {ADDR['qm1']}:{QM_PORT}\n  spool: false\n") for n in ("uns1", "uns2")]
    cu_extra = f"cu:\n  content_urls: [m-qm1=http://{ADDR['qm1']}:{HTTP_PORT}]\n"
    cu1 = node("cu1", ["cu"], {"http": f"127.0.0.1:{HTTP_PORT}"}, {"content": store, "providers": store}, cu_extra)
    cu2 = node("cu2", ["cu"], {"http": f"127.0.0.1:{HTTP_PORT}"},
               {"content": lccnode.pg_store(ro, read_only=True), "providers": store}, cu_extra)
    print(f"cu2 reads the content store on {standby.name} (the standby)", flush=True)
    return qm1, uns, cu1, cu2


def setup(a, bed):
    cl, cp, site = lccnode.cluster_and_site(bed, ADDR, WEB_PORT)
    qm1, uns, cu1, cu2 = make_nodes(a, bed, cl)
    qm1.start()  # first: it makes the schema, and the auth.key the UNS nodes take a copy of
    for n in uns:
        shutil.copy2(os.path.join(qm1.data_dir, "auth.key"), os.path.join(n.data_dir, "auth.key"))
    for n in (*uns, cu1, cu2):
        n.start()
    uns_addrs = [f"{ADDR[n]}:{UNS_PORT}" for n in ("uns1", "uns2")]
    senders = lccnode.add_senders(a.providers, qm1, cp, site, f"{ADDR['web']}:{WEB_PORT}", a.urls, uns_addrs,
                                  admin=lambda i: qm1 if i % 2 == 0 else uns[1])  # the admin API of any node
    return qm1, uns, cu1, cu2, senders


def check_listed(nodes, senders):
    problems = []
    for n in nodes:
        out = n.lcc("provider", "list").stdout.decode()
        ids = {line.split()[0] for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit()}
        if not {s.id for s in senders} <= ids:
            problems.append(f"{n.name} lists providers {sorted(ids)}, not every one added ({[s.id for s in senders]})")
    return problems


def check_stored(cu1, cu2, acked):
    """Every acked URL on both CUs; cu2's last_seq never goes back; seqs unique."""
    problems = []
    seen_last = [0]

    def cu2_urls():
        live, last = cu2.cu_records()
        if last < seen_last[0]:
            problems.append(f"cu2's last_seq went back: {seen_last[0]} then {last}")
        seen_last[0] = max(seen_last[0], last)
        return set(live)
    for name, stored in (("cu1", cu1.stored_urls), ("cu2", cu2_urls)):
        problems += lccnode.stored_problems(name, stored, acked, STORE_STALL, STORE_CAP)
    return problems + lccnode.seq_problems(cu1)


def check_full_set_flag(cu1, senders):
    s = senders[0]
    cu1.lcc("provider", "want-full-set", s.id)  # through a CU node's admin API
    k = len(s.sends)
    s.send(k, uns=s.uns[1])
    out = s.sends[-1][4]
    if "FULL SET WANTED" not in out and "full set wanted" not in out:
        return [f"uns2 did not tell provider {s.id} that a full set is wanted: {out.strip()[:300]}"]
    print("uns2 told the provider a full set is wanted (set through cu1)", flush=True)
    return []


def init_processing(s, uns_addr, body):
    """Sends `body` as a set of provider `s` to `uns_addr`; returns (acked, the
    `processing` its init_accepted told, the output)."""
    r = s.node.lcc("cp", "send", "--uns", uns_addr, "--id", s.id, "--password", s.password, "-", host=s.cp,
                   input=body, timeout=40, check=False)
    out = (r.stdout + r.stderr).decode(errors="replace")
    m = re.search(r"connected: seq \d+, (\d+) urls still queued", out)
    return r.returncode == 0 and lccnode.acked_all(out, body.count(b"<url")), int(m.group(1)) if m else None, out


def check_processing(senders, n=5):
    """URLs held by a closed tod window stay queued on qm1; uns2 and uns1 (no QM role)
    tell the provider that many at init."""
    s = senders[1]
    hour = time.gmtime().tm_hour  # qm.slots: 24 a day, from 00:00 UTC
    start = (hour + 2) % 24
    body = "".join(f'<url c="{s.base}held/f{j:03d}.html" m="text/html" tod="{start}-{start + 1}"/>\n'
                   for j in range(n)).encode()
    ok, _, out = init_processing(s, s.uns[1], body)
    if not ok:
        return [f"the held set of provider {s.id} was not acked: {out.strip()[:300]}"]
    seen = []
    for uns_addr in (s.uns[1], s.uns[0]):
        for _ in range(15):  # the same identities again: they keep their place, still n
            ok, processing, out = init_processing(s, uns_addr, body)
            seen.append(processing)
            if processing == n:
                break
            time.sleep(1)
        if processing != n:
            return [f"init through {uns_addr} told processing {seen}, not the {n} URLs queued: {out.strip()[:300]}"]
        print(f"init through {uns_addr} told processing={n}: the URLs queued on qm1", flush=True)
    return []


def check_content(cu1, site, acked):
    url = sorted(u for x in acked for u in x[3])[0]
    rel = urllib.parse.urlsplit(url).path.lstrip("/")
    doc = xml.dom.minidom.parseString(cu1.lcc("cu", "query", "--cu", "127.0.0.1:7704", "--format", "xml",
                                              "--content", "--prefix", url).stdout)
    for u in doc.getElementsByTagName("url"):
        if u.getAttribute("c") != url:
            continue
        c = u.getElementsByTagName("content")
        if not c or c[0].getAttribute("missing"):
            return [f"cu1 exported no content for {url}: {c[0].toxml() if c else 'no <content>'}"]
        got = base64.b64decode("".join(n.data for n in c[0].childNodes if n.nodeType == n.TEXT_NODE))
        with open(os.path.join(site, rel), "rb") as f:
            if got != f.read():
                return [f"cu1's content of {url} differs from the site's file"]
        print(f"cu1 exported {url}'s content, read from qm1 over HTTP, equal to the site's file", flush=True)
        return []
    return [f"cu1's export has no record of {url}"]


def main():
    a = args_parse()

    def body(bed):
        qm1, uns, cu1, cu2, senders = setup(a, bed)
        problems = check_listed([cu1, uns[0]], senders)
        acked, failed = lccnode.send_all(senders, a.sets)
        if failed:
            problems.append(f"{len(failed)} sends not acked")
        problems += check_stored(cu1, cu2, acked)
        problems += check_full_set_flag(cu1, senders)
        problems += check_processing(senders)
        problems += check_content(cu1, os.path.join(bed.workdir, "site"), acked)
        for n in (qm1, *uns, cu1, cu2):
            n.status()  # each still running
        if problems:
            for n in (qm1, *uns):
                print(f"--- {n.name}\n{n.log_tail(20)}", file=sys.stderr)
        return problems
    lccnode.run_scenario("roles", body, needs_pg=True)


if __name__ == "__main__":
    main()
