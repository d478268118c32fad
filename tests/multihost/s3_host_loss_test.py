#!/usr/bin/env python3
"""A robot host lost for good, with its content in an S3 bucket and on its own disk
(issue 31 §1).

Hosts: s3 (a single-node Ceph RADOS Gateway, tests/s3/rgw_cluster.sh with RGW_ADDR =
its bed address), web (`slow_site.py` serving pages of known bodies), and two LCCs side
by side, each a central host (lccd roles uns, qm, cu; Kyoto stores; the CP senders run
there) and a robot host (botm, bot) linked to it:
- `central` + `r1`: `s3.*` on both (the robots PUT each body to the bucket, the CU reads
  it there);
- `dcentral` + `dr1`, the control: no `s3.*` (the bodies are files on dr1's disk, the
  CU reads them over HTTP from dr1's content URL).
In each, --providers providers send a full set of --urls URLs and --sets sets of
--urls/2 more; once every URL of every acked set is stored, a tar.gz export of every record
(`lcc cu query --format tar.gz` on the central host) must give the site's bytes; then
the robot host is lost: its lccd killed -9, its link cut (Host.cut()) and its work
folder, its disk, deleted. A second export, read with GNU tar:
- with S3: every record a member whose MD5 is the site page's;
- on disk: the export still ends, after one connect time-out to the lost host (the CU
  takes a machine down for the rest of an answer), the CU still running, and no record
  has a member: MANIFEST.xml names each `missing="unreadable"`.
Printed: URLs stored, bytes, the time to store them and each export's time.
Exit 77 with one line where namespaces cannot be made or the Ceph binaries are missing.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.dom.minidom

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bed as bedlib  # noqa: E402
import lccnode  # noqa: E402

ADDR = {"s3": "10.231.0.61", "web": "10.231.0.51", "central": "10.231.0.31", "r1": "10.231.0.32",
        "dcentral": "10.231.0.35", "dr1": "10.231.0.36"}
UNS_PORT, BOTM_PORT, HTTP_PORT, WEB_PORT, MON_PORT, RGW_PORT = 7700, 7702, 7780, 8080, 3300, 7480
ACCESS, SECRET, BUCKET = "lcctest-access", "lcctest-secret-0123456789", "lcc-host-loss"
RGW_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3", "rgw_cluster.sh")
EXPORT_TIMEOUT = 60  # lcc cu query raises (the test fails) when an export takes longer


def args_parse():
    a = lccnode.arg_parser(providers=3, urls=30, sets=1).parse_args()
    if not (1 <= a.providers <= 16 and 2 <= a.urls <= 500 and 0 <= a.sets <= 20):
        sys.exit("--providers 1..16, --urls 2..500, --sets 0..20")
    return a


def missing_ceph():
    gone = [b for b in ("radosgw", "ceph-mon", "ceph-osd", "monmaptool") if not shutil.which(b)]
    return f"no Ceph binaries ({', '.join(gone)}): apt install radosgw ceph-mon ceph-osd" if gone else ""


def start_rgw(bed, host):
    """rgw_cluster.sh start in host `s3`, the gateway on its bed address; returns the
    running script (wait_rgw() waits for it), so the control runs meanwhile."""
    env = dict(os.environ, RGW_ADDR=ADDR["s3"])
    return host.spawn("rgw", ["bash", RGW_SCRIPT, "start", os.path.join(bed.workdir, "rgw"), str(MON_PORT),
                              str(RGW_PORT), ACCESS, SECRET], env=env)


def wait_rgw(proc, host):
    try:
        rc = proc.popen.wait(timeout=90)
    except subprocess.TimeoutExpired:
        rc = "timeout"
    assert rc == 0, f"rgw_cluster.sh start -> {rc}\n{proc.log_tail()}"
    r = host.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10", "-X", "PUT",
                  "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS}:{SECRET}",
                  "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", f"http://{ADDR['s3']}:{RGW_PORT}/{BUCKET}"],
                 timeout=20)
    assert r.stdout.decode() in ("200", "409"), f"bucket create: {r.stdout!r}"


def s3_yaml(work):
    secret = os.path.join(work, "s3.secret")
    return (f"s3:\n  endpoint: http://{ADDR['s3']}:{RGW_PORT}\n  bucket: {BUCKET}\n  access_key: {ACCESS}\n"
            f"  secret_key_file: {secret}\n"), secret


def make_pair(a, bed, cname, rname, use_s3):
    """A central host (uns, qm, cu) and a robot host (botm, bot) linked to it."""
    extra = {}
    secrets = []
    for n in (cname, rname):
        extra[n], secret = s3_yaml(os.path.join(bed.workdir, n)) if use_s3 else ("", None)
        secrets.append(secret)
    central = lccnode.bed_node(a, bed, cname, ADDR[cname], ["uns", "qm", "cu"],
                               {"uns": f"{ADDR[cname]}:{UNS_PORT}", "botm": f"{ADDR[cname]}:{BOTM_PORT}",
                                "http": f"0.0.0.0:{HTTP_PORT}"}, {},
                               "qm:\n  host_inflight: 8\n" + extra[cname], HTTP_PORT)
    robot = lccnode.bed_node(a, bed, rname, ADDR[rname], ["botm", "bot"], {"http": f"0.0.0.0:{HTTP_PORT}"}, {},
                             f"botm:\n  source: {ADDR[cname]}:{BOTM_PORT}\n"
                             f"  content_url: http://{ADDR[rname]}:{HTTP_PORT}\nbot:\n  slots: 4\n" + extra[rname],
                             HTTP_PORT)
    for secret in filter(None, secrets):
        with open(secret, "w") as f:
            f.write(SECRET + "\n")
        os.chmod(secret, 0o600)
    return central, robot


def write_pages(site, p, k, n):
    """Provider p's set k: n pages of known bodies (1-30 KiB) at the paths Sender uses."""
    folder = os.path.join(site, f"p{p}", f"s{k:03d}")
    os.makedirs(folder, exist_ok=True)
    for j in range(n):
        line = f"<p>provider {p} set {k} file {j}: {hashlib.sha1(f'{p}.{k}.{j}'.encode()).hexdigest()}</p>\n"
        with open(os.path.join(folder, f"f{j:03d}.html"), "w") as f:
            f.write(line * (1 + (j * 37 + p * 11) % 400))


def site_md5(site, url):
    path = url.split(f"{ADDR['web']}:{WEB_PORT}/", 1)[1]
    with open(os.path.join(site, path), "rb") as f:
        data = f.read()
    return hashlib.md5(data).hexdigest(), len(data)


def export(node, label):
    """A tar.gz of every record from node's CU, read with GNU tar: (seconds, rc,
    {url: (path or None, missing word)}, {member path: md5}, lcc's output)."""
    out = os.path.join(node.work, f"export-{label}.tar.gz")
    t0 = time.monotonic()
    r = node.lcc("cu", "query", "--cu", "127.0.0.1:7704", "--format", "tar.gz", "-o", out,
                 timeout=EXPORT_TIMEOUT, check=False)
    took = time.monotonic() - t0
    text = (r.stdout + r.stderr).decode(errors="replace")
    if r.returncode != 0:
        return took, r.returncode, {}, {}, text
    dest = tempfile.mkdtemp(prefix="x-", dir=node.work)
    subprocess.run(["tar", "-xzf", out, "-C", dest], check=True, timeout=60)
    members = {}
    for d, _, names in os.walk(dest):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                members[os.path.relpath(os.path.join(d, n), dest)] = hashlib.md5(f.read()).hexdigest()
    with open(os.path.join(dest, "MANIFEST.xml"), "rb") as f:
        doc = xml.dom.minidom.parseString(f.read())
    urls = {u.getAttribute("c"): (u.getAttribute("path") or None, u.getAttribute("missing"))
            for u in doc.getElementsByTagName("url") if u.getAttribute("deleted") != "yes"}
    return took, 0, urls, members, text


def content_problems(label, site, want, exp):
    """Every URL of `want` in the export with a member of the site page's bytes."""
    took, rc, urls, members, text = exp
    if rc != 0:
        return [f"{label}: the export failed ({rc}): {text.strip()[:300]}"]
    bad = [u for u in want if not urls.get(u, (None,))[0] or members.get(urls[u][0]) != site_md5(site, u)[0]]
    if bad:
        return [f"{label}: {len(bad)} of {len(want)} URLs without the site's bytes, "
                f"e.g. {bad[0]} -> {urls.get(bad[0])}"]
    print(f"{label}: all {len(want)} records exported with the site's bytes (MD5) in {took:.2f} s", flush=True)
    return []


def content_files(node):
    root = os.path.join(node.data_dir, "content")
    return sum(len(names) for _, _, names in os.walk(root))


def run_pair(a, site, central, robot, use_s3):
    """Sends, waits until stored, exports, loses the robot host, exports again: problems."""
    label = "s3" if use_s3 else "disk"
    central.start()
    robot.start()
    bedlib.wait_until(f"{robot.name}'s BOT-M link", lambda: central.status()["qm"]["botm_links"] >= 1, timeout=30)
    senders = lccnode.add_senders(a.providers, central, central.host, site, f"{ADDR['web']}:{WEB_PORT}", a.urls,
                                  [f"{ADDR[central.name]}:{UNS_PORT}"])
    t0 = time.monotonic()
    for s in senders:
        write_pages(site, s.index, 0, a.urls)
        assert s.send(0, full=True), f"{label}: provider {s.index}'s full set: {s.sends[-1]}"
        for k in range(1, 1 + a.sets):
            write_pages(site, s.index, k, a.urls // 2)
            assert s.send(k, n=a.urls // 2), f"{label}: provider {s.index}'s set {k}: {s.sends[-1]}"
    want = {u for s in senders for x in s.acked() for u in x[3]}
    missing = lccnode.wait_stored(central.stored_urls, want, stall=20, cap=90)
    if missing:
        return [f"{label}: {len(missing)} of {len(want)} acked URLs not stored (e.g. {sorted(missing)[:3]})"]
    stored_s = time.monotonic() - t0
    size = sum(site_md5(site, u)[1] for u in want)
    on_disk = content_files(robot)
    print(f"{label}: {len(want)} URLs ({size} bytes) stored in {stored_s:.2f} s; "
          f"{on_disk} content files on {robot.name}'s disk", flush=True)
    problems = []
    if use_s3 and on_disk:
        problems.append(f"s3: {on_disk} content files on {robot.name}'s disk (the bodies belong in the bucket)")
    if not use_s3 and on_disk < len(want):
        problems.append(f"disk: {on_disk} content files on {robot.name}'s disk for {len(want)} URLs")
    problems += content_problems(f"{label} before the loss", site, want, export(central, "before"))

    robot.proc.kill9()
    robot.host.cut()
    shutil.rmtree(robot.work)
    print(f"{label}: {robot.name} lost (lccd killed -9, link cut, work folder deleted)", flush=True)
    after = export(central, "after")
    if use_s3:
        problems += content_problems("s3 after the loss", site, want, after)
    else:
        problems += control_problems(want, after)
    if central.status() is None:  # raises when lccd exited
        problems.append(f"{label}: {central.name} does not answer /status after the export")
    return problems


def control_problems(want, exp):
    """Content on the lost host's disk: the export still ends (the CU takes the machine
    as down after one connect time-out, cu.remote_connect_timeout) and names every
    record missing="unreadable", with no member but MANIFEST.xml."""
    took, rc, urls, members, text = exp
    if rc != 0:
        return [f"disk after the loss: the export failed after {took:.2f} s ({rc}): {text.strip()[:300]}"]
    given = [u for u in want if urls.get(u, (None,))[0]]
    words = {u: urls[u][1] if u in urls else "(not listed)" for u in want}
    print(f"disk after the loss: export in {took:.2f} s, {len(urls)} records, {len(given)} with content, "
          f"missing words {sorted(set(words.values()))}, {len(members) - 1} members besides MANIFEST.xml", flush=True)
    problems = []
    if given or len(members) != 1:
        problems.append(f"disk after the loss: {len(given)} records still have content ({len(members)} members)")
    odd = [u for u, w in words.items() if w != "unreadable"]
    if odd:
        problems.append(f"disk after the loss: {len(odd)} records not missing=\"unreadable\", "
                        f"e.g. {odd[0]}: {words[odd[0]]}")
    return problems


def main():
    a = args_parse()
    why = missing_ceph()
    if why:
        bedlib.require_namespaces()  # not root / no netns says so first
        print("skipped:", why)
        sys.exit(bedlib.SKIP)

    def body(bed):
        s3host, web = bed.add_host("s3", ADDR["s3"]), bed.add_host("web", ADDR["web"])
        rgw = start_rgw(bed, s3host)
        site = lccnode.slow_site(bed, web, ADDR["web"], WEB_PORT, delay=0.01)[0]
        disk_pair = make_pair(a, bed, "dcentral", "dr1", use_s3=False)
        s3_pair = make_pair(a, bed, "central", "r1", use_s3=True)
        problems = run_pair(a, site, *disk_pair, use_s3=False)  # while the gateway starts
        t0 = time.monotonic()
        wait_rgw(rgw, s3host)
        print(f"the gateway answered {time.monotonic() - t0:.1f} s after the control", flush=True)
        problems += run_pair(a, site, *s3_pair, use_s3=True)
        if problems:
            for n in (*disk_pair, *s3_pair):
                print(f"----- {n.name} -----\n{n.log_tail(15)}", file=sys.stderr)
        return problems
    lccnode.run_scenario("s3_host_loss", body)


if __name__ == "__main__":
    main()
